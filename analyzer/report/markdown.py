"""The Markdown report: headline, ranked findings with evidence and fix, then the tables."""

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


def cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    fmt = cell_format(column)
    if fmt:
        return fmt(value)
    if isinstance(value, float):
        return f"{value:,.3g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    text = inline(str(value).replace("|", "\\|"))
    return text if len(text) <= 100 else text[:97] + "..."


def header(column: str) -> str:
    """Column title without the unit suffix: the cells carry their units."""
    for suffix in ("_ns", "_pct"):
        if column.endswith(suffix) and not column.endswith("bytes_per_s"):
            return column[: -len(suffix)]
    return column


def table(result: RuleResult) -> list[str]:
    if not result.rows:
        return []
    cols = result.display or list(result.rows[0])[:8]
    lines = ["| " + " | ".join(header(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in result.rows[:TABLE_ROWS]:
        lines.append("| " + " | ".join(cell(c, row.get(c)) for c in cols) + " |")
    more = result.row_count - min(len(result.rows), TABLE_ROWS)
    if more > 0:
        lines.append(f"\n{more:,} more rows in the JSON report (`--format json`).")
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
        lines.append(f"- **Steady state**, pid {s.pid} on {gpu}: {inline(s.summary)}.")
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


def render(report: Report) -> str:
    m = report.metrics
    inp = report.input
    version = (f"nsys {inp.nsys_version} (export schema {inp.export_schema_version or 'n/a'})" if inp.nsys_version
               else f"nsys version unknown ({FLAVOURS.get(inp.schema_flavour or '', 'before 2021.4')})")
    out = [f"# nsys-diagnose: {inline(Path(inp.path).name)}", ""]
    out += steady_lines(report)
    out += [f"**{inline(report.headline)}**", ""]
    out += coverage_lines(report)
    if report.findings and report.findings[0].severity != "info":
        out += [f"Fix: {inline(report.findings[0].fix.strip())}", ""]
    out.append(
        f"{version} · trace window "
        f"{duration(m.span_ns)} · GPU busy {duration(m.gpu_busy_ns)} ({pct(m.gpu_utilization_pct)} of "
        f"{len(m.devices)} device(s) x window) · {m.kernel_count:,} kernels · {m.memcpy_count:,} memcpys · "
        f"{m.memset_count:,} memsets · {m.api_count:,} CUDA API calls")
    if inp.derived:
        out += ["", derived_note(inp.derived)]
    out += ["", "## Findings", ""]
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
    if m.devices:
        out += ["", "## Devices", "", "| device | name | busy | utilization |", "|---|---|---|---|"]
        for d in m.devices:
            out.append(f"| {d.device_id} | {inline(d.name or 'unknown')} | {duration(d.busy_ns)} | {pct(d.utilization_pct)} |")
    if len(m.processes) > 1:
        out += ["", "## Processes", "", "| pid | name | device | busy | utilization |", "|---|---|---|---|---|"]
        for p in m.processes:
            out.append(f"| {p.pid} | {cell('name', p.name)} | {p.device_id} | {duration(p.busy_ns)} | {pct(p.utilization_pct)} |")
    out += ["", "## Rules", "", "| rule | status | findings | note |", "|---|---|---|---|"]
    for result in report.rules:
        out.append(f"| `{result.id}` | {result.status} | {len(result.findings)} | {cell('reason', result.reason)} |")
    for result in report.rules:
        rows = table(result)
        if rows:
            out += ["", f"## {result.title} (`{result.id}`)", "", *rows]
    return "\n".join(out) + "\n"
