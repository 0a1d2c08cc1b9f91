"""Steps that do not repeat (analyzer/ingest/sql/step_times.sql: step_profile, step_churn) and
their share of the budget ('step churn', budget.sql)."""

from __future__ import annotations

import pytest
import yaml
from nsys_diagnose.ingest.database import open_trace

from .conftest import FIXTURES, H200, PUBLIC, scenario_file
from .synth import expand, write_export

SCENARIOS = scenario_file("unsteady-steps/fires-algorithm-search").parent
MS = 1_000_000


def _scenario(tmp_path, name):
    given = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())["given"]
    return open_trace(write_export(expand(given), tmp_path / "t.sqlite"), use_cache=False)


def _rows(trace, sql):
    cur = trace.con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def test_a_search_step_is_churn_and_its_excess_idle_time_is_step_churn(tmp_path):
    trace = _scenario(tmp_path, "fires-algorithm-search")
    try:
        churn = _rows(trace, "SELECT step, alike, churn, mechanism, churn_ns, share FROM step_churn ORDER BY step")
        prof = {r["step"]: r for r in _rows(trace, "SELECT * FROM step_profile")}
        budget = _rows(trace, "SELECT cause, sum(ns) AS ns FROM budget WHERE kind = 'idle' GROUP BY ALL")
        window, = trace.con.execute("SELECT sum(ns) FROM budget").fetchone()
        steady, = trace.con.execute("SELECT end_ns - start_ns FROM steady_state").fetchone()
        idle4, = trace.con.execute("""
            SELECT sum(least(g.end_ns, p.bound_ns + p.period_ns) - g.start_ns)
            FROM idle_gaps g JOIN step_profile p ON p.step = 4
            WHERE g.start_ns >= p.bound_ns AND g.start_ns < p.bound_ns + p.period_ns""").fetchone()
    finally:
        trace.close()
    # steps 2..7 are timed (the first is start-up, the last has no period); step 4 runs 20 trials
    assert [r["step"] for r in churn] == [2, 3, 4, 5, 6, 7]
    assert [r["step"] for r in churn if r["churn"]] == [4]
    four = next(r for r in churn if r["step"] == 4)
    assert four["mechanism"] == "algorithm search" and four["churn_ns"] == 90 * MS
    assert four["share"] == pytest.approx(0.9)
    assert prof[4]["search_calls"] == 60 and prof[4]["new_kernel_names"] == 1 and prof[4]["kernels"] == 21
    assert prof[3]["kernels"] == 1 and prof[3]["kernel_set"] == prof[5]["kernel_set"] != prof[4]["kernel_set"]
    # 90 % of the idle time starting in step 4 is churn; the slices still add up to the window exactly
    churn_ns = next(b["ns"] for b in budget if b["cause"] == "step churn")
    assert churn_ns == pytest.approx(0.9 * idle4, abs=2)
    assert window == steady


def test_warm_up_steps_are_churn_before_the_steps_repeat(tmp_path):
    trace = _scenario(tmp_path, "fires-warm-up-recompile")
    try:
        churn = _rows(trace, "SELECT step, churn, mechanism FROM step_churn WHERE churn ORDER BY step")
    finally:
        trace.close()
    assert churn == [{"step": 2, "churn": True, "mechanism": "recompilation"},
                     {"step": 3, "churn": True, "mechanism": "recompilation"}]


