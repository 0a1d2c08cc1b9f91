"""The Markdown report: what fired first (headline, ranked findings with evidence and fix), then a
compact budget, then the tables of the rules that fired; the rules that passed and their tables
only with verbose=True (`--verbose`; `--tables-dir` writes every rule's rows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nsys_diagnose.engine.model import Report, RuleResult
from nsys_diagnose.ingest.schema import FLAVOURS
from nsys_diagnose.text import markdown as inline  # names from the trace: one sanitizer, text.py
from nsys_diagnose.units import SPECS, duration, pct

TABLE_ROWS = 10


def cell_format(column: str):
    """Unit of a result column, from its name: *_ns durations, *_pct shares, bytes, rates."""
    if column.endswith("bytes_per_s"):
        return SPECS["rate"]
    if column.endswith(("start_ns", "end_ns")) or column in ("ts_ns",):
        return SPECS["ts"]
    if column.endswith("_ns"):
        return SPECS["dur"]
    if column.endswith("_pct"):
        return SPECS["pct"]
    if column == "bytes" or column.endswith("_bytes"):
        return SPECS["bytes"]
    return None


def is_id(column: str) -> bool:
    """Columns that name a thing (a process, thread, device, stream): printed as the trace and the
    report's text print them, 1397, never as a quantity, 1,397."""
    return column in ("pid", "tid", "device", "stream", "context") or column.endswith(("_id", "_pid", "_tid"))


def cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    fmt = cell_format(column)
    if fmt:
        return fmt(value)
    if isinstance(value, float):
        return f"{value:,.3g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value) if is_id(column) else f"{value:,}"
    text = inline(str(value).replace("|", "\\|"))
    return text if len(text) <= 100 else text[:97] + "..."


def header(column: str) -> str:
    """Column title without the unit suffix: the cells carry their units."""
    for suffix in ("_ns", "_pct"):
        if column.endswith(suffix) and not column.endswith("bytes_per_s"):
            return column[: -len(suffix)]
    return column


def headers(columns: list[str]) -> list[str]:
    """Titles, one per column and no two alike: where two differ only by their unit suffix, the
    share is titled as one (recoverable_ns, recoverable_pct: "recoverable share") and the
    duration as one (format, format_ns: "format time")."""
    titles = [header(c) for c in columns]
    titles = [f"{t} share" if c.endswith("_pct") and titles.count(t) > 1 else t for c, t in zip(columns, titles)]
    return [f"{t} time" if c.endswith("_ns") and titles.count(t) > 1 else t for c, t in zip(columns, titles)]


def more_rows(result: RuleResult, shown: int) -> str:
    """Where the rows a table leaves out are, and only what is true: the JSON report keeps the
    first rows_limit of them, --tables-dir writes all."""
    more = result.row_count - shown
    if more <= 0:
        return ""
    held = (f"the JSON report (`--format json`) holds the first {len(result.rows):,}; "
            if shown < len(result.rows) < result.row_count else
            "the JSON report holds them all; " if len(result.rows) == result.row_count else "")
    return f"{more:,} more rows: {held}`--tables-dir DIR` writes all {result.row_count:,} to DIR/{result.id}.csv."


def table(result: RuleResult) -> list[str]:
    if not result.rows:
        return []
    cols = result.display or list(result.rows[0])[:8]
    lines = ["| " + " | ".join(headers(cols)) + " |", "|" + "---|" * len(cols)]
    for row in result.rows[:TABLE_ROWS]:
        lines.append("| " + " | ".join(cell(c, row.get(c)) for c in cols) + " |")
    if note := more_rows(result, min(len(result.rows), TABLE_ROWS)):
        lines.append(f"\n{note}")
    return lines


def derived_note(derived: dict[str, Any]) -> str:
    """A time-window slice of another export: GPU work near its edges may lack its API call."""
    start, end = derived.get("window_start_ns"), derived.get("window_end_ns")
    window = f"a {duration(end - start)} window" if start is not None and end is not None else "a time window"
    origin = f" of {derived['from']}" if derived.get("from") else ""
    cut = (f" {derived['gpu_ops_without_api']:,} of {derived['gpu_ops']:,} GPU operations were launched by an API "
           "call outside the window: they count as GPU work, not towards their API." if derived.get("gpu_ops") else "")
    return f"Derived export: {window}{origin}.{cut}"


STEADY_LINES = 4  # (device, process) steady states shown at the top


def steady_lines(report: Report) -> list[str]:
    """The report's opening: each (device, process)'s steady state and its budget in one line."""
    names = {d.device_id: d.name for d in report.metrics.devices}
    ranked = sorted(report.steady, key=lambda s: -s.busy_ns)
    lines = []
    for s in ranked[:STEADY_LINES]:
        gpu = f"GPU {s.device_id}" + (f" ({inline(names[s.device_id])})" if names.get(s.device_id) else "")
        lines.append(f"- pid {s.pid} on {gpu}: {inline(s.summary)}.")
    if len(ranked) > STEADY_LINES:
        lines.append(f"- {len(ranked) - STEADY_LINES} more in the JSON report (`steady`, `budget`).")
    return lines + [""] if lines else []


