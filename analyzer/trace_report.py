"""The report on an opened trace: every chosen rule, the metrics, the step budget and its
claims, the ranking, the headline (analyze.py adds the report cache around it)."""

from __future__ import annotations

from nsys_diagnose import __version__
from nsys_diagnose.analyses import budget as step_budget
from nsys_diagnose.analyses import coverage as capture_coverage
from nsys_diagnose.analyses.metrics import compute, export_info
from nsys_diagnose.engine import claims, fixes
from nsys_diagnose.engine.model import SEVERITY_RANK, Finding, InputInfo, Report, Rule, RuleResult
from nsys_diagnose.engine.runner import run_rules
from nsys_diagnose.headline import headline as compose_headline
from nsys_diagnose.ingest import progress, sql_library
from nsys_diagnose.ingest.database import Trace
from nsys_diagnose.ingest.settings import SettingValues


def rank(findings: list[Finding]) -> list[Finding]:
    """Most severe first; then those drawn on the steady state's budget, by the time a fix can give
    back; then the others (start-up, whole-trace summaries) by their time at stake; last those whose
    budget slice holds nothing (a final sync: no time to give back)."""
    def group(f: Finding) -> int:
        return 2 if f.recoverable_ns == 0 else 1 if f.recoverable_ns is None else 0
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], group(f),
                                           -(f.recoverable_ns if f.recoverable_ns is not None else f.impact_ns or 0)))


WITHHELD = ("withheld: no GPU activity was captured, so its findings would speak of GPU time the capture "
            "did not record")


def withhold(results: list[RuleResult]) -> list[RuleResult]:
    """A capture without GPU activity: the rules ran, but a finding about GPU idle time, busy share
    or kernels would describe what was not recorded (a DataLoader fix for a GPU that "idles 99 %"
    because its kernels were lost). Their findings are dropped and the rule says why; the rows stay."""
    return [r.model_copy(update={"status": "skipped", "reason": WITHHELD, "findings": []}) if r.findings else r
            for r in results]


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
    coverage = capture_coverage.compute(con, metrics, steady, has_gpu, settings)
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