def test_without_a_usual_step_the_search_spans_are_churn(tmp_path):
    trace = _scenario(tmp_path, "fires-no-step-repeats")
    try:
        churn = _rows(trace, "SELECT * FROM step_churn ORDER BY step")
        spans = _rows(trace, "SELECT step, marks_start_ns, marks_end_ns FROM step_profile WHERE timed ORDER BY step")
        budget, = trace.con.execute("SELECT sum(ns) FROM budget WHERE cause = 'step churn'").fetchone()
        idle_in_spans, = trace.con.execute("""
            SELECT sum(least(g.end_ns, p.marks_end_ns) - greatest(g.start_ns, p.marks_start_ns))
            FROM idle_gaps g JOIN step_profile p ON p.timed
            WHERE g.end_ns > p.marks_start_ns AND g.start_ns < p.marks_end_ns""").fetchone()
    finally:
        trace.close()
    assert all(r["alike_by"] is None and r["churn"] and r["churn_ns"] is None and r["share"] == 1.0 for r in churn)
    assert [(r["window_start_ns"], r["window_end_ns"]) for r in churn] == [
        (s["marks_start_ns"], s["marks_end_ns"]) for s in spans]
    # the idle runs that start in a span, cut at its end: the gaps that overlap one, less the
    # parts of them before a span (a run starting before a span is not counted)
    assert 0 < budget <= idle_in_spans


@pytest.mark.parametrize("path", sorted([*H200.glob("*.sqlite"), *PUBLIC.glob("*.sqlite"),
                                         *(FIXTURES / "exports").glob("*.sqlite")]), ids=lambda p: p.stem)
def test_only_steps_that_do_not_repeat_are_churn(path):
    """On the real exports, only compile_recompiles' recompiling steps (5, 7, 9, 11: new lengths,
    module loads, 0.25-0.5 s of benchmarking each) take long enough to count; decode_launch_item
    has one step of another kernel set 4 ms slower (under 2 % of its window)."""
    trace = open_trace(path)
    try:
        churn = _rows(trace, "SELECT step, mechanism, churn_ns FROM step_churn WHERE churn ORDER BY step")
        window = trace.con.execute("SELECT sum(end_ns - start_ns) FROM steady_state").fetchone()[0] or 0
    finally:
        trace.close()
    if path.stem == "compile_recompiles":
        assert [(r["step"], r["mechanism"]) for r in churn] == [(s, "recompilation") for s in (5, 7, 9, 11)]
        assert sum(r["churn_ns"] for r in churn) > 0.99 * window
        # the budget says so: the idle time is the churn's, not host code outside NVTX ranges
        trace = open_trace(path)
        try:
            top = trace.con.execute("SELECT kind, cause, place, pct FROM budget ORDER BY ns DESC LIMIT 1").fetchone()
        finally:
            trace.close()
        assert top[:3] == ("idle", "step churn", "forward") and top[3] > 95
    elif path.stem == "cg_solver_item_check":
        # a step is a solver iteration; every 21st starts a new system (randn, the first residual,
        # its norm): a periodic phase of ~0.15 ms, 3.6 % of the window in all
        assert [(r["step"], r["mechanism"]) for r in churn] == [(s, "periodic phase") for s in range(21, 252, 21)]
        assert sum(r["churn_ns"] for r in churn) < 0.05 * window
    elif path.stem == "healthy_fp16_convnet_infer":
        # step 4 is the first periodic readout: its argmax kernel's module loads lazily (one
        # cuLibraryLoadData, 6.66 ms of a 14.2 ms step, against 7.57 ms for the usual step)
        assert [(r["step"], r["mechanism"]) for r in churn] == [(4, "module loading")]
        assert 0.05 * window < churn[0]["churn_ns"] < 0.08 * window
    elif path.stem == "dataloader_workers_restart":
        # every epoch's last step forks the next epoch's 4 DataLoader workers
        assert [(r["step"], r["mechanism"]) for r in churn] == [(s, "worker start-up") for s in (5, 10, 15, 20)]
    elif path.stem == "compiled_graph_rerecord":
        # every step compiles for its new length (compile-in-loop's every_step); step 5 compiles for
        # 367 ms against ~50 ms for the others, the one step slow enough to be churn
        assert [(r["step"], r["mechanism"]) for r in churn] == [(5, "recompilation")]
    elif path.stem == "periodic_eval_in_loop":
        # every 4th step evaluates: the same eval kernels in the same shapes each time
        assert [(r["step"], r["mechanism"]) for r in churn] == [(s, "periodic phase") for s in (4, 8, 12)]
    else:
        assert sum(r["churn_ns"] or 0 for r in churn) <= 0.02 * window, churn
