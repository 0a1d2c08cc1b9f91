"""A Comparison as JSON (the contract), Markdown (terminal and GitHub step summary) or JUnit XML."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path

from nsys_diagnose.compare.comparison import Comparison
from nsys_diagnose.compare.deltas import ItemDelta, MetricDelta
from nsys_diagnose.units import duration, pct

SCHEMA_VERSION = 1
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


def to_dict(c: Comparison) -> dict:
    effect = None
    if c.effect is not None:
        effect = {k: _num(v, 6 if k == "p_value" else 3) for k, v in asdict(c.effect).items()}
        effect["metric"] = "median_step_ns"
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
        "processes": [{k: _num(v, 6 if k == "p_value" else 3) for k, v in asdict(p).items()} for p in c.processes],
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
    return str(text).replace("|", "\\|").replace("\n", " ")


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
    head, _, rest = c.summary.partition(": ")
    lines = ["# nsys-diagnose compare", "", f"**{head}** (verdict `{c.verdict}`): {rest}", ""]
    lines += ["| | before | after |", "|---|---|---|",
              f"| export | `{_cell(Path(c.before.path).name)}` | `{_cell(Path(c.after.path).name)}` |",
              f"| nsys | {c.before.nsys_version or 'n/a'} | {c.after.nsys_version or 'n/a'} |",
              f"| steps | {_steps_text(c.before.steps)} | {_steps_text(c.after.steps)} |",
              f"| diagnosis | {_cell(c.before.headline)} | {_cell(c.after.headline)} |", ""]
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
        lines += ["## Step time (steady state)", "",
                  f"A step's time runs from one step's completion (host moved on and its GPU work done) to the "
                  f"next. A change is called when the {c.settings.confidence * 100:.0f} % bootstrap interval of "
                  f"the median's change excludes 0, the Mann-Whitney test gives p < {c.settings.alpha:g}, and the "
                  f"median moved by at least {c.settings.min_effect_pct:g} %.", "",
                  "| process (before -> after) | step | steps | median before | median after | change | "
                  f"{c.settings.confidence * 100:.0f} % CI | p | verdict |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for p in c.processes:
            ci = "n/a" if p.ci_low_pct is None else f"{p.ci_low_pct:+.1f} % to {p.ci_high_pct:+.1f} %"
            pv = "n/a" if p.p_value is None else ("< 0.001" if p.p_value < 0.001 else f"{p.p_value:.3f}")
            lines.append(f"| {p.before_pid} -> {p.after_pid} | `{_cell(p.step_name)}` | {p.before_steps} / "
                         f"{p.after_steps} | {duration(p.before_median_ns)} ± {duration(p.before_mad_ns)} | "
                         f"{duration(p.after_median_ns)} ± {duration(p.after_mad_ns)} | {p.change_pct:+.1f} % | "
                         f"{ci} | "
                         f"{pv} | {p.verdict} |")
        lines += ["", "± is the median absolute deviation of the step times.", ""]

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
        rest = rows[TOP_ITEMS:]
        if rest:
            changed = sum(d.status != "same" for d in rest)
            lines += ["", f"<details><summary>{len(rest)} more ({changed} changed)</summary>", ""]
            lines += _item_table(rest[:200], label, scope) + ["", "</details>"]
        lines.append("")

    if c.verdict == "not-comparable":
        lines += ["Steps, kernels and findings of different programs are not compared "
                  "(`--assume-comparable` compares them anyway).", ""]
        return "\n".join(lines + _notes(c))
    lines += ["## Findings", ""]
    fd = c.findings
    lines.append(f"{len(fd['resolved'])} resolved, {len(fd['new'])} new, {len(fd['persisting'])} in both.")
    lines.append("")
    for key, title in (("resolved", "Resolved"), ("new", "New")):
        if fd[key]:
            lines += [f"**{title}:**", ""]
            lines += [f"- `{f.rule_id}` ({f.severity}): {_cell(f.message)}" for f in fd[key]] + [""]
    if fd["persisting"]:
        lines += ["<details><summary>In both runs</summary>", ""]
        lines += [f"- `{f.rule_id}`: before: {_cell(f.message)}<br>after: {_cell(f.other_message)}"
                  for f in fd["persisting"]]
        lines += ["", "</details>", ""]
    return "\n".join(lines + _notes(c))


def _notes(c: Comparison) -> list[str]:
    return ["## Notes", ""] + [f"- {_cell(n)}" for n in c.notes] + [""] if c.notes else []


def _steps_text(steps: list[dict]) -> str:
    timed = [s for s in steps if s["timed"]]
    if not timed:
        return "none found"
    return "; ".join(f"{s['steps']} `{_cell(s['name'][:60])}` ({s['timed']} timed, pid {s['pid']})" for s in timed)


def _status_counts(rows: list[ItemDelta]) -> list[tuple[str, int]]:
    order = ["new", "gone", "faster", "slower", "uncertain", "same"]
    return [(s, n) for s in order if (n := sum(d.status == s for d in rows))]


# ---- JUnit ----------------------------------------------------------------------------------

def render_junit(c: Comparison, fail_pct: float | None = None) -> str:
    """Two test cases a CI system can show: the runs are comparable; the step time did not
    regress (beyond --fail-on-regression PCT when given). Undecidable cases are skipped."""
    suite = ET.Element("testsuite", name="nsys-diagnose compare")
    props = ET.SubElement(suite, "properties")
    for name, value in (("verdict", c.verdict), ("before", c.before.path), ("after", c.after.path),
                        ("change_pct", None if c.effect is None else f"{c.effect.change_pct:.3f}")):
        if value is not None:
            ET.SubElement(props, "property", name=name, value=value)
    cases = []
    comparable = ET.Element("testcase", classname="nsys-diagnose.compare", name="comparable")
    if not c.preflight.comparable:
        el = ET.SubElement(comparable, "failure", message="; ".join(x.message for x in c.preflight.blockers),
                           type="not-comparable")
        el.text = "\n".join(f"{x.id}: {x.message}" for x in c.preflight.checks)
    cases.append(comparable)

    gate = f"beyond {fail_pct:g} %" if fail_pct is not None else "outside the noise"
    step = ET.Element("testcase", classname="nsys-diagnose.compare", name=f"step time: no regression {gate}")
    if c.verdict in ("not-comparable", "inconclusive"):
        ET.SubElement(step, "skipped", message=c.summary)
    elif c.regression_beyond(fail_pct if fail_pct is not None else -math.inf):
        el = ET.SubElement(step, "failure", message=c.summary, type="regression")
        el.text = c.summary
    out = ET.SubElement(step, "system-out")
    out.text = c.summary
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


FORMATS = {"md": render_markdown, "json": render_json, "junit": render_junit}
