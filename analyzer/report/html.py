"""The HTML report: one self-contained file (inline CSS, SVG and a little script; nothing loaded
from the network) with the timeline, three charts, the findings and the Markdown report's tables.

The timeline comes from `report.timeline` (analyzer/report/timeline.py: bins computed at report
time); the charts, findings, idle gaps and tables come from the report itself, formatted by the
Markdown reporter's cell functions so that both reports print the same numbers with the same units.
Every string from the export is escaped: kernel and NVTX names carry <, >, & and quotes.
"""

from __future__ import annotations

import json
import math
from html import escape
from pathlib import Path
from typing import Any

from nsys_diagnose.analyses.timeline import NvtxLane, SteadyWindow, Timeline, UtilTrack
from nsys_diagnose.engine.model import Finding, Report, RuleResult
from nsys_diagnose.report import markdown
from nsys_diagnose.report.html_assets import CSS, JS
from nsys_diagnose.units import duration, pct, size, timestamp

CHART_ROWS = 10
NAME_CHARS = 200      # longer names are cut in cells; the whole name stays in the tooltip
LEGEND_NAMES = 12
COLORS = 10           # .n0 ... .n9 in the stylesheet
# Control characters from the export (NUL is not even valid HTML) show as spaces.
_CONTROLS = dict.fromkeys([*range(32), *range(127, 160)], " ")


def plain(text: str) -> str:
    return text.translate(_CONTROLS)


def esc(value: Any) -> str:
    """Text for HTML content and quoted attributes: control characters become spaces, then escape."""
    return escape(plain(str(value)), quote=True)


def clipped(text: str, limit: int = NAME_CHARS) -> str:
    """A long name cut for display, with the whole of it as a tooltip."""
    text = plain(text)
    if len(text) <= limit:
        return esc(text)
    return f'<span title="{esc(text)}">{esc(text[: limit - 1])}…</span>'


def num(x: float) -> str:
    """An SVG coordinate (in bins): three decimals are a thousandth of a bin."""
    s = f"{x:.3f}".rstrip("0").rstrip(".")
    return s if s not in ("", "-0") else "0"


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cell(column: str, value: Any) -> tuple[str, str]:
    """(html, css class) of a table cell: the Markdown report's units and number formats; strings whole."""
    if isinstance(value, str) and markdown.cell_format(column) is None:
        return clipped(value), "text"
    text = markdown.cell(column, value)
    cls = "num" if is_number(value) else "text"
    return esc(text), cls


def table(columns: list[str], rows: list[dict[str, Any]], titles: list[str] | None = None) -> str:
    head = "".join(f"<th>{esc(t)}</th>" for t in (titles or [markdown.header(c) for c in columns]))
    body = []
    for row in rows:
        cells = (cell(c, row.get(c)) for c in columns)
        body.append("<tr>" + "".join(f'<td class="{cls}">{html}</td>' for html, cls in cells) + "</tr>")
    return f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


# --- timeline ----------------------------------------------------------------------------------

class Scale:
    """Session-clock ns -> x in bins, the unit of every track's viewBox."""

    def __init__(self, tl: Timeline):
        self.start, self.bin, self.bins = tl.start_ns, tl.bin_ns, tl.bins

    def x(self, t_ns: int) -> float:
        return min(max((t_ns - self.start) / self.bin, 0.0), float(self.bins))

    def rect(self, start_ns: int, end_ns: int, cls: str, title: str, y: float = 0.0, h: float = 1.0) -> str:
        x0, x1 = self.x(start_ns), self.x(end_ns)
        return (f'<rect x="{num(x0)}" y="{num(y)}" width="{num(max(x1 - x0, 0.0))}" height="{num(h)}" class="{cls}">'
                f"<title>{esc(title)}</title></rect>")


def track(scale: Scale, body: str, label: str = "") -> str:
    aria = f' aria-label="{esc(label)}"' if label else ""
    return (f'<svg class="track" viewBox="0 0 {scale.bins} 1" preserveAspectRatio="none" '
            f'role="img"{aria}>{body}</svg>')


def util_path(util: list[int]) -> str:
    """A step outline of the per-bin busy share (y = 1 - share): runs of equal bins are one segment."""
    parts = ["M0 1"]
    i, n = 0, len(util)
    while i < n:
        j = i
        while j + 1 < n and util[j + 1] == util[i]:
            j += 1
        parts.append(f"V{num(1 - util[i] / 1000)}H{j + 1}")
        i = j + 1
    parts.append("V1Z")
    return "".join(parts)


