"""The HTML report's timeline: rows of SVG tracks over the session clock.

Rows, top to bottom: the steady-state window and start-up, the step starts, the NVTX lanes, a
CUDA API lane per host thread (API time per bin, stacked by kind: a launch-bound loop is a wall of
launch time, a sync-bound one of sync time), and the GPU busy share per device with its idle gaps.

Every track is drawn twice where the report has a focus window (`Timeline.focus`, the leading
steady state binned on its own): once over the whole window, once over the focus. The page opens
zoomed on the steady state; the script shows the focus drawing while the view lies inside it and
the whole-window drawing otherwise, so a steady state that is a tenth of the trace keeps its
resolution. Labels (busy share, API time, steps, NVTX names) are recomputed for the visible range.
"""

from __future__ import annotations

import math
from typing import Any

from nsys_diagnose.analyses.budget import primary
from nsys_diagnose.analyses.timeline import host_kinds
from nsys_diagnose.engine.model import (
    Finding,
    HostLane,
    NvtxLane,
    Report,
    RuleResult,
    SteadyWindow,
    Timeline,
)
from nsys_diagnose.report.html_text import clipped, esc, is_number, num, script_json
from nsys_diagnose.units import duration, pct, timestamp

LEGEND_NAMES = 12
COLORS = 10           # .n0 ... .n9 in the stylesheet


class Scale:
    """Session-clock ns -> x in bins of one drawing, the unit of its tracks' viewBoxes."""

    def __init__(self, tl: Timeline):
        self.start, self.bin, self.bins = tl.start_ns, tl.bin_ns, tl.bins

    def x(self, t_ns: int) -> float:
        return min(max((t_ns - self.start) / self.bin, 0.0), float(self.bins))

    def box(self, view: tuple[int, int]) -> str:
        a, b = self.x(view[0]), self.x(view[1])
        return f"{num(a)} 0 {num(max(b - a, 1e-3))} 1"

    def rect(self, start_ns: int, end_ns: int, cls: str, title: str, y: float = 0.0, h: float = 1.0,
             extra: str = "") -> str:
        x0, x1 = self.x(start_ns), self.x(end_ns)
        return (f'<rect x="{num(x0)}" y="{num(y)}" width="{num(max(x1 - x0, 0.0))}" height="{num(h)}" '
                f'class="{cls}"{extra}><title>{esc(title)}</title></rect>')


class Drawing:
    """One binning of the timeline (the whole window, or the focus) and its index in the page."""

    def __init__(self, tl: Timeline, index: int, view: tuple[int, int]):
        self.tl, self.index, self.scale, self.view = tl, index, Scale(tl), view
        self.shown = False
        self.devices = {(t.device_id, t.pid): t for t in tl.devices}
        self.lanes = {(ln.pid, ln.tid, ln.depth): ln for ln in tl.lanes}
        self.host = {(h.pid, h.tid): h for h in tl.host}
        self.steps = {s.pid: s for s in tl.steps}

    def svg(self, body: str, label: str, shown: bool) -> str:
        hidden = "" if shown else ' style="display:none"'
        return (f'<svg class="track" data-r="{self.index}" viewBox="{self.scale.box(self.view)}" '
                f'preserveAspectRatio="none" role="img" aria-label="{esc(label)}"{hidden}>{body}</svg>')


def host_class(kind: str) -> str:
    """The CSS class of a kind of CUDA-call time: k-launch, k-module, ..."""
    return "k-" + kind.split()[0]


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