COVERAGE_WORDS = {"could-not-look": "Could not look", "partial": "Looked in part"}


def coverage_lines(report: Report) -> list[str]:
    """What the rules could not look at, and how to capture it (analyses/coverage.py)."""
    c = report.coverage
    if c.status == "complete":
        return []
    out = [f"**Coverage: {c.status}.** {COVERAGE_WORDS[c.status]}:", ""]
    for g in c.gaps:  # a gap the headline already states is not said twice
        what = "" if g.message in report.headline else f"{inline(g.message)} "
        out.append(f"- `{g.id}`: {what}To capture it: {inline(g.capture)}")
    return out + [""]


def finding_lines(report: Report) -> list[str]:
    out: list[str] = []
    if not report.findings:
        out.append("None: the rules could not look (coverage above)." if report.coverage.status == "could-not-look"
                   else "None: no rule fired.")
    fixes: dict[str, int] = {}
    for i, f in enumerate(report.findings, 1):
        if f.recoverable_ns is not None:
            stake = f" · recoverable: {duration(f.recoverable_ns)}"
        else:
            stake = f" · at stake: {duration(f.impact_ns)}" if f.impact_ns is not None else ""
        out.append(f"{i}. **{f.severity}** `{f.rule_id}`{stake}: {inline(f.message)}")
        if f.claim:
            out.append(f"   - Budget: {inline(f.claim)}")
        if f.note:
            out.append(f"   - Note: {inline(f.note)}")
        for r in f.related:
            out.append(f"   - Same time, seen by `{r.rule_id}`: {inline(r.message)}")
        fix = f.fix.strip()
        out.append(f"   - Fix: {inline(fix)}" if fix not in fixes else f"   - Fix: as for finding {fixes[fix]}.")
        fixes.setdefault(fix, i)
    return out


def rules_line(report: Report) -> str:
    """What the rules did, in one line: the counts, and what kept a rule from running."""
    by: dict[str, list[RuleResult]] = {}
    for r in report.rules:
        by.setdefault(r.status, []).append(r)
    counts = ", ".join(f"{len(by[s])} {s}" for s in ("fired", "passed", "skipped", "error") if by.get(s))
    why = "; ".join(f"`{r.id}` {r.status}: {cell('reason', r.reason)}" for r in report.rules
                    if r.status in ("skipped", "error"))
    return f"{len(report.rules)} rules: {counts}." + (f" {why}." if why else "")


def render(report: Report, *, verbose: bool = False) -> str:
    """verbose: also the table of every rule's status and the tables of the rules that passed."""
    m = report.metrics
    inp = report.input
    version = (f"nsys {inp.nsys_version} (export schema {inp.export_schema_version or 'n/a'})" if inp.nsys_version
               else f"nsys version unknown ({FLAVOURS.get(inp.schema_flavour or '', 'before 2021.4')})")
    out = [f"# nsys-diagnose: {inline(Path(inp.path).name)}", "", f"**{inline(report.headline)}**", ""]
    out += coverage_lines(report)
    out += ["## Findings", "", *finding_lines(report), "", "## Budget", ""]
    out += steady_lines(report)
    out.append(
        f"{version} · trace window "
        f"{duration(m.span_ns)} · GPU busy {duration(m.gpu_busy_ns)} ({pct(m.gpu_utilization_pct)} of "
        f"{len(m.devices)} device(s) x window) · {m.kernel_count:,} kernels · {m.memcpy_count:,} memcpys · "
        f"{m.memset_count:,} memsets · {m.api_count:,} CUDA API calls")
    if inp.derived:
        out += ["", derived_note(inp.derived)]
    if len(m.devices) > 1 or (verbose and m.devices):
        out += ["", "## Devices", "", "| device | name | busy | utilization |", "|---|---|---|---|"]
        for d in m.devices:
            out.append(f"| {d.device_id} | {inline(d.name or 'unknown')} | {duration(d.busy_ns)} | {pct(d.utilization_pct)} |")
    if len(m.processes) > 1:
        out += ["", "## Processes", "", "| pid | name | device | busy | utilization |", "|---|---|---|---|---|"]
        for p in m.processes:
            out.append(f"| {p.pid} | {cell('name', p.name)} | {p.device_id} | {duration(p.busy_ns)} | {pct(p.utilization_pct)} |")
    out += ["", "## Rules", "", rules_line(report)]
    if verbose:
        out += ["", "| rule | status | findings | note |", "|---|---|---|---|"]
        for result in report.rules:
            out.append(f"| `{result.id}` | {result.status} | {len(result.findings)} | {cell('reason', result.reason)} |")
    else:
        out.append("The rules that passed and their tables: `--verbose`; every rule's rows: `--tables-dir DIR`.")
    for result in report.rules:
        rows = table(result) if verbose or result.status == "fired" else []
        if rows:
            out += ["", f"## {result.title} (`{result.id}`)", "", *rows]
    return "\n".join(out) + "\n"
