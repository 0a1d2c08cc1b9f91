"""The library entry point: analyze(path) -> Report."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nsys_diagnose import __version__
from nsys_diagnose.analyses import budget as step_budget
from nsys_diagnose.analyses import coverage as capture_coverage
from nsys_diagnose.analyses.metrics import compute, export_info
from nsys_diagnose.engine import claims, fixes
from nsys_diagnose.engine.catalog import check_rules, load_rules
from nsys_diagnose.engine.model import SEVERITY_RANK, Finding, InputInfo, Report, Rule, RuleResult
from nsys_diagnose.engine.params import checked_settings
from nsys_diagnose.engine.runner import rule_timeout_s, run_rules
from nsys_diagnose.errors import DiagnoseError
from nsys_diagnose.headline import headline as compose_headline
from nsys_diagnose.ingest import progress, sql_library
from nsys_diagnose.ingest.cache_files import trusted_folder
from nsys_diagnose.ingest.database import (
    Trace,
    default_cache_dir,
    memory_limit,
    thread_config,
    with_memory_retry,
    with_trace,
)
from nsys_diagnose.ingest.settings import SettingValues
from nsys_diagnose.report_cache import ReportCache, report_key

# The SQL library's tables the report reads beside its rules (the metrics, the step-time budget
# and its claims, the timeline): the ingest runs the modules that make them and those the chosen
# rules name (tests/test_sql_library.py checks that these cover what analyses/ reads).
REPORT_TABLES = frozenset({"budget", "steady_summary", "steady_state", "steps", "nvtx_tree", "trace_window",
                           "export_meta", "graph_launches"})


def tables_read(rules: list[Rule]) -> frozenset[str]:
    """The library's tables and macros a report with these rules reads."""
    return REPORT_TABLES | sql_library.mentioned(
        [r.sql for r in rules] + [" ".join([*r.requires, *r.requires_any]) for r in rules])


def rank(findings: list[Finding]) -> list[Finding]:
    """Most severe first; then those drawn on the steady state's budget, by the time a fix can give
    back; then the others (start-up, whole-trace summaries) by their time at stake; last those whose
    budget slice holds nothing (a final sync: no time to give back)."""
    def group(f: Finding) -> int:
        return 2 if f.recoverable_ns == 0 else 1 if f.recoverable_ns is None else 0
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], group(f),
                                           -(f.recoverable_ns if f.recoverable_ns is not None else f.impact_ns or 0)))


def check_environment() -> None:
    """The NSYS_DIAGNOSE_* settings, checked on every run: a cached report must not hide a typo
    that the same command with --no-cache refuses."""
    memory_limit()
    thread_config()
    rule_timeout_s()


WITHHELD = ("withheld: no GPU activity was captured, so its findings would speak of GPU time the capture "
            "did not record")


def withhold(results: list[RuleResult]) -> list[RuleResult]:
    """A capture without GPU activity: the rules ran, but a finding about GPU idle time, busy share
    or kernels would describe what was not recorded (a DataLoader fix for a GPU that "idles 99 %"
    because its kernels were lost). Their findings are dropped and the rule says why; the rows stay."""
    return [r.model_copy(update={"status": "skipped", "reason": WITHHELD, "findings": []}) if r.findings else r
            for r in results]


def analyze(path: str | os.PathLike, *, rules: dict[str, Rule] | None = None,
            rule_dirs: list[Path] | tuple[Path, ...] = (), overrides: dict[str, dict[str, Any]] | None = None,
            select: list[str] | None = None, use_cache: bool = True, cache_dir: Path | None = None,
            reader: str = "auto", timeline: bool = False, settings: Mapping[str, Any] | None = None,
            unchecked: bool = False) -> Report:
    """The report on one export. `settings`: the analysis's settings this run changes, by name
    (`nsys-diagnose explain settings`), checked as --set checks them. `unchecked`: `rules` were
    loaded with load_rules(check=False); they are checked here unless the report cache answers
    (a repeat run then skips the checks: a tenth of its time)."""
    check_environment()
    settings = checked_settings(settings)
    rules = rules if rules is not None else load_rules(rule_dirs)
    overrides = overrides or {}
    key = None
    use_cache = use_cache and trusted_folder(cache_dir or default_cache_dir())
    if use_cache and Path(path).is_file():  # a repeat run reads its report back (report_cache.py)
        reports = ReportCache(cache_dir or default_cache_dir())
        try:
            key = report_key(Path(path), rules, overrides, select, reader, timeline, cache_dir, settings)
        except (OSError, DiagnoseError):
            pass  # unreadable, not a file, changing: open_trace says why
        if key and (cached := reports.get(key)):
            return cached
    if unchecked:
        check_rules(rules.values())
    # a rule retries on its own (engine.py); this covers the metrics and the timeline
    report = with_trace(path, lambda trace: with_memory_retry(
        trace.con, lambda: report_from_trace(trace, rules, overrides, select, timeline=timeline, settings=settings)),
        use_cache=use_cache, cache_dir=cache_dir, reader=reader, settings=settings,
        tables=tables_read([r for r in rules.values() if not select or r.id in select]))
    if key:
        reports.put(key, report)
    return report


def report_from_trace(trace: Trace, rules: dict[str, Rule], overrides, select, *, timeline: bool = False,
                      settings: SettingValues | None = None) -> Report:
    """timeline=True adds the binned timeline the HTML report draws (analyses/timeline.py).
    `settings`: the run's (checked) settings, those the trace was ingested with."""
    con = trace.con
    chosen = [r for r in rules.values() if not select or r.id in select]
    progress.stage(f"rules (0/{len(chosen)} done)")
    results = run_rules(con, chosen, overrides, trace.captured,
                        on_done=lambda n, r: progress.stage(f"rules ({n}/{len(chosen)} done, last {r.id})"))
    progress.stage("metrics and the step budget")
    metrics = compute(con)
    budget, steady = step_budget.compute(con)
    has_gpu = metrics.kernel_count + metrics.memcpy_count + metrics.memset_count > 0 or bool(
        con.execute(sql_library.query("report_graph_launches")).fetchone()[0])
    coverage = capture_coverage.compute(con, metrics, steady, has_gpu)
    if not has_gpu:
        results = withhold(results)
    findings = rank(claims.apply([f for r in results for f in r.findings], budget, steady, settings))
    lead = step_budget.primary(steady)
    fixes.apply(findings, fixes.read(con), lead)
    origin = export_info(con)
    binned = None
    if timeline:  # the HTML page's alone: imported only then
        from nsys_diagnose.analyses import timeline as timeline_bins

        binned = timeline_bins.compute(con, focus=(lead.start_ns, lead.end_ns) if lead else None)
    given = trace.report or trace.path  # a .nsys-rep is reported as given, not as its export
    return Report(
        tool={"name": "nsys-diagnose", "version": __version__},
        input=InputInfo(path=str(given), size_bytes=given.stat().st_size, reader=trace.reader,
                        from_cache=trace.from_cache, **origin,
                        sqlite_path=str(trace.path) if trace.report and trace.path.exists() else None),
        headline=compose_headline(findings, steady, metrics, coverage, lead=lead), coverage=coverage,
        metrics=metrics, findings=findings, rules=results, budget=budget, steady=steady,
        steady_utilization_pct=lead.busy_pct if lead else None, step_median_ns=lead.step_median_ns if lead else None,
        timeline=binned)