def stacked_paths(kinds: dict[str, list[int]], bins: int) -> list[tuple[str, str]]:
    """Per kind, in host_kinds() order, the outline of its band stacked on the kinds before it:
    (kind, path). Shares are drawn to the nearest 1 % so that runs of bins merge."""
    below = [0] * bins
    out = []
    for kind in host_kinds():
        values = kinds.get(kind)
        if not values or not any(values):
            continue
        segs, b = [], 0
        while b < bins:
            v = round(values[b] / 10)
            if v == 0:
                b += 1
                continue
            lo = below[b]
            j = b
            while j + 1 < bins and round(values[j + 1] / 10) == v and below[j + 1] == lo:
                j += 1
            segs.append(f"M{b} {num(1 - lo / 100)}V{num(1 - min(100, lo + v) / 100)}H{j + 1}V{num(1 - lo / 100)}Z")
            for k in range(b, j + 1):
                below[k] = min(100, lo + v)
            b = j + 1
        out.append((kind, "".join(segs)))
    return out


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


def steady_title(w: SteadyWindow) -> str:
    method = f", found by {w.method}" if w.method else ""
    return (f"steady state of pid {w.pid}: {timestamp(w.start_ns)} to {timestamp(w.end_ns)} "
            f"({duration(w.end_ns - w.start_ns)}{method})")


def initial_view(report: Report) -> tuple[int, int, int | None]:
    """Where the page opens: the leading steady state (start, end, its window's index), else the whole."""
    tl = report.timeline
    lead = primary(report.steady)
    for i, w in enumerate(tl.steady):
        if lead is not None and w.pid == lead.pid:
            return w.start_ns, w.end_ns, i
    if tl.steady:
        return tl.steady[0].start_ns, tl.steady[0].end_ns, 0
    return tl.start_ns, tl.end_ns, None


