"""The numbers a user acts on, on every program with a known bottleneck (issue 37): the verdict
names what fills the step, the healthy controls show (almost) nothing recoverable, no fix shown is
one the trace rules out, and docs/accuracy.md says what the reports say. Each export is analyzed
once per process (accuracy.report)."""

from __future__ import annotations

import re

import pytest
from nsys_diagnose.engine import claims, fixes
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.model import BudgetRow, Claim, Finding, FindingSpec, SteadyState
from nsys_diagnose.ingest.database import open_trace

from . import accuracy
from .conftest import FIXTURES, H200, PUBLIC

PROGRAMS = accuracy.programs()
EXPORTS = sorted([*H200.glob("*.sqlite"), *PUBLIC.glob("*.sqlite"), *(FIXTURES / "exports").glob("*.sqlite")])


def test_every_corpus_program_has_an_expected_verdict():
    missing = [e["file"] for e in accuracy.ENTRIES if not e.get("verdict")]
    assert not missing, f"add `verdict:` (docs/verdict.md) to these corpus.yaml entries: {missing}"
    for e in accuracy.ENTRIES:
        cls = e["verdict"].partition(": ")[0]
        assert cls in ("kernel-bound", "copy-bound", "host-bound", "mixed"), e["file"]


@pytest.mark.parametrize("p", PROGRAMS, ids=lambda p: p["name"])
def test_the_verdict_names_what_fills_the_step(p):
    r = accuracy.report(p["path"])
    assert accuracy.verdict_right(p["verdict"], r), (p["verdict"], accuracy.verdict_said(r))
    lead = accuracy.lead(r)
    # one sentence, said the same way wherever the verdict is shown
    assert lead.verdict.startswith(lead.verdict_class + ":") and lead.summary.startswith(lead.verdict)


@pytest.mark.parametrize("p", [p for p in PROGRAMS if p["healthy"]], ids=lambda p: p["name"])
def test_healthy_controls_show_little_recoverable_time(p):
    r = accuracy.report(p["path"])
    share = accuracy.recoverable_pct(r)
    assert share is not None and share < accuracy.HEALTHY_MAX_RECOVERABLE_PCT, [
        (f.rule_id, f.recoverable_ns) for f in r.findings if f.recoverable_ns]


LAUNCH_OR_SYNC_ADVICE = re.compile(r"capture the step in a CUDA Graph|Launch fewer pieces of work|"
                                   r"Remove per-step synchronizations|Drop per-step synchronizations", re.I)
KERNEL_ADVICE = re.compile(r"speed up the kernels|Shorten the GPU work", re.I)


def _static_prefix(text: str) -> str:
    """The part of an advice text before its first {field}, whitespace folded: what any rendering shows."""
    return " ".join(text.split("{")[0].split())[:60]


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_no_fix_contradicts_the_verdict_or_the_trace(path):
    r = accuracy.report(path)
    lead = accuracy.lead(r)
    fixes = " ".join(f.fix for f in r.findings)
    if lead is not None and lead.verdict_class in ("kernel-bound", "copy-bound") and lead.busy_pct >= 95:
        assert not LAUNCH_OR_SYNC_ADVICE.search(fixes), "launch or sync advice on a GPU busy over 95 %"
    if lead is not None and lead.verdict_class == "copy-bound":
        assert not KERNEL_ADVICE.search(fixes), "kernel advice on a copy-bound step"
    # the general check: no advice part that recommends a fix the trace rules out for the
    # finding's process (fix_facts) is shown
    trace = open_trace(path)
    try:
        facts = trace.con.execute("SELECT pid, device_id, fix FROM fix_facts").fetchall()
    finally:
        trace.close()
    rules = load_rules([])
    for f in r.findings:
        pid = f.evidence.get("pid", lead.pid if lead else None)
        ruled_out = {fix for p, d, fix in facts if p == pid and f.evidence.get("device_id", d) == d}
        for part in rules[f.rule_id].advice:
            if set(part.fixes) & ruled_out and len(_static_prefix(part.text)) >= 20:
                assert _static_prefix(part.text) not in " ".join(f.fix.split()), (f.rule_id, part.fixes)


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_no_share_passes_100_pct(path):
    """Every `*_pct` a rule reports is a share of a whole: of busy time, a window, a step. Summed
    durations of work that runs side by side (streams, copy engines, ranges open on several
    threads) are above the time they take, and a share of them must be taken of the larger sum;
    each rule's rows and each finding's evidence on every export say so."""
    r = accuracy.report(path)
    over = sorted({(rule.id, key, value) for rule in r.rules
                   for row in [*rule.rows, *(f.evidence for f in rule.findings)]
                   for key, value in row.items()
                   if key.endswith("_pct") and isinstance(value, int | float) and value > 100.005})
    assert not over, over


# corpus.yaml's already_done words for the fixes fix_facts can show done from kernels and replays
# (copies are left out: a program's few incidental pinned copies are not a choice its author lists)
DONE_WORDS = {"cuda-graphs": "cuda-graphs", "mixed-precision": "mixed-precision",
              "fused-optimizer": "fused-optimizer", "kernel-fusion": "torch-compile"}
