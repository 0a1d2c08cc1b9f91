"""A Comparison as JSON (the contract), Markdown (terminal and GitHub step summary) or JUnit XML."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path

from nsys_diagnose.compare.comparison import Comparison
from nsys_diagnose.compare.deltas import ItemDelta, MetricDelta
from nsys_diagnose.compare.distribution import Distribution
from nsys_diagnose.compare.verdict import StepComparison
from nsys_diagnose.text import inline
from nsys_diagnose.units import duration, pct

# 2: the effect is the mean step period (effect.metric), with the median and the step distribution beside it
# 4: a change of at least settings.large_effect_pct inside an interval that holds 0, or a pair whose
#    rules could not fully look (before/after.coverage), is inconclusive, not no-change
SCHEMA_VERSION = 4
ITEM_LISTS = {"kernels": ("kernel", "graph"), "transfers": ("transfer",), "apis": ("api",), "nvtx": ("nvtx",)}
JSON_ITEM_LIMIT = 500


def _num(x, digits: int = 3):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    if isinstance(x, float):
        return round(x, digits)
    return x


def _metric(m: MetricDelta) -> dict:
    return {"id": m.id, "label": m.label, "unit": m.unit, "before": _num(m.before), "after": _num(m.after),
            "delta": _num(m.delta), "change_pct": _num(m.change_pct)}


def _item(d: ItemDelta) -> dict:
    return {"kind": d.kind, "name": d.name, "display": d.display, "status": d.status,
            "before_ns": _num(d.before_ns, 1), "after_ns": _num(d.after_ns, 1), "delta_ns": _num(d.delta_ns, 1),
            "change_pct": _num(d.change_pct), "before_count": _num(d.before_count), "after_count": _num(d.after_count),
            "p_value": _num(d.p_value, 6), "before_gpu_ns": _num(d.before_gpu_ns, 1),
            "after_gpu_ns": _num(d.after_gpu_ns, 1)}


def _step_comparison(p: StepComparison) -> dict:
    out = {}
    for k, v in asdict(p).items():
        if isinstance(v, dict):  # a step distribution
            out[k] = {kk: _num(vv) for kk, vv in v.items()}
        else:
            out[k] = _num(v, 6 if k == "p_value" else 3)
    return out


def to_dict(c: Comparison) -> dict:
    effect = None if c.effect is None else _step_comparison(c.effect)
    out = {
        "schema_version": SCHEMA_VERSION,
        "kind": "comparison",
        "tool": c.tool,
        "verdict": c.verdict,
        "summary": c.summary,
        "comparable": c.preflight.comparable,
        "effect": effect,
        "before": asdict(c.before),
        "after": asdict(c.after),
        "preflight": {"comparable": c.preflight.comparable,
                      "similarity": {k: _num(v) for k, v in c.preflight.similarity.items()},
                      "checks": [asdict(x) for x in c.preflight.checks]},
        "settings": asdict(c.settings),
        "scope": c.scope,
        "processes": [_step_comparison(p) for p in c.processes],
        "metrics": {"whole_run": [_metric(m) for m in c.metrics], "steady_state": [_metric(m) for m in c.steady]},
        "devices": [{k: _num(v) for k, v in d.items()} for d in c.devices],
        "process_metrics": [{k: _num(v) for k, v in d.items()} for d in c.process_metrics],
        "drivers": [_item(d) for d in c.drivers],
        "offsets": [_item(d) for d in c.offsets],
        "findings": {k: [asdict(f) for f in v] for k, v in c.findings.items()},
        "notes": c.notes,
    }
    for key, kinds in ITEM_LISTS.items():
        rows = [d for d in c.items if d.kind in kinds]
        out[key] = [_item(d) for d in rows[:JSON_ITEM_LIMIT]]
        out[f"{key}_total"] = len(rows)
    return out


def render_json(c: Comparison, fail_pct: float | None = None) -> str:
    return json.dumps(to_dict(c), indent=2, default=str) + "\n"


# ---- Markdown -------------------------------------------------------------------------------

STATUS_MARK = {"ok": "ok", "caution": "caution", "blocker": "**blocker**", "unknown": "unknown"}
TOP_ITEMS = 12


def _cell(text: object) -> str:
    """One line, no control character (names come from the traced programs), '|' escaped."""
    return inline(text).replace("|", "\\|")


def _value(unit: str, v: float | None) -> str:
    if v is None:
        return "n/a"
    if unit == "ns":
        return duration(v)
    if unit == "pct":
        return pct(v)
    return _count(v)


def _delta(unit: str, m: MetricDelta) -> str:
    if m.delta is None:
        return "n/a"
    if unit == "pct":
        return f"{m.delta:+.1f} pp"
    sign = "+" if m.delta > 0 else "-" if m.delta < 0 else "±"
    text = sign + _value(unit, abs(m.delta))
    return text + (f" ({m.change_pct:+.1f} %)" if m.change_pct is not None else "")


def _metric_table(rows: list[MetricDelta]) -> list[str]:
    out = ["| metric | before | after | change |", "|---|---:|---:|---:|"]
    out += [f"| {m.label} | {_value(m.unit, m.before)} | {_value(m.unit, m.after)} | {_delta(m.unit, m)} |"
            for m in rows]
    return out


def _item_table(rows: list[ItemDelta], label: str, scope: str) -> list[str]:
    count_word = "calls" if label == "API" else "instances"
    gpu = any(d.before_gpu_ns is not None or d.after_gpu_ns is not None for d in rows)
    what = "wall time " if gpu else ""
    out = [f"| status | {label} | {what}before ({scope}) | {what}after ({scope}) | change | "
           f"{count_word} before -> after |" + (" GPU work launched inside, before -> after |" if gpu else ""),
           "|---|---|---:|---:|---:|---:|" + ("---:|" if gpu else "")]
    for d in rows:
        change = d.status if d.change_pct is None else f"{d.change_pct:+.1f} %"
        sign = "+" if d.delta_ns > 0 else "-" if d.delta_ns < 0 else "±"
        line = (f"| {d.status} | `{_cell(d.display)}` | {duration(d.before_ns)} | {duration(d.after_ns)} | "
                f"{sign}{duration(abs(d.delta_ns))} ({change}) | {_count(d.before_count)} -> {_count(d.after_count)} |")
        if gpu:
            line += f" {duration(d.before_gpu_ns or 0)} -> {duration(d.after_gpu_ns or 0)} |"
        out.append(line)
    return out


def _count(x: float) -> str:
    return f"{x:,.0f}" if abs(x - round(x)) < 0.05 else f"{x:,.2g}" if x < 1 else f"{x:,.1f}"


def render_markdown(c: Comparison, fail_pct: float | None = None) -> str:
    head, _, rest = inline(c.summary).partition(": ")
    lines = ["# nsys-diagnose compare", "", f"**{head}** (verdict `{c.verdict}`): {rest}", ""]
    lines += ["| | before | after |", "|---|---|---|",
              f"| export | `{_cell(Path(c.before.path).name)}` | `{_cell(Path(c.after.path).name)}` |",
              f"| nsys | {_cell(c.before.nsys_version or 'n/a')} | {_cell(c.after.nsys_version or 'n/a')} |",
              f"| steps | {_steps_text(c.before.steps)} | {_steps_text(c.after.steps)} |",
              f"| diagnosis | {_cell(c.before.headline)} | {_cell(c.after.headline)} |"]
    if c.before.coverage != "complete" or c.after.coverage != "complete":
        lines.append(f"| coverage | {c.before.coverage} | {c.after.coverage} |")
    lines.append("")
    if fail_pct is not None:
        gate = "FAILED" if c.regression_beyond(fail_pct) else "passed"
        lines += [f"Regression gate (`--fail-on-regression {fail_pct:g}`): **{gate}**.", ""]

    lines += ["## Comparability", ""]
    flagged = [x for x in c.preflight.checks if x.status in ("blocker", "caution")]
    if not flagged:
        lines += ["Same GPUs, driver, Nsight Systems version, traced APIs and program structure.", ""]
    lines += ["| check | status | finding |", "|---|---|---|"]
    lines += [f"| {x.id} | {STATUS_MARK[x.status]} | {_cell(x.message)} |" for x in c.preflight.checks]
    lines.append("")

    if c.processes:
        lines += _step_section(c)

    scope = c.scope
    if c.steady:
        lines += ["## Steady state (per step)", ""] + _metric_table(c.steady) + [""]
    lines += ["## Whole run", ""] + _metric_table(c.metrics) + [""]
    if len(c.devices) > 1 or len(c.process_metrics) > 1:
        lines += ["| device / process | busy before | busy after | utilization before | utilization after |",
                  "|---|---:|---:|---:|---:|"]
        for d in c.devices:
            lines.append(f"| GPU {d['device_id']} {_cell(d['name'] or '')} | {duration(d['before_busy_ns'])} | "
                         f"{duration(d['after_busy_ns'])} | {pct(d['before_utilization_pct'])} | "
                         f"{pct(d['after_utilization_pct'])} |")
        for p in c.process_metrics:
            lines.append(f"| GPU {p['device_id']}, pid {p.get('before_pid', '-')} -> {p.get('after_pid', '-')} | "
                         f"{duration(p.get('before_busy_ns'))} | {duration(p.get('after_busy_ns'))} | "
                         f"{pct(p.get('before_utilization_pct'))} | {pct(p.get('after_utilization_pct'))} |")
        lines.append("")

    for title, kinds, label in (("Kernels and CUDA graphs", ("kernel", "graph"), "kernel"),
                                ("CUDA API (host time)", ("api",), "API"),
                                ("Transfers", ("transfer",), "kind"), ("NVTX ranges", ("nvtx",), "range")):
        rows = [d for d in c.items if d.kind in kinds]
        if not rows:
            continue
        counts = ", ".join(f"{n} {s}" for s, n in _status_counts(rows))
        plural = "" if len(rows) == 1 else "s"
        lines += [f"## {title} ({scope})", "", f"{len(rows)} name{plural}: {counts}. Ranked by the size of the change.",
                  ""]
        lines += _item_table(rows[:TOP_ITEMS], label, scope)
        more = rows[TOP_ITEMS:]
        if more:
            changed = sum(d.status != "same" for d in more)
            lines += ["", f"<details><summary>{len(more)} more ({changed} changed)</summary>", ""]
            lines += _item_table(more[:200], label, scope) + ["", "</details>"]
        lines.append("")

    if c.verdict == "not-comparable":
        lines += ["Steps, kernels and findings of different programs are not compared "
                  "(`--assume-comparable` compares them anyway).", ""]
        return "\n".join(lines + _notes(c))
    lines += ["## Findings", ""]
    fd = c.findings
    hidden = f", {len(fd['hidden'])} not comparable (kernels hidden in CUDA graph replays)" if fd.get("hidden") else ""
    lines.append(f"{len(fd['resolved'])} resolved, {len(fd['new'])} new, {len(fd['persisting'])} in both{hidden}.")
    lines.append("")
    for key, title in (("resolved", "Resolved"), ("new", "New"),
                       ("hidden", "Not comparable (one side's graph replays hide their kernels)")):
        if fd[key]:
            lines += [f"**{title}:**", ""]
            lines += [f"- `{f.rule_id}` ({f.severity}): {_cell(f.message)}" for f in fd[key]] + [""]
    if fd["persisting"]:
        lines += ["<details><summary>In both runs</summary>", ""]
        lines += [f"- `{f.rule_id}`: before: {_cell(f.message)}<br>after: {_cell(f.other_message)}"
                  for f in fd["persisting"]]
        lines += ["", "</details>", ""]
    return "\n".join(lines + _notes(c))


def _step_section(c: Comparison) -> list[str]:
    level = f"{c.settings.confidence * 100:.0f} %"
    lines = ["## Step time (steady state)", "",
             "A step's time is the period between the first GPU operations of consecutive steps (the work the "
             "host launched in each step, by correlation id): the step time on the GPU's timeline, which is the "
             "host's when the host is the bottleneck and not the host's when it queues steps ahead. The mean "
             "step time is the inverse of the throughput; a change of it is called when the "
             f"{level} block-bootstrap interval of its change excludes 0 (blocks of consecutive steps, as "
             f"steps come in bursts) and it moved by at least {c.settings.min_effect_pct:g} %. The median and "
             "the rank test are shown beside it.", "",
             f"| process (before -> after) | step | steps | mean before | mean after | change | {level} CI | "
             "steps/s after / before | median before -> after | rank test p | verdict |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in c.processes:
        ci = "n/a" if p.ci_low_pct is None else f"{p.ci_low_pct:+.1f} % to {p.ci_high_pct:+.1f} %"
        pv = "n/a" if p.p_value is None else ("< 0.001" if p.p_value < 0.001 else f"{p.p_value:.3f}")
        ratio = "n/a" if p.throughput_ratio is None else f"{p.throughput_ratio:.3g}x"
        lines.append(f"| {p.before_pid} -> {p.after_pid} | `{_cell(p.step_name)}` | {p.before_steps} / "
                     f"{p.after_steps} | {duration(p.before_mean_ns)} | {duration(p.after_mean_ns)} | "
                     f"{p.change_pct:+.1f} % | {ci} | {ratio} | {duration(p.before_median_ns)} -> "
                     f"{duration(p.after_median_ns)} ({p.median_change_pct:+.1f} %) | {pv} | {p.verdict} |")
    lines += ["", "Step time distribution:", "",
              "| process | run | steps | mean | p10 | p50 | p90 | max | long steps (over 2x the median) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    notes = []
    for p in c.processes:
        for side, pid, d in (("before", p.before_pid, p.before_distribution), ("after", p.after_pid,
                                                                               p.after_distribution)):
            long = "none" if not d.long_steps else f"{d.long_steps}, {d.long_share_pct:.0f} % of the time"
            lines.append(f"| {pid} | {side} | {d.steps} | {duration(d.mean_ns)} | {duration(d.p10_ns)} | "
                         f"{duration(d.p50_ns)} | {duration(d.p90_ns)} | {duration(d.max_ns)} | {long} |")
            if d.note:
                notes.append(f"- {side.upper()} (pid {pid}): {d.note}.")
    lines.append("")
    return lines + (notes + [""] if notes else [])


def _distribution_text(d: Distribution) -> str:
    return (f"{d.steps} steps: mean {duration(d.mean_ns)}, p10 {duration(d.p10_ns)}, p50 {duration(d.p50_ns)}, "
            f"p90 {duration(d.p90_ns)}, max {duration(d.max_ns)}" + (f"; {d.note}" if d.note else ""))


def _notes(c: Comparison) -> list[str]:
    return ["## Notes", ""] + [f"- {_cell(n)}" for n in c.notes] + [""] if c.notes else []


def _steps_text(steps: list[dict]) -> str:
    timed = [s for s in steps if s["timed"]]
    if not timed:
        return "none found"
    return "; ".join(f"{s['steps']} `{_cell(s['name'][:60])}` ({s['timed']} timed, pid {s['pid']})" for s in timed)


def _status_counts(rows: list[ItemDelta]) -> list[tuple[str, int]]:
    order = ["new", "gone", "hidden", "faster", "slower", "uncertain", "same"]
    return [(s, n) for s in order if (n := sum(d.status == s for d in rows))]


# ---- JUnit ----------------------------------------------------------------------------------

def render_junit(c: Comparison, fail_pct: float | None = None) -> str:
    """Two test cases a CI system can show: the runs are comparable; the step time did not
    regress (beyond --fail-on-regression PCT when given). Undecidable cases are skipped. Text from
    the traces is put on one line without control characters (XML 1.0 has no place for them)."""
    summary = inline(c.summary)
    suite = ET.Element("testsuite", name="nsys-diagnose compare")
    props = ET.SubElement(suite, "properties")
    for name, value in (("verdict", c.verdict), ("before", inline(c.before.path)), ("after", inline(c.after.path)),
                        *_effect_properties(c.effect)):
        if value is not None:
            ET.SubElement(props, "property", name=name, value=value)
    cases = []
    comparable = ET.Element("testcase", classname="nsys-diagnose.compare", name="comparable")
    if not c.preflight.comparable:
        el = ET.SubElement(comparable, "failure", message=inline("; ".join(x.message for x in c.preflight.blockers)),
                           type="not-comparable")
        el.text = "\n".join(f"{x.id}: {inline(x.message)}" for x in c.preflight.checks)
    cases.append(comparable)

    gate = f"beyond {fail_pct:g} %" if fail_pct is not None else "outside the noise"
    step = ET.Element("testcase", classname="nsys-diagnose.compare", name=f"step time: no regression {gate}")
    if c.verdict in ("not-comparable", "inconclusive"):
        ET.SubElement(step, "skipped", message=summary)
    elif c.regression_beyond(fail_pct if fail_pct is not None else -math.inf):
        el = ET.SubElement(step, "failure", message=summary, type="regression")
        el.text = summary
    out = ET.SubElement(step, "system-out")
    out.text = summary
    if c.effect is not None:
        out.text += "".join(f"\n{side} step times: {_distribution_text(d)}" for side, d in
                            (("BEFORE", c.effect.before_distribution), ("AFTER", c.effect.after_distribution)))
    cases.append(step)
    for case in cases:
        suite.append(case)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for x in cases if x.find("failure") is not None)))
    suite.set("skipped", str(sum(1 for x in cases if x.find("skipped") is not None)))
    suite.set("errors", "0")
    root = ET.Element("testsuites", name="nsys-diagnose compare", tests=suite.get("tests"),
                      failures=suite.get("failures"))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _effect_properties(e: StepComparison | None) -> list[tuple[str, str | None]]:
    if e is None:
        return []
    def fmt(x: float | None) -> str | None:
        return None if x is None else f"{x:.3f}"
    out = [("metric", e.metric), ("timeline", e.timeline), ("change_pct", fmt(e.change_pct)),
           ("ci_low_pct", fmt(e.ci_low_pct)), ("ci_high_pct", fmt(e.ci_high_pct)),
           ("before_mean_ns", fmt(e.before_mean_ns)), ("after_mean_ns", fmt(e.after_mean_ns)),
           ("median_change_pct", fmt(e.median_change_pct))]
    for side, d in (("before", e.before_distribution), ("after", e.after_distribution)):
        out += [(f"{side}_{k}", fmt(getattr(d, k))) for k in ("p10_ns", "p50_ns", "p90_ns", "max_ns")]
        out += [(f"{side}_long_steps", str(d.long_steps)), (f"{side}_tail_note", d.note)]
    return out


FORMATS = {"md": render_markdown, "json": render_json, "junit": render_junit}