def nice_ticks(start_ns: int, end_ns: int, target: int = 8) -> list[tuple[float, str]]:
    """Axis ticks at round seconds of the session clock: (position 0..100 %, label)."""
    span = end_ns - start_ns
    if span <= 0:
        return []
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    digits = max(0, min(9, -math.floor(math.log10(step / 1e9))))
    t = math.ceil(start_ns / step) * step
    out = []
    while t <= end_ns:
        out.append((100.0 * (t - start_ns) / span, f"{t / 1e9:.{digits}f} s"))
        t += step
    return out


def name_colors(lanes: list[NvtxLane]) -> dict[str, int]:
    """NVTX names by time covered, most first: the top names get distinct colours."""
    total: dict[str, int] = {}
    for lane in lanes:
        for s in lane.segments:
            total[s.name] = total.get(s.name, 0) + (s.end_ns - s.start_ns)
    ranked = sorted(total, key=lambda n: (-total[n], n))
    return {n: i % COLORS for i, n in enumerate(ranked)}


def gap_rows(report: Report) -> tuple[list[dict[str, Any]], RuleResult | None]:
    result = next((r for r in report.rules if r.id == "gpu-idle-gaps"), None)
    if result is None or result.status in ("skipped", "error"):
        return [], result
    rows = [r for r in result.rows if all(is_number(r.get(k)) for k in ("device_id", "start_ns", "end_ns"))]
    return rows, result


def lane_label(lane: NvtxLane) -> str:
    if lane.depth:
        return f'<div class="label sub" title="ranges nested {lane.depth} deep">↳ nested ranges</div>'
    thread = f" {esc(lane.thread)}" if lane.thread else ""
    return (f'<div class="label" title="NVTX ranges of pid {lane.pid}, thread {lane.tid}">'
            f"<b>NVTX</b> pid {lane.pid} · tid {lane.tid}{thread}</div>")


def lane_track(scale: Scale, lane: NvtxLane, colors: dict[str, int]) -> str:
    rects = []
    for s in lane.segments:
        what = (f"{s.name}: {duration(s.end_ns - s.start_ns)} at {timestamp(s.start_ns)}" if s.ranges <= 1 else
                f"{s.name}: {s.ranges:,} ranges in {duration(s.end_ns - s.start_ns)} from {timestamp(s.start_ns)}"
                f" ({pct(100 * s.coverage)} covered)")
        rects.append(scale.rect(s.start_ns, s.end_ns, f"n{colors.get(s.name, 0)}", what, 0.08, 0.84))
    return track(scale, "".join(rects), f"NVTX ranges of thread {lane.tid}")


def steady_title(w: SteadyWindow) -> str:
    method = f", found by {w.method}" if w.method else ""
    return (f"steady state of pid {w.pid}: {timestamp(w.start_ns)} to {timestamp(w.end_ns)} "
            f"({duration(w.end_ns - w.start_ns)}{method})")


def axis_row(tl: Timeline) -> str:
    ticks = "".join(f'<span style="left:{p:.3f}%">{esc(t)}</span>' for p, t in nice_ticks(tl.start_ns, tl.end_ns))
    return f'<div class="label"></div><div class="axis">{ticks}</div>'


def steady_row(scale: Scale, tl: Timeline, w: SteadyWindow) -> str:
    body = ""
    if w.startup_ns and w.start_ns > tl.start_ns:
        body += scale.rect(max(tl.start_ns, w.start_ns - w.startup_ns), w.start_ns, "startup",
                           f"start-up of pid {w.pid}: {duration(w.startup_ns)} before the steady state", 0.15, 0.7)
    body += scale.rect(w.start_ns, w.end_ns, "steady", steady_title(w), 0.15, 0.7)
    return (f'<div class="label"><b>steady state</b> · pid {w.pid}</div>'
            f'<div class="steadyrow">{track(scale, body, "steady state")}</div>')