FAST_FORMATS = {"tf32", "bf16", "fp16", "fp8"}  # corpus.yaml's already_done words for the format a program uses


@pytest.mark.parametrize("entry", accuracy.ENTRIES, ids=lambda e: e["file"])
def test_what_the_trace_shows_done_is_what_the_program_does(entry):
    """A fix is taken for done only where the program does it: a false 'done' would hide advice."""
    trace = open_trace(FIXTURES / "exports" / entry["file"])
    try:
        done = {fix for (fix,) in trace.con.execute("SELECT DISTINCT fix FROM fix_facts WHERE state = 'done'").fetchall()}
    finally:
        trace.close()
    said = set(entry.get("already_done") or [])
    if said & FAST_FORMATS:  # the program computes in a tensor-core format: the mixed-precision fix is done
        said.add("mixed-precision")
    claimed = {DONE_WORDS[f] for f in done if f in DONE_WORDS}
    assert claimed <= said, claimed - said


def test_accuracy_doc_is_written_by_the_corpus():
    if not H200.is_dir():
        pytest.skip("../shared exports not present: docs/accuracy.md covers them too")
    assert accuracy.DOC.read_text() == accuracy.render(), \
        "docs/accuracy.md is out of date: regenerate it with `python -m tests.accuracy`"


# The engine's rules for recoverable time and fix checks, on findings built by hand.


def _steady(bound="gpu-bound", busy=99.0):
    return SteadyState(device_id=0, pid=7, start_ns=0, end_ns=1000, window_ns=1000, busy_ns=int(10 * busy),
                       busy_pct=busy, idle_ns=1000 - int(10 * busy), bound=bound, summary="")


def _finding(rule, claim, impact, estimate, severity="warning"):
    return Finding(rule_id=rule, severity=severity, message=rule, fix="", impact_ns=impact,
                   evidence={"pid": 7, "device_id": 0}, claims=claim, estimate_ns=estimate)


def test_gpu_time_is_recoverable_only_where_a_rule_bounds_it():
    gpu = Claim(kind="gpu", causes=["tensor-core math"])
    spec = FindingSpec(when="true", message="m", claims=gpu, impact_ns="t")
    assert claims.estimate(spec, {"t": 900}, 900) is None  # no estimate column: null
    bounded = FindingSpec(when="true", message="m", claims=gpu, impact_ns="t", recoverable_ns="e")
    assert claims.estimate(bounded, {"t": 900, "e": 300}, 900) == 300
    assert claims.estimate(bounded, {"t": 900, "e": None}, 900) is None
    idle = FindingSpec(when="true", message="m", claims=Claim(kind="idle", causes=["sync"]), impact_ns="t")
    assert claims.estimate(idle, {"t": 40}, 40) == 40  # idle time a host cause makes: the idle time itself
    budget = [BudgetRow(device_id=0, pid=7, kind="gpu", cause="tensor-core math", ns=880, pct=88.0)]
    hot = _finding("hot", gpu, 900, None, "info")
    fp = _finding("fp", Claim(kind="gpu", causes=["tensor-core math"]), 900, 2000)
    out = claims.apply([hot, fp], budget, [_steady()])
    assert hot.recoverable_ns is None and "not estimated" in hot.note
    assert fp.recoverable_ns == 880  # cut to its slice
    assert len(out) == 1 and out[0] is fp  # one slice, one finding


def test_a_slice_is_never_recovered_twice():
    budget = [BudgetRow(device_id=0, pid=7, kind="idle", cause="sync", ns=100, pct=10.0),
              BudgetRow(device_id=0, pid=7, kind="idle", cause="launch", ns=300, pct=30.0),
              BudgetRow(device_id=0, pid=7, kind="idle", cause="host code", ns=300, pct=30.0)]
    a = _finding("a", Claim(kind="idle", causes=["launch", "sync"]), 400, 400)
    b = _finding("b", Claim(kind="idle", causes=["sync", "host code"]), 400, 400)
    out = claims.apply([a, b], budget, [_steady("host-bound", 30.0)])
    assert len(out) == 2  # they share a third of the smaller slice: two problems
    assert sum(f.recoverable_ns for f in out) <= 700  # the rows they claim hold 700 ns


def test_a_fix_the_trace_rules_out_is_not_shown():
    f = Finding(rule_id="r", severity="warning", message="m", fix="A B C", evidence={"pid": 7, "device_id": 0},
                fix_parts=[("A", ("cuda-graphs",)), ("B", ()), ("C", ("pinned-memory",))])
    facts = [fixes.FixFact(0, 7, "cuda-graphs", "done", "the steady state already replays CUDA graphs"),
             fixes.FixFact(0, 8, "pinned-memory", "done", "another process")]
    fixes.apply([f], facts, None)
    assert f.fix == "B C"
    g = Finding(rule_id="r", severity="warning", message="m", fix="A", evidence={"pid": 7},
                fix_parts=[("A", ("fewer-launches",))])
    fixes.apply([g], [fixes.FixFact(0, 7, "fewer-launches", "moot", "the GPU is busy 99.0 % of the steady state")],
                None)
    assert "do not apply" in g.fix and "busy 99.0 %" in g.fix