def finding_span(f: Finding, report: Report) -> tuple[int, int] | None:
    """The part of the trace a finding is about, to zoom to: its gap or range (evidence start_ns and
    end_ns), a moment (a *_ts_ns) with some context, or the steady state its budget slice is in."""
    ev, tl = f.evidence, report.timeline
    if tl is None:
        return None
    start, end = ev.get("start_ns"), ev.get("end_ns")
    if is_number(start) and is_number(end) and end > start:
        pad = (end - start) // 10
        return int(start) - pad, int(end) + pad
    windows = {w.pid: w for w in tl.steady}
    w = windows.get(ev.get("pid")) if is_number(ev.get("pid")) else None
    moment = next((v for k, v in ev.items() if k.endswith("_ts_ns") and is_number(v)), None)
    if moment is not None:
        half = max(tl.bin_ns * 10, ((w.end_ns - w.start_ns) // 20) if w else 0)
        return int(moment) - half, int(moment) + half
    if w is not None and (f.recoverable_ns is not None or f.claim or "steady" in f.message):
        return w.start_ns, w.end_ns
    return None


# --- rows ------------------------------------------------------------------------------------------

def row(label: str, cls: str, drawings: list[Drawing], body, aria: str, overlay: str = "") -> str:
    """A label cell and a track cell holding one SVG per drawing (only the current one shown)."""
    svgs = "".join(d.svg(body(d), aria, d.shown) for d in drawings)
    return f'{label}<div class="{cls}">{svgs}{overlay}</div>'


def steady_body(w: SteadyWindow, tl: Timeline):
    def body(d: Drawing) -> str:
        out = ""
        if w.startup_ns and w.start_ns > tl.start_ns:
            out += d.scale.rect(max(tl.start_ns, w.start_ns - w.startup_ns), w.start_ns, "startup",
                                f"start-up of pid {w.pid}: {duration(w.startup_ns)} before the steady state", 0.15, 0.7)
        return out + d.scale.rect(w.start_ns, w.end_ns, "steady", steady_title(w), 0.15, 0.7)
    return body


def ticks_path(d: Drawing, pids: list[int], grain: float = 0.001) -> str:
    """Step starts as vertical lines; `grain` (bins): ticks closer than that are drawn once."""
    xs = sorted({round(d.scale.x(t) / grain) * grain for p in pids if p in d.steps for t in d.steps[p].starts_ns})
    return "".join(f"M{num(x)} 0V1" for x in xs)


def steps_body(pid: int):
    def body(d: Drawing) -> str:
        s = d.steps.get(pid)
        if s is None:
            return ""
        thinned = f" (every {s.stride}th drawn)" if s.stride > 1 else ""
        return (f'<path class="tick" d="{ticks_path(d, [pid])}"><title>{s.count:,} step starts of pid {pid}{thinned}'
                "</title></path>")
    return body


def nvtx_body(key: tuple[int, int, int], colors: dict[str, int], names: dict[str, int]):
    def body(d: Drawing) -> str:
        lane = d.lanes.get(key)
        if lane is None:
            return ""
        rects = []
        for s in lane.segments:
            what = (f"{s.name}: {duration(s.end_ns - s.start_ns)} at {timestamp(s.start_ns)}" if s.ranges <= 1 else
                    f"{s.name}: {s.ranges:,} ranges in {duration(s.end_ns - s.start_ns)} from {timestamp(s.start_ns)}"
                    f" ({pct(100 * s.coverage)} covered)")
            k = names.setdefault(s.name, len(names))
            rects.append(d.scale.rect(s.start_ns, s.end_ns, f"n{colors.get(s.name, 0)}", what, 0.08, 0.84,
                                      f' data-k="{k}"'))
        return "".join(rects)
    return body


def host_body(key: tuple[int, int]):
    def body(d: Drawing) -> str:
        lane = d.host.get(key)
        if lane is None:
            return ""
        return "".join(f'<path class="{host_class(k)}" d="{p}"><title>{esc(k)} calls: share of each bin</title></path>'
                       for k, p in stacked_paths(lane.kinds, d.tl.bins))
    return body


def device_body(key: tuple[int, int | None], report: Report, gaps: list[dict[str, Any]], shared: set[int]):
    device_id, pid = key
    pids = sorted({s.pid for s in report.steady if s.device_id == device_id and (pid is None or s.pid == pid)})

    def body(d: Drawing) -> str:
        t = d.devices.get(key)
        out = []
        for w in d.tl.steady:
            if w.pid in pids or (pid is None and not pids):
                out.append(d.scale.rect(w.start_ns, w.end_ns, "steady-bg", steady_title(w)))
        for g in gaps:  # a process's gaps go on its own row when its device is shared
            if g["device_id"] != device_id or (g.get("pid") != pid if pid is not None else device_id in shared):
                continue
            where = " (steady state)" if g.get("in_steady_state") else ""
            what = (f"idle gap of GPU {g['device_id']}, pid {g.get('pid')}: "
                    f"{duration(g['end_ns'] - g['start_ns'])} at {timestamp(g['start_ns'])}{where}")
            out.append(d.scale.rect(g["start_ns"], g["end_ns"], "gap", what))
            out.append(d.scale.rect(g["start_ns"], g["end_ns"], "gapmark", what, 0, 0.07))
        if pids:
            # faint guides behind the busy share: one per bin at most, so that dense steps stay faint
            out.append(f'<path class="tick faint" d="{ticks_path(d, pids, 1.0)}"/>')
        if t is not None:
            out.append(f'<path class="util" d="{util_path(t.util)}"><title>{esc(t.label)}: busy share per bin'
                       "</title></path>")
        return "".join(out)
    return body


def thread_words(pid: int, tid: int, thread: str | None) -> str:
    name = f" {esc(thread)}" if thread else ""
    return f"pid {pid} · tid {tid}{name}"


def lane_label(lane: NvtxLane) -> str:
    if lane.depth:
        return f'<div class="label sub" title="ranges nested {lane.depth} deep">↳ nested ranges</div>'
    return (f'<div class="label" title="NVTX ranges of pid {lane.pid}, thread {lane.tid}">'
            f"<b>NVTX</b> {thread_words(lane.pid, lane.tid, lane.thread)}</div>")


def host_label(i: int, lane: HostLane) -> str:
    return (f'<div class="label" title="CUDA API calls of pid {lane.pid}, thread {lane.tid}{esc(" " + (lane.thread or ""))}: '
            f'{esc(duration(lane.api_ns))} in the whole window; the shares are of the visible range">'
            f'<b>CUDA API</b> {thread_words(lane.pid, lane.tid, lane.thread)}<br><span class="v" data-host="{i}"></span></div>')


# --- the section -----------------------------------------------------------------------------------

def controls(tl: Timeline, lead: int | None) -> str:
    windows = "".join(f'<button type="button" data-zoom="{i}"{" class=on" if i == lead else ""}>'
                      f"steady state, pid {w.pid}</button>" for i, w in enumerate(tl.steady))
    return (f'<div class="controls">{windows}<button type="button" data-zoom="reset">whole window</button>'
            '<button type="button" data-zoom="in">zoom in</button><button type="button" data-zoom="out">zoom out</button>'
            f'<span class="range">{esc(timestamp(tl.start_ns))} to {esc(timestamp(tl.end_ns))}</span></div>'
            '<div class="readout" aria-live="polite"></div>')


def legend(tl: Timeline, colors: dict[str, int]) -> str:
    keys = ['<span><i class="sw busysw"></i>GPU busy share per bin</span>',
            '<span><i class="sw gapsw"></i>idle gap (gpu-idle-gaps)</span>']
    if tl.steady:
        keys += ['<span><i class="sw steadysw"></i>steady state</span>',
                 '<span><i class="sw startupsw"></i>start-up</span>']
    if tl.steps:
        keys.append('<span><i class="sw ticksw"></i>step start</span>')
    used = {k for h in tl.host for k, v in h.kinds.items() if any(v)}
    keys += [f'<span><i class="sw {host_class(k)}"></i>{esc(k)} calls</span>' for k in host_kinds() if k in used]
    keys += [f'<span><i class="sw n{c}"></i>{clipped(n, 40)}</span>' for n, c in list(colors.items())[:LEGEND_NAMES]]
    return f'<div class="legend">{"".join(keys)}</div>'


def notes(tl: Timeline, gaps: list[dict[str, Any]], gap_result: RuleResult | None) -> str:
    res = f"Each bin is {duration(tl.bin_ns)} ({tl.bins:,} bins over the {duration(tl.end_ns - tl.start_ns)} window"
    if tl.focus is not None:
        res += (f"; {duration(tl.focus.bin_ns)} inside the steady state, which is drawn again at that resolution "
                "while the view stays inside it")
    out = [res + ", session clock). Drag across the tracks to zoom; labels follow the visible range."]
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
    if tl.host:
        out.append("CUDA API lanes: the share of each bin the thread spent in CUDA calls, by kind (queries such as "
                   "cuKernelGetName left out). A launch-bound loop shows as launch time with little GPU busy below it.")
    hidden = [f"{tl.hidden_threads:,} more thread(s) with NVTX ranges"] if tl.hidden_threads else []
    hidden += [f"{tl.hidden_host_threads:,} more thread(s) with CUDA API calls"] if tl.hidden_host_threads else []
    if hidden:
        out.append(" and ".join(hidden) + " are not drawn.")
    if not tl.steady:
        out.append("No steady-state window was found (or the database has no steady_state table).")
    return "".join(f'<p class="note">{esc(n)}</p>' for n in out)


def timeline_section(report: Report) -> str:
    tl = report.timeline
    if tl is None:
        why = ("nothing was traced" if report.metrics.span_ns <= 0 else
               "not computed (the report was made without the timeline, e.g. analyze(..., timeline=False))")
        return f'<section id="timeline"><h2>Timeline</h2><p class="note">No timeline: {esc(why)}.</p></section>'
    v0, v1, lead = initial_view(report)
    fine = tl.focus is not None and tl.focus.start_ns <= v0 and v1 <= tl.focus.end_ns
    order = [Drawing(tl, 0, (v0, v1))] + ([Drawing(tl.focus, 1, (v0, v1))] if tl.focus is not None else [])
    order[1 if fine else 0].shown = True
    gaps, gap_result = gap_rows(report)
    colors = name_colors(tl.lanes)
    names: dict[str, int] = {}
    shared = {t.device_id for t in tl.devices if t.pid is not None}
    ticks = "".join(f'<span style="left:{p:.3f}%">{esc(t)}</span>' for p, t in nice_ticks(v0, v1))
    rows = [f'<div class="label"></div><div class="axis">{ticks}</div>']
    for w in tl.steady:
        rows.append(row(f'<div class="label"><b>steady state</b> · pid {w.pid}</div>', "steadyrow", order,
                        steady_body(w, tl), "steady state"))
    for i, s in enumerate(tl.steps):
        rows.append(row(f'<div class="label"><b>steps</b> · pid {s.pid}<br><span class="v" data-steps="{i}"></span></div>',
                        "stepsrow", order, steps_body(s.pid), f"step starts of pid {s.pid}"))
    for lane in tl.lanes:
        rows.append(row(lane_label(lane), "lane nvtx", order, nvtx_body((lane.pid, lane.tid, lane.depth), colors, names),
                        f"NVTX ranges of thread {lane.tid}", '<div class="names"></div>'))
    for i, h in enumerate(tl.host):
        rows.append(row(host_label(i, h), "hostlane", order, host_body((h.pid, h.tid)), f"CUDA API time of thread {h.tid}"))
    for i, t in enumerate(tl.devices):
        sub, cls = (" sub", "device proc") if t.pid is not None else ("", "device")
        name = esc(t.label) if t.pid is not None else f"<b>{esc(t.label)}</b>"
        label = (f'<div class="label{sub}" title="{esc(t.label)}: busy {esc(duration(t.busy_ns))} in the whole window">'
                 f'{name}<br><span class="v" data-dev="{i}"></span></div>')
        rows.append(row(label, cls, order, device_body((t.device_id, t.pid), report, gaps, shared), t.label))
    layer = '<div class="layer"><div class="sel"></div><div class="cursor"></div></div>'
    first = 1 if fine else 0
    data: dict[str, Any]  # a JSON document, grown below for the focus window
    data = {"start": tl.start_ns, "end": tl.end_ns, "view": [v0, v1], "res": [res_data(tl)], "first": first,
            "windows": [[w.start_ns, w.end_ns] for w in tl.steady], "lead": lead,
            "names": sorted(names, key=names.get),
            "devices": [{"label": t.label, "util": [t.util]} for t in tl.devices],
            "host": [{"kinds": {k: [v] for k, v in h.kinds.items() if any(v)}} for h in tl.host],
            "steps": [s.starts_ns for s in tl.steps]}
    if tl.focus is not None:
        f = tl.focus
        data["res"].append(res_data(f))
        fdev = {(t.device_id, t.pid): t for t in f.devices}
        fhost = {(h.pid, h.tid): h for h in f.host}
        for t, dd in zip(tl.devices, data["devices"]):
            dd["util"].append(fdev[(t.device_id, t.pid)].util if (t.device_id, t.pid) in fdev else [0] * f.bins)
        for h, hd in zip(tl.host, data["host"]):
            other = fhost.get((h.pid, h.tid))
            for k, arrays in hd["kinds"].items():
                arrays.append(other.kinds.get(k, [0] * f.bins) if other else [0] * f.bins)
    return (f'<section id="timeline"><h2>Timeline</h2>{controls(tl, lead)}'
            f'<div class="tl" data-r="{first}" data-view="{v0},{v1}">{"".join(rows)}{layer}</div>'
            f"{legend(tl, colors)}{notes(tl, gaps, gap_result)}"
            f'<script type="application/json" id="timeline-data">{script_json(data)}</script></section>')


def res_data(tl: Timeline) -> dict[str, int]:
    return {"start": tl.start_ns, "end": tl.end_ns, "bin": tl.bin_ns, "bins": tl.bins}