def device_row(scale: Scale, tl: Timeline, t: UtilTrack, gaps: list[dict[str, Any]], shared: set[int]) -> str:
    """The busy outline over the steady-state window and the idle gaps of this device (or process)."""
    body = []
    for w in tl.steady:
        if t.pid is None or w.pid == t.pid:
            body.append(scale.rect(w.start_ns, w.end_ns, "steady-bg", steady_title(w)))
    for g in gaps:  # a process's gaps go on its own row when its device is shared
        if g["device_id"] != t.device_id or (g.get("pid") != t.pid if t.pid is not None else t.device_id in shared):
            continue
        where = " (steady state)" if g.get("in_steady_state") else ""
        body.append(scale.rect(g["start_ns"], g["end_ns"], "gap",
                               f"idle gap of GPU {g['device_id']}, pid {g.get('pid')}: "
                               f"{duration(g['end_ns'] - g['start_ns'])} at {timestamp(g['start_ns'])}{where}"))
    body.append(f'<path class="util" d="{util_path(t.util)}"><title>{esc(t.label)}: busy share per bin</title></path>')
    share = pct(100.0 * t.busy_ns / max(1, tl.end_ns - tl.start_ns))
    sub, cls = (" sub", "device proc") if t.pid is not None else ("", "device")
    name = esc(t.label) if t.pid is not None else f"<b>{esc(t.label)}</b>"
    return (f'<div class="label{sub}" title="{esc(t.label)}">{name}<br>busy {esc(duration(t.busy_ns))} '
            f'({esc(share)} of the window)</div><div class="{cls}">{track(scale, "".join(body), t.label)}</div>')


def controls(tl: Timeline) -> str:
    windows = "".join(f'<button type="button" data-zoom="{i}">steady state, pid {w.pid}</button>'
                      for i, w in enumerate(tl.steady))
    return ('<div class="controls"><button type="button" data-zoom="in">zoom in</button>'
            '<button type="button" data-zoom="out">zoom out</button>'
            f'<button type="button" data-zoom="reset">whole trace</button>{windows}'
            f'<span class="range">{esc(timestamp(tl.start_ns))} to {esc(timestamp(tl.end_ns))}</span></div>'
            '<div class="readout" aria-live="polite"></div>')


def legend(tl: Timeline, colors: dict[str, int]) -> str:
    keys = ['<span><i class="sw busysw"></i>GPU busy share per bin</span>',
            '<span><i class="sw gapsw"></i>idle gap (gpu-idle-gaps)</span>']
    if tl.steady:
        keys += ['<span><i class="sw steadysw"></i>steady state</span>',
                 '<span><i class="sw startupsw"></i>start-up</span>']
    keys += [f'<span><i class="sw n{c}"></i>{clipped(n, 40)}</span>' for n, c in list(colors.items())[:LEGEND_NAMES]]
    return f'<div class="legend">{"".join(keys)}</div>'


def notes(tl: Timeline, gaps: list[dict[str, Any]], gap_result: RuleResult | None) -> str:
    out = [f"Each bin is {duration(tl.bin_ns)} ({tl.bins:,} bins over the {duration(tl.end_ns - tl.start_ns)} "
           "window, session clock); drag across the tracks to zoom, down to a few bins."]
    if not tl.devices:
        out.append("No GPU work was traced: there is no utilization to draw.")
    if gap_result is not None and gap_result.status not in ("skipped", "error"):
        limit = gaps[0].get("min_gap_ns") if gaps else None
        over = f" over {duration(limit)}" if limit else ""
        out.append(f"Idle gaps marked: the {len(gaps):,} largest of {gap_result.row_count:,}{over}." if gaps
                   else "No idle gaps over the gpu-idle-gaps threshold.")
    elif gap_result is not None:
        out.append(f"Idle gaps not marked: gpu-idle-gaps {gap_result.status} ({gap_result.reason or 'no reason'}).")
    if tl.lanes:
        out.append("NVTX lanes: top-level ranges and the ranges nested in them; a lane with many ranges shows, "
                   "per bin, the name that covers most of it.")
    if tl.hidden_threads:
        out.append(f"{tl.hidden_threads:,} more thread(s) with NVTX ranges are not drawn.")
    if not tl.steady:
        out.append("No steady-state window was found (or the database has no steady_state table).")
    return "".join(f'<p class="note">{esc(n)}</p>' for n in out)


