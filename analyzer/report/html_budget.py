"""The HTML report's opening: the steady state of each (device, process) and its time budget.

Per (device, process): the verdict (what fills the step: kernel-bound, copy-bound, host-bound,
mixed; docs/verdict.md), the step figures, one stacked
bar of the window (GPU time by class, solid; idle time by the host cause that kept the GPU
waiting, striped) and the table of its slices with where the host was (the NVTX range). The slices
come from `report.budget` and add up to the window (ingest/sql/budget.sql).
"""

from __future__ import annotations

from nsys_diagnose.analyses.budget import cause_words
from nsys_diagnose.engine.model import BudgetRow, Report, SteadyState
from nsys_diagnose.report.html_text import esc
from nsys_diagnose.units import duration, pct, timestamp

TABLE_SLICES = 12     # slices listed per (device, process); the rest summed in one line
CARDS = 8             # (device, process) steady states drawn; the rest listed by their summary line
BAR_MIN_PCT = 0.3     # thinner slices are not drawn in the bar (they stay in the table)

# CSS classes (.b-*) of the slices: GPU classes in greens and teals, idle causes in the colours
# of the CUDA API kinds on the timeline where they are one (launch, sync, copy, allocation).
SLICE_CLASS = {
    ("gpu", "tensor-core math"): "b-tc", ("gpu", "fp32 math"): "b-fp32", ("gpu", "fp64 math"): "b-fp64",
    ("gpu", "matrix math"): "b-mm", ("gpu", "elementwise/reduction"): "b-ew",
    ("gpu", "other kernels"): "b-ok", ("gpu", "CUDA graph replays"): "b-graph", ("gpu", "communication"): "b-comm",
    ("gpu", "copies"): "b-copies", ("gpu", "memsets"): "b-memsets",
    ("idle", "launch"): "b-launch", ("idle", "sync"): "b-sync", ("idle", "copy"): "b-copy",
    ("idle", "allocation"): "b-alloc", ("idle", "module loading"): "b-module", ("idle", "other CUDA calls"): "b-api",
    ("idle", "host code"): "b-host", ("idle", "untraced host code"): "b-untraced", ("idle", "OS wait"): "b-os",
    ("idle", "dispatch"): "b-dispatch", ("idle", "no GPU work queued"): "b-noqueue",
    ("idle", "other processes"): "b-procs", ("idle", "step churn"): "b-churn",
}


def slice_class(b: BudgetRow) -> str:
    return SLICE_CLASS.get((b.kind, b.cause), "b-gpu" if b.kind == "gpu" else "b-idle")


def slice_name(b: BudgetRow) -> str:
    return cause_words(b.kind, b.cause)


# idle causes with no host thread behind them: no NVTX range to name
NO_PLACE = {"dispatch", "no GPU work queued", "other processes"}


def where(b: BudgetRow) -> str:
    if b.place:
        return b.place
    return "outside NVTX ranges" if b.kind == "idle" and b.cause not in NO_PLACE else ""


def bar(rows: list[BudgetRow]) -> str:
    parts = []
    for b in rows:
        if b.pct < BAR_MIN_PCT:
            continue
        where = f' in "{b.place}"' if b.place else ""
        parts.append(f'<i class="{slice_class(b)}{" idle" if b.kind == "idle" else ""}" style="width:{b.pct:.2f}%" '
                     f'title="{esc(slice_name(b))}{esc(where)}: {esc(duration(b.ns))} ({esc(pct(b.pct))})"></i>')
    return f'<div class="budgetbar" role="img" aria-label="step-time budget">{"".join(parts)}</div>'


