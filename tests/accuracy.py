"""docs/accuracy.md, written from the corpus: for each program with a known bottleneck, what it was
built to show and what the report says, right or wrong, and the false positives on the healthy
controls. Never edited by hand: `python -m tests.accuracy` rewrites it, and tests/test_accuracy.py
fails when the committed file differs from what this writes.

Expectations come from the programs, not from the tool: fixtures/exports/corpus.yaml (`cause`,
`healthy`, `verdict`) and the shared H200 README (H200 below); which rules may open a report
for a cause is test_diagnosis's CAUSE_RULES.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml
from nsys_diagnose.analyze import analyze
from nsys_diagnose.engine.model import Report

from .conftest import FIXTURES, H200, ROOT
from .test_diagnosis import CAUSE_RULES, H200_TOP

DOC = ROOT / "docs" / "accuracy.md"
CORPUS = FIXTURES / "exports" / "corpus.yaml"
ENTRIES: list[dict] = yaml.safe_load(CORPUS.read_text()) if CORPUS.exists() else []
HEALTHY_MAX_RECOVERABLE_PCT = 5.0

# The shared H200 exports' verdicts by design (../shared/exports/h200-nsys2025.3/README.md):
# what fills the step of the (device, process) with the most GPU work.
H200_VERDICT = {
    "compute_bf16": "kernel-bound: tensor-core math", "compute_fp32": "kernel-bound: fp32 math",
    "dataloader_bound": "host-bound: host code", "launch_bound": "host-bound",
    "launch_graphs": "kernel-bound: CUDA graph replays", "multiproc": "kernel-bound: fp32 math",
    "transfer_pageable": "copy-bound: Host-to-Device",
}
H200_HEALTHY = {"compute_bf16", "launch_graphs"}


@functools.cache
def report(path: Path) -> Report:
    """One analysis per export per process, shared by every test that reads it."""
    return analyze(path)


def programs() -> list[dict]:
    """Every program with a known bottleneck: name, path, healthy, expected verdict, the rules that
    may open its report (None: a healthy control, no warning)."""
    out = []
    for e in ENTRIES:
        out.append({"name": e["file"].removesuffix(".sqlite"), "path": FIXTURES / "exports" / e["file"],
                    "source": "corpus", "healthy": bool(e.get("healthy")), "verdict": e.get("verdict"),
                    "cause": e["cause"], "rules": None if e.get("healthy") else CAUSE_RULES.get(e["cause"], set())})
    if H200.is_dir():
        for name, rules in sorted(H200_TOP.items()):
            out.append({"name": name, "path": H200 / f"{name}.sqlite", "source": "shared H200",
                        "healthy": name in H200_HEALTHY, "verdict": H200_VERDICT[name],
                        "cause": "healthy" if name in H200_HEALTHY else "see the H200 README", "rules": rules})
    return out


def lead(r: Report):
    return max(r.steady, key=lambda s: (s.busy_ns, s.window_ns), default=None)


def verdict_said(r: Report) -> str:
    s = lead(r)
    if s is None or s.verdict_class is None:
        return "none"
    return f"{s.verdict_class}: {s.verdict_cause}" if s.verdict_cause else s.verdict_class


def verdict_right(expected: str | None, r: Report) -> bool:
    """The class must match; the cause too where the expectation names one."""
    if not expected:
        return False
    s = lead(r)
    cls, _, cause = expected.partition(": ")
    return s is not None and s.verdict_class == cls and (not cause or s.verdict_cause == cause)


def warnings(r: Report) -> list:
    return [f for f in r.findings if f.severity != "info"]


def headline_said(r: Report) -> str:
    if not r.findings:
        return "no finding"
    top = r.findings[0]
    return f"{top.severity} `{top.rule_id}`" if top.severity != "info" else "no warning"


def headline_right(p: dict, r: Report) -> bool:
    if p["rules"] is None:  # a healthy control: no warning at all
        return not warnings(r)
    return bool(r.findings) and r.findings[0].severity == "warning" and r.findings[0].rule_id in p["rules"]


def recoverable_pct(r: Report) -> float | None:
    """Every finding's recoverable time, every severity, over the leading steady state."""
    s = lead(r)
    if s is None or not s.window_ns:
        return None
    return 100.0 * sum(f.recoverable_ns or 0 for f in r.findings) / s.window_ns


def render() -> str:
    rows, healthy = [], []
    right_head = right_verdict = 0
    ps = programs()
    for p in ps:
        r = report(p["path"])
        ok_h, ok_v = headline_right(p, r), verdict_right(p["verdict"], r)
        right_head += ok_h
        right_verdict += ok_v
        expected = "no warning (healthy)" if p["rules"] is None else \
            f"{p['cause']}: " + " or ".join(f"`{x}`" for x in sorted(p["rules"]))
        rows.append(f"| {p['name']} | {p['source']} | {expected} | {headline_said(r)} | {'right' if ok_h else 'WRONG'} "
                    f"| {p['verdict']} | {verdict_said(r)} | {'right' if ok_v else 'WRONG'} |")
        if p["healthy"]:
            share = recoverable_pct(r)
            healthy.append((p, len(warnings(r)), share))
    fps = sum(n for _, n, _ in healthy)
    worst = max((s for _, _, s in healthy if s is not None), default=0.0)
    lines = [
        "# Accuracy on programs with a known bottleneck",
        "",
        "Written by `python -m tests.accuracy` from the reports on every corpus export "
        "(`fixtures/exports/corpus.yaml`) and the shared H200 exports; `tests/test_accuracy.py` fails when this "
        "file differs from what it writes. Never edit it by hand.",
        "",
        "Each program was built to have one bottleneck (or none: the healthy controls). *Expected headline*: the "
        "rules that may open the report for that cause (a warning), or no warning at all for a healthy control. "
        "*Expected verdict*: what fills the step by design ([verdict.md](verdict.md)), its class and, where the "
        "program fixes it, its cause; the report's is its leading steady state's.",
        "",
        f"- Headline right on {right_head} of {len(ps)} programs; verdict right on {right_verdict} of {len(ps)}.",
        f"- Healthy controls: {len(healthy)}; false positives (warnings on them): {fps}; the largest recoverable "
        f"total on one, every severity: {worst:.1f} % of its steady state (the bound: "
        f"{HEALTHY_MAX_RECOVERABLE_PCT:g} %, [recoverable.md](recoverable.md)).",
        "",
        "| program | source | expected headline | report's top finding | | expected verdict | report's verdict | |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Healthy controls",
        "",
        "| program | warnings (false positives) | recoverable, every finding, of the steady state |",
        "|---|---|---|",
        *[f"| {p['name']} | {n} | {'n/a' if s is None else f'{s:.1f} %'} |" for p, n, s in healthy],
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    from .fixture_exports import unpack

    unpack()
    DOC.write_text(render())
    print(f"wrote {DOC}")