def timeline_section(report: Report) -> str:
    tl = report.timeline
    if tl is None:
        why = ("nothing was traced" if report.metrics.span_ns <= 0 else
               "not computed (the report was made without the timeline, e.g. analyze(..., timeline=False))")
        return f'<section id="timeline"><h2>Timeline</h2><p class="note">No timeline: {esc(why)}.</p></section>'
    scale = Scale(tl)
    gaps, gap_result = gap_rows(report)
    colors = name_colors(tl.lanes)
    shared = {t.device_id for t in tl.devices if t.pid is not None}
    rows = [axis_row(tl)]
    rows += [steady_row(scale, tl, w) for w in tl.steady]
    rows += [lane_label(lane) + f'<div class="lane">{lane_track(scale, lane, colors)}</div>' for lane in tl.lanes]
    rows += [device_row(scale, tl, t, gaps, shared) for t in tl.devices]
    layer = '<div class="layer"><div class="sel"></div><div class="cursor"></div></div>'
    data = {"start": tl.start_ns, "end": tl.end_ns, "bin": tl.bin_ns, "bins": tl.bins,
            "tracks": [{"label": t.label, "util": t.util} for t in tl.devices],
            "windows": [[w.start_ns, w.end_ns] for w in tl.steady]}
    return (f'<section id="timeline"><h2>Timeline</h2>{controls(tl)}<div class="tl">{"".join(rows)}{layer}</div>'
            f"{legend(tl, colors)}{notes(tl, gaps, gap_result)}"
            f'<script type="application/json" id="timeline-data">{script_json(data)}</script></section>')