def slices_table(s: SteadyState, rows: list[BudgetRow]) -> str:
    shown, rest = rows[:TABLE_SLICES], rows[TABLE_SLICES:]
    per_step = bool(s.steps)
    body = []
    for b in shown:
        step = f'<td class="num">{esc(duration(b.ns / s.steps))}</td>' if per_step else ""
        body.append(f'<tr><td><i class="sw {slice_class(b)}{" idle" if b.kind == "idle" else ""}"></i>'
                    f'{esc(slice_name(b))}</td><td class="text">{esc(where(b))}</td>'
                    f'<td class="num">{esc(duration(b.ns))}</td><td class="num">{esc(pct(b.pct))}</td>{step}</tr>')
    if rest:
        ns, share = sum(b.ns for b in rest), sum(b.pct for b in rest)
        step = f'<td class="num">{esc(duration(ns / s.steps))}</td>' if per_step else ""
        body.append(f'<tr class="rest"><td>{len(rest)} smaller slices</td><td></td><td class="num">{esc(duration(ns))}'
                    f'</td><td class="num">{esc(pct(share))}</td>{step}</tr>')
    head = "<th>slice</th><th>where (NVTX range)</th><th>time</th><th>of the steady state</th>"
    head += "<th>per step</th>" if per_step else ""
    return (f'<div class="tablewrap"><table class="slices"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def figures(s: SteadyState) -> str:
    items = [("steady state", f"{duration(s.window_ns)}"),
             ("GPU busy", f"{pct(s.busy_pct)}"),
             ("steps", f"{s.steps:,}" if s.steps else "n/a"),
             ("step median", duration(s.step_median_ns) if s.step_median_ns else "n/a")]
    if s.step_mean_ns:
        items.append(("step mean", duration(s.step_mean_ns)))
    return "".join(f'<div class="fig"><span>{esc(k)}</span><b>{esc(v)}</b></div>' for k, v in items)


def card(s: SteadyState, rows: list[BudgetRow], gpu: str, index: int | None) -> str:
    method = f", found by {s.method}" if s.method else ""
    zoom = (f' · <a href="#t={s.start_ns / 1e9:.9f},{s.end_ns / 1e9:.9f}" data-window="{index}">show on timeline</a>'
            if index is not None else "")
    # the verdict as every renderer says it (analyses/budget.verdict), its class as the badge
    cls = s.verdict_class or s.bound
    said = (s.verdict or "").split(": ", 1)[-1]
    return (f'<div class="steady-card"><div class="verdict"><span class="bound {esc(cls)}">{esc(cls)}</span>'
            f"<b>pid {s.pid} on {esc(gpu)}</b> <span class=\"note\">{esc(said)}</span></div>"
            f'<div class="figs">{figures(s)}</div>{bar(rows)}'
            f'<p class="note">{esc(timestamp(s.start_ns))} to {esc(timestamp(s.end_ns))}{esc(method)}{zoom}</p>'
            f"{slices_table(s, rows)}</div>")


def budget_section(report: Report) -> str:
    if not report.steady:
        why = ("no GPU work in a steady state" if report.metrics.gpu_busy_ns else "no GPU work was traced")
        return (f'<section id="budget"><h2>Steady state</h2><p class="note">No step-time budget: {esc(why)}.</p>'
                "</section>")
    names = {d.device_id: d.name for d in report.metrics.devices}
    windows = {w.pid: i for i, w in enumerate(report.timeline.steady)} if report.timeline else {}
    ranked = sorted(report.steady, key=lambda s: (-s.busy_ns, -s.window_ns, s.device_id, s.pid))
    cards = []
    for s in ranked[:CARDS]:
        rows = [b for b in report.budget if b.device_id == s.device_id and b.pid == s.pid]
        gpu = f"GPU {s.device_id}" + (f" ({names[s.device_id]})" if names.get(s.device_id) else "")
        cards.append(card(s, rows, gpu, windows.get(s.pid)))
    more = ""
    if len(ranked) > CARDS:
        more = "<ul>" + "".join(f"<li>pid {s.pid}, GPU {s.device_id}: {esc(s.summary)}</li>" for s in ranked[CARDS:]) + "</ul>"
    return (f'<section id="budget"><h2>Steady state and its time budget</h2>'
            '<p class="note">Each nanosecond of the steady state counted once: GPU time by class (solid), GPU idle '
            "time by what the host was doing meanwhile (striped). The slices add up to the window.</p>"
            f'{"".join(cards)}{more}</section>')
