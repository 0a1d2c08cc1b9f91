"""The library entry point: analyze(path) -> Report."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nsys_diagnose.engine.catalog import check_rules, load_rules
from nsys_diagnose.engine.model import Report, Rule
from nsys_diagnose.engine.params import checked_settings
from nsys_diagnose.errors import DiagnoseError
from nsys_diagnose.ingest import environment, sql_library
from nsys_diagnose.ingest.cache_files import trusted_folder
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


def analyze(path: str | os.PathLike, *, rules: dict[str, Rule] | None = None,
            rule_dirs: list[Path] | tuple[Path, ...] = (), overrides: dict[str, dict[str, Any]] | None = None,
            select: list[str] | None = None, use_cache: bool = True, cache_dir: Path | None = None,
            reader: str = "auto", timeline: bool = False, settings: Mapping[str, Any] | None = None,
            unchecked: bool = False) -> Report:
    """The report on one export. `settings`: the analysis's settings this run changes, by name
    (`nsys-diagnose explain settings`), checked as --set checks them. `unchecked`: `rules` were
    loaded with load_rules(check=False); they are checked here unless the report cache answers
    (a repeat run then skips the checks: a tenth of its time)."""
    environment.check()
    settings = checked_settings(settings)
    rules = rules if rules is not None else load_rules(rule_dirs)
    overrides = overrides or {}
    key = None
    use_cache = use_cache and trusted_folder(cache_dir or environment.default_cache_dir())
    if use_cache and Path(path).is_file():  # a repeat run reads its report back (report_cache.py)
        reports = ReportCache(cache_dir or environment.default_cache_dir())
        try:
            key = report_key(Path(path), rules, overrides, select, reader, timeline, cache_dir, settings)
        except (OSError, DiagnoseError):
            pass  # unreadable, not a file, changing: open_trace says why
        if key and (cached := reports.get(key)):
            return cached
    # Only now DuckDB and the analysis: a report cache hit imports neither (a fifth of its time).
    from nsys_diagnose.ingest.database import with_memory_retry, with_trace
    from nsys_diagnose.trace_report import report_from_trace

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