def script_json(data: Any) -> str:
    """JSON safe inside <script>: no '</script>' or '<!--' can be formed."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# --- charts --------------------------------------------------------------------------------------

def bar_chart(title: str, result: RuleResult | None, label_col: str, share_col: str, values, wide: bool = False) -> str:
    """Horizontal bars of a rule's rows: bar length = the row's share (%), largest first."""
    head = f'<div class="card{" wide" if wide else ""}"><h3>{esc(title)}</h3>'
    if result is None:
        return head + '<p class="note">Rule not run.</p></div>'
    if result.status in ("skipped", "error"):
        return head + f'<p class="note">{esc(result.status)}: {esc(result.reason or "")}</p></div>'
    rows = sorted((r for r in result.rows if is_number(r.get("total_ns"))), key=lambda r: -r["total_ns"])[:CHART_ROWS]
    if not rows:
        return head + '<p class="note">Nothing recorded.</p></div>'
    out = []
    for r in rows:
        label = str(r.get(label_col) or r.get("name") or "")
        share = r.get(share_col) if is_number(r.get(share_col)) else 0.0
        cls = f' class="{esc(r["category"])}"' if isinstance(r.get("category"), str) else ""
        full = str(r.get("name") or label)
        out.append(f'<div class="name" title="{esc(full)}">{esc(label[:NAME_CHARS])}</div>'
                   f'<div class="bar"><i{cls} style="width:{min(100.0, max(0.0, share)):.2f}%"></i></div>'
                   f'<div class="val">{esc(values(r))}</div>')
    more = result.row_count - len(rows)
    tail = f'<p class="note">{more:,} more in the tables below and the JSON report.</p>' if more > 0 else ""
    return head + f'<div class="bars">{"".join(out)}</div>{tail}</div>'


def charts_section(report: Report) -> str:
    by_id = {r.id: r for r in report.rules}
    kernels = bar_chart("Top kernels (share of kernel time)", by_id.get("hot-kernels"), "display_name", "share_pct",
                        lambda r: f"{duration(r['total_ns'])} · {pct(r.get('share_pct'))} · {r.get('instances', 0):,}x",
                        wide=True)
    api = bar_chart("CUDA API host time (share of API time)", by_id.get("cuda-api-overhead"), "api", "share_pct",
                    lambda r: f"{duration(r['total_ns'])} · {pct(r.get('share_pct'))} · {r.get('calls', 0):,} calls")
    transfers = bar_chart("Transfers (share of GPU busy time)", by_id.get("transfer-share"), "kind", "busy_share_pct",
                          lambda r: f"{duration(r['total_ns'])} · {size(r.get('bytes'))} · {r.get('count', 0):,} ops"
                          + (f" · {markdown.cell('bytes_per_s', r['bytes_per_s'])}" if r.get("bytes_per_s") else ""))
    return (f'<section id="charts"><h2>Where the time goes</h2><div class="charts">{kernels}{api}{transfers}</div>'
            "</section>")


# --- findings and tables ---------------------------------------------------------------------------

def finding_item(f: Finding) -> str:
    stake = f'<span class="stake">at stake: {esc(duration(f.impact_ns))}</span>' if f.impact_ns is not None else ""
    evidence = ""
    if f.evidence:
        rows = "".join(f'<tr><th>{esc(k)}</th><td class="{c}">{h}</td></tr>'
                       for k, v in f.evidence.items() for h, c in [evidence_cell(k, v)])
        evidence = f"<details><summary>Evidence</summary><table>{rows}</table></details>"
    return (f'<li class="finding"><div><span class="badge {esc(f.severity)}">{esc(f.severity)}</span>'
            f"<code>{esc(f.rule_id)}</code>{stake}</div><p>{esc(f.message)}</p>"
            f'<p class="fix"><b>Fix:</b> {esc(f.fix.strip())}</p>{evidence}</li>')


def evidence_cell(key: str, value: Any) -> tuple[str, str]:
    if isinstance(value, (dict, list)):
        return esc(json.dumps(value, ensure_ascii=False, default=str)), "text"
    return cell(key, value)


def findings_section(report: Report) -> str:
    if not report.findings:
        return '<section id="findings"><h2>Findings</h2><p>None: no rule fired.</p></section>'
    items = "".join(finding_item(f) for f in report.findings)
    return f'<section id="findings"><h2>Findings</h2><ol class="findings">{items}</ol></section>'


def tables_section(report: Report) -> str:
    m = report.metrics
    out = ['<section id="tables"><h2>Tables</h2>']
    if m.devices:
        out.append("<h3>Devices</h3>" + table(
            ["device_id", "name", "busy_ns", "utilization_pct"],
            [{"device_id": d.device_id, "name": d.name or "unknown", "busy_ns": d.busy_ns,
              "utilization_pct": d.utilization_pct} for d in m.devices],
            ["device", "name", "busy", "utilization"]))
    if len(m.processes) > 1:
        out.append("<h3>Processes</h3>" + table(
            ["pid", "name", "device_id", "busy_ns", "utilization_pct"], [p.model_dump() for p in m.processes],
            ["pid", "name", "device", "busy", "utilization"]))
    status = "".join(f'<tr><td><code>{esc(r.id)}</code></td><td class="status-{esc(r.status)}">{esc(r.status)}</td>'
                     f'<td class="num">{len(r.findings)}</td><td class="text">{esc(r.reason or "")}</td></tr>'
                     for r in report.rules)
    out.append("<h3>Rules</h3><div class=\"tablewrap\"><table><thead><tr><th>rule</th><th>status</th><th>findings</th>"
               f"<th>note</th></tr></thead><tbody>{status}</tbody></table></div>")
    for r in report.rules:
        if not r.rows:
            continue
        cols = r.display or list(r.rows[0])[:8]
        shown = r.rows[:markdown.TABLE_ROWS]
        more = r.row_count - len(shown)
        tail = (f'<p class="note">{more:,} more rows in the JSON report (<code>--format json</code>).</p>'
                if more > 0 else "")
        opened = " open" if r.status == "fired" else ""
        out.append(f"<details{opened}><summary>{esc(r.title)} (<code>{esc(r.id)}</code>): {r.row_count:,} row(s)"
                   f"</summary>{table(cols, shown)}{tail}</details>")
    out.append("</section>")
    return "".join(out)


def header_section(report: Report) -> str:
    m, inp = report.metrics, report.input
    version = (f"nsys {inp.nsys_version} (export schema {inp.export_schema_version or 'n/a'})" if inp.nsys_version
               else "nsys version unknown")
    meta = (f"{version} · trace window {duration(m.span_ns)} · GPU busy {duration(m.gpu_busy_ns)} "
            f"({pct(m.gpu_utilization_pct)} of {len(m.devices)} device(s) x window) · {m.kernel_count:,} kernels · "
            f"{m.memcpy_count:,} memcpys · {m.memset_count:,} memsets · {m.api_count:,} CUDA API calls")
    derived = f'<p class="meta">{esc(markdown.derived_note(inp.derived))}</p>' if inp.derived else ""
    return (f"<header><h1>nsys-diagnose: {esc(Path(inp.path).name)}</h1>"
            f'<p class="headline">{esc(report.headline)}</p><p class="meta">{esc(meta)}</p>{derived}'
            '<nav><a href="#timeline">Timeline</a><a href="#charts">Charts</a><a href="#findings">Findings</a>'
            '<a href="#tables">Tables</a></nav></header>')


def page(title: str, body: str, script: str = "", css: str = "") -> str:
    """A whole document: the stylesheet (plus `css`) and the script inline, nothing to fetch."""
    js = f"<script>{script}</script>" if script else ""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}{css}</style></head><body><main>{body}</main>{js}</body></html>\n")


def render(report: Report) -> str:
    body = (header_section(report) + timeline_section(report) + charts_section(report) + findings_section(report)
            + tables_section(report)
            + f'<footer>{esc(report.tool.get("name", "nsys-diagnose"))} {esc(report.tool.get("version", ""))} · '
              f'{esc(report.input.path)}</footer>')
    return page(f"nsys-diagnose: {Path(report.input.path).name}", body, JS)
