"""Batch mode: discovery, parallel = serial, fault isolation, the result cache, Dask, ranks."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
from nsys_diagnose.batch import ranks
from nsys_diagnose.batch.command import run_batch
from nsys_diagnose.batch.discover import discover, unique_names
from nsys_diagnose.batch.run import DIED
from nsys_diagnose.batch.work import analyze_job, command_line
from nsys_diagnose.engine.catalog import load_rules

from .cli_harness import call_cli, default_sigint
from .conftest import FIXTURES, ROOT
from .synth import write_export

EXPORTS = FIXTURES / "exports"
RULES = load_rules()
GPID = lambda pid: (1 << 48) + pid * (1 << 24)  # noqa: E731  serialized globalPid


def rank_export(path: Path, rank: int, step_ns: int, *, uuid: str | None = None, steps: int = 10,
                kernel_ns: int = 8_000_000, command: tuple[str, ...] = ("python3", "train.py")) -> Path:
    """One rank of a data-parallel job: `steps` NVTX train_step ranges, one 8 ms kernel each."""
    pid = 100 + rank
    t0 = 1_000_000
    return write_export({
        "StringIds": [{"id": 1, "value": "gemm_kernel"}],
        "CUPTI_ACTIVITY_KIND_KERNEL": [
            {"start": t0 + i * step_ns, "end": t0 + i * step_ns + kernel_ns, "deviceId": 0, "contextId": 1,
             "streamId": 7, "correlationId": i + 1, "globalPid": GPID(pid), "demangledName": 1, "shortName": 1}
            for i in range(steps)],
        "NVTX_EVENTS": [{"start": t0 + i * step_ns, "end": t0 + (i + 1) * step_ns, "eventType": 59,
                         "text": "train_step", "globalTid": GPID(pid) + pid} for i in range(steps)],
        "META_DATA_CAPTURE": [{"name": "PROCESS_0:COMMAND", "value": command[0]}]
        + [{"name": f"PROCESS_0:ARGUMENT_{i}", "value": a} for i, a in enumerate(command[1:])],
        "TARGET_INFO_GPU": [{"id": 0, "cuDevice": 0, "name": "NVIDIA H200", "smCount": 132,
                             "uuid": uuid or f"GPU-{rank:04d}-aaaa"}],
    }, path)


def batch(inputs, out: Path, **kw) -> int:
    opts = dict(output=out, fmt="md", rules=RULES, overrides={}, select=None, fail_on="error", use_cache=False,
                cache_dir=None, reader="auto", workers=1, progress_mode="plain")
    return run_batch([str(p) for p in inputs], **(opts | kw))


def stable_json(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc["input"].pop("from_cache")
    for rule in doc["rules"]:
        rule.pop("seconds")
    return doc


def outputs(out: Path) -> dict[str, object]:
    """Everything a batch wrote, minus what legitimately differs between runs (timings)."""
    got: dict[str, object] = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if p.suffix == ".json":
            got[rel] = stable_json(p)
        elif p.name == "summary.md":
            got[rel] = [ln for ln in p.read_text().splitlines() if "nsys-diagnose 0" not in ln]  # total time
        elif p.suffix == ".md":
            got[rel] = p.read_text()
        elif p.suffix == ".parquet":
            df = pl.read_parquet(p)
            got[rel] = df.drop([c for c in ("seconds", "cached", "rules") if c in df.columns]).to_dicts()
    return got


def differences(a, b, path="") -> list[str]:
    """Where two output trees differ, as readable paths (pytest's diff of big dicts is not)."""
    if type(a) is not type(b):
        return [f"{path}: {a!r:.200} != {b!r:.200}"]
    if isinstance(a, dict):
        return [d for k in sorted(set(a) | set(b), key=str) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list):
        head = [f"{path}: {len(a)} != {len(b)} items"] if len(a) != len(b) else []
        return head + [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float):  # DuckDB's parallel aggregates (avg, stddev) vary in the last bits
        return [] if math.isclose(a, b, rel_tol=1e-9) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r:.200} != {b!r:.200}"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A real export, two ranks of one job, and a corrupt file between them."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "real").mkdir()
    shutil.copy(EXPORTS / "dataloader_bound.sqlite", d / "real" / "dataloader_bound.sqlite")
    (d / "job").mkdir()
    rank_export(d / "job" / "rank0.sqlite", 0, 10_000_000)
    good = bytearray(rank_export(d / "job" / "rank1_corrupt.sqlite", 1, 10_000_000).read_bytes())
    good[4096:] = b"\xab" * (len(good) - 4096)  # a valid header over garbage pages: a torn copy
    (d / "job" / "rank1_corrupt.sqlite").write_bytes(good)
    rank_export(d / "job" / "rank2.sqlite", 2, 10_000_000)
    (d / "job" / "notes.txt").write_text("not an export")
    return d


@pytest.fixture(scope="module")
def serial(folder, tmp_path_factory) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("serial")
    return batch([folder], out, workers=1), out


# --- discovery -------------------------------------------------------------------------------

def test_discovery_finds_exports_below_and_names_them_uniquely(tmp_path):
    for rel in ("node1/rank0.sqlite", "node2/rank0.sqlite", "node2/rank0.nsys-rep", "solo.nsys-rep",
                "summary.sqlite", ".hidden/x.sqlite", "node1/.tmp.sqlite", "readme.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x")
    found, unmatched = discover([tmp_path, tmp_path / "node1"], have_nsys=False)  # node1 twice: once
    by_name = {f.name: f for f in found}
    assert sorted(by_name) == sorted([f"{tmp_path.name}/summary", "node1/rank0", "node2/rank0",
                                      "rank0.nsys-rep", "solo"])
    assert "rank0.sqlite is analyzed instead" in by_name["rank0.nsys-rep"].skip_reason
    assert "needs nsys on PATH" in by_name["solo"].skip_reason
    assert by_name["node1/rank0"].skip_reason is None and by_name["node1/rank0"].path.is_absolute()
    assert unmatched == []
    found, _ = discover([tmp_path], have_nsys=True)
    assert not {f.name: f for f in found}["solo"].skip_reason


def test_discovery_globs_and_unmatched_patterns(tmp_path):
    for name in ("a.sqlite", "b.sqlite", "c.db"):
        (tmp_path / name).write_bytes(b"x")
    found, unmatched = discover([str(tmp_path / "*.sqlite"), str(tmp_path / "c.db"), str(tmp_path / "zz*")])
    assert [f.name for f in found] == ["a", "b", "c"] and unmatched == [str(tmp_path / "zz*")]


def test_unique_names_lengthen_only_where_needed():
    paths = [Path("/r/x/a/t.sqlite"), Path("/r/y/a/t.sqlite"), Path("/r/y/b.sqlite")]
    assert unique_names(paths) == ["x/a/t", "y/a/t", "b"]


def test_command_line_from_capture_meta():
    meta = [("PROCESS_0:ARGUMENT_1", "--steps 20"), ("PROCESS_0:COMMAND", "python3"),
            ("PROCESS_0:ARGUMENT_0", "train.py"), ("DEVICE_ID", "Local (CLI)")]
    assert command_line(meta) == "python3 train.py '--steps 20'"
    assert command_line([]) is None


# --- a folder: results, fault isolation, parallel = serial --------------------------------------

def test_bad_file_in_the_middle_is_an_error_row_and_the_rest_finish(serial, folder):
    code, out = serial
    assert code == 2  # an input failed
    reports = duckdb.sql(f"SELECT name, status, error, gpu_utilization_pct FROM '{out / 'reports.parquet'}' "
                         "ORDER BY name").fetchall()
    assert [(r[0], r[1]) for r in reports] == [("dataloader_bound", "ok"), ("rank0", "ok"),
                                                ("rank1_corrupt", "error"), ("rank2", "ok")]
    error = reports[2][2]
    assert error == "could not be read: database disk image is malformed"
    assert not (out / "rank1_corrupt.json").exists()
    summary = (out / "summary.md").read_text()
    assert "3 analyzed" in summary and "1 failed" in summary and str(folder / "job" / "rank1_corrupt.sqlite") in summary


def test_reports_match_the_single_file_command(serial, folder):
    _, out = serial
    r = call_cli(folder / "real" / "dataloader_bound.sqlite", "--no-cache", timeout=120)  # the single-file entry point
    assert r.returncode == 1, r.stderr  # its warning
    assert (out / "dataloader_bound.md").read_text() == r.stdout
    doc = json.loads((out / "dataloader_bound.json").read_text())
    row = duckdb.sql(f"SELECT * FROM '{out / 'reports.parquet'}' WHERE name = 'dataloader_bound'").pl().to_dicts()[0]
    for key in ("span_ns", "gpu_busy_ns", "gpu_utilization_pct", "kernel_ns", "kernel_count", "api_count"):
        assert row[key] == doc["metrics"][key], key
    assert row["headline"] == doc["headline"] and row["finding_count"] == len(doc["findings"])
    assert row["top_finding_message"] == doc["findings"][0]["message"]
    hot = next(x for x in doc["rules"] if x["id"] == "hot-kernels")["rows"][0]
    assert (row["top_kernel"], row["top_kernel_ns"]) == (hot["name"], hot["total_ns"])
    findings = pl.read_parquet(out / "findings.parquet").filter(pl.col("name") == "dataloader_bound")
    assert findings["message"].to_list() == [f["message"] for f in doc["findings"]]
    assert json.loads(findings["evidence_json"][0]) == json.loads(json.dumps(doc["findings"][0]["evidence"]))


SEVERITY = {"error": 2, "warning": 1, "info": 0}


def stake_order(severity, recoverable, impact) -> tuple:
    """The report's own order (analyze.rank), across reports."""
    group = 2 if recoverable == 0 else 1 if recoverable is None else 0
    return (-SEVERITY.get(severity, -1), group, -(recoverable if recoverable is not None else impact or 0))


def test_batch_tables_carry_the_steady_state_severity_and_place_most_severe_first(serial):
    _, out = serial
    reports = pl.read_parquet(out / "reports.parquet").to_dicts()
    ok = [r for r in reports if r["status"] == "ok"]
    assert [r["status"] for r in reports] == ["ok"] * len(ok) + ["error"]  # failed inputs last
    # reports: the most severe top finding first, then by every finding's recoverable time (never a
    # time at stake the trace does not bound)
    run_order = [(-SEVERITY.get(r["top_finding_severity"], -1), -(r["recoverable_ns"] or 0)) for r in ok]
    assert run_order == sorted(run_order)
    row = next(r for r in ok if r["name"] == "dataloader_bound")
    doc = json.loads((out / "dataloader_bound.json").read_text())
    lead = max(doc["steady"], key=lambda s: (s["busy_ns"], s["window_ns"]))
    assert row["recoverable_ns"] == sum(f["recoverable_ns"] or 0 for f in doc["findings"])
    assert (row["verdict_class"], row["verdict"]) == (lead["verdict_class"], lead["verdict"]) and row["verdict"]
    assert (row["bound"], row["steady_utilization_pct"], row["steady_step_median_ns"]) == (
        lead["bound"], doc["steady_utilization_pct"], doc["step_median_ns"]) == ("host-bound", lead["busy_pct"],
                                                                                lead["step_median_ns"])
    assert (row["steady_pid"], row["steady_device_id"], row["steady_steps"]) == (lead["pid"], lead["device_id"],
                                                                                 lead["steps"])
    top = doc["findings"][0]
    assert (row["top_finding_severity"], row["top_finding_recoverable_ns"]) == (top["severity"], top["recoverable_ns"])
    assert row["top_finding_pid"] == top["evidence"]["pid"] and row["top_finding_device_id"] == lead["device_id"]

    findings = pl.read_parquet(out / "findings.parquet")
    assert {"severity", "recoverable_ns", "pid", "device_id", "bound", "steady_utilization_pct",
            "steady_step_median_ns"} <= set(findings.columns)
    keys = [stake_order(f["severity"], f["recoverable_ns"], f["impact_ns"]) for f in findings.to_dicts()]
    assert keys == sorted(keys)
    mine = findings.filter(pl.col("name") == "dataloader_bound")
    assert mine["finding_rank"].to_list() == list(range(1, len(doc["findings"]) + 1))  # its report's order kept
    assert mine["recoverable_ns"].to_list() == [f.get("recoverable_ns") for f in doc["findings"]]
    assert set(mine["bound"].to_list()) == {"host-bound"} and set(mine["pid"].drop_nulls().to_list()) == {lead["pid"]}

    summary = (out / "summary.md").read_text()
    assert ("| report | status | verdict | steady GPU busy | step median | severity | headline "
            "| recoverable (all findings) | pid · GPU | top kernel |") in summary
    lines = summary.splitlines()
    first = lines.index(next(x for x in lines if x.startswith("| report |"))) + 2
    table = lines[first: lines.index("", first)]  # the reports table, not the rank table below it
    assert [line.split("]")[0][3:] if line.startswith("| [") else "rank1_corrupt" for line in table] == [
        r["name"] for r in reports]
    line = next(x for x in table if x.startswith("| [dataloader_bound]"))
    assert f"| {lead['verdict_class']} |" in line and f"| {top['severity']} |" in line and f"| {lead['pid']} · GPU 0 |" in line
    assert f"| {doc['headline']} |" in line  # the whole headline, never cut


def test_parallel_results_identical_to_serial(serial, folder, tmp_path):
    code, out = serial
    assert batch([folder], tmp_path, workers=2) == code
    assert differences(outputs(out), outputs(tmp_path)) == []


def test_a_worker_that_dies_fails_only_its_own_input(folder, tmp_path):
    assert batch([folder / "job"], tmp_path, workers=2, work=dies_on_rank0) == 2
    rows = dict(duckdb.sql(f"SELECT name, coalesce(error, status) FROM '{tmp_path / 'reports.parquet'}'").fetchall())
    assert rows["rank0"] == DIED and rows["rank2"] == "ok" and "malformed" in rows["rank1_corrupt"]


def test_a_pool_that_breaks_between_submissions_loses_no_job(folder, tmp_path, monkeypatch):
    # The race behind the test above: a worker dies while the parent hands out the next job, so
    # submit() itself raises. The job must be handed to a fresh pool, not lost with the old one.
    import nsys_diagnose.batch.run as run_module
    real, pools = run_module._new_pool, []

    def breaks_once(workers):
        pool = real(workers)
        if not pools:
            submit, calls = pool.submit, []

            def flaky(*args):
                calls.append(args)
                if len(calls) == 2:
                    raise run_module.BrokenProcessPool("a worker died")
                return submit(*args)
            pool.submit = flaky
        pools.append(pool)
        return pool

    monkeypatch.setattr(run_module, "_new_pool", breaks_once)
    assert batch([folder / "job"], tmp_path, workers=2) == 2
    rows = dict(duckdb.sql(f"SELECT name, coalesce(error, status) FROM '{tmp_path / 'reports.parquet'}'").fetchall())
    assert rows["rank0"] == rows["rank2"] == "ok" and "malformed" in rows["rank1_corrupt"]
    assert len(pools) >= 2


PARTIAL_RESULT = """
import os, struct, sys, time
from pathlib import Path
from nsys_diagnose.batch import run

def half_sent(marker):  # a worker killed while sending its result: the message stops midway
    frame = sys._getframe()
    while "result_queue" not in frame.f_locals:
        frame = frame.f_back
    os.write(frame.f_locals["result_queue"]._writer.fileno(), struct.pack("!i", 1 << 20) + b"x" * 10)
    Path(marker).touch()
    time.sleep(60)

if __name__ == "__main__":
    pool = run._new_pool(1)
    pool.submit(half_sent, sys.argv[1])
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.05)
    run._stop(pool)
"""


def test_a_worker_killed_mid_message_does_not_hang_the_exit(tmp_path):
    script = tmp_path / "partial.py"
    script.write_text(PARTIAL_RESULT)
    r = subprocess.run([sys.executable, script, tmp_path / "sent"], cwd=ROOT, capture_output=True, text=True,
                       timeout=30, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr


def dies_on_rank0(job):
    if job.name == "rank0":
        os._exit(9)  # as a segfault or the OOM killer would end the process
    return analyze_job(job)


def test_interrupt_keeps_what_finished(folder, tmp_path):
    assert batch([folder / "job"], tmp_path, work=interrupt_at_corrupt) == 130
    rows = duckdb.sql(f"SELECT name, status FROM '{tmp_path / 'reports.parquet'}'").fetchall()
    assert rows == [("rank0", "ok")]
    assert "Interrupted: 2 input(s) were not analyzed" in (tmp_path / "summary.md").read_text()


def interrupt_at_corrupt(job):
    if job.name == "rank1_corrupt":
        raise KeyboardInterrupt  # as Ctrl-C arrives in the middle of an analysis
    return analyze_job(job)


def test_ctrl_c_on_the_cli_stops_the_pool_and_writes_the_summary(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(6):
        (inputs / f"r{i:02d}.sqlite").symlink_to(EXPORTS / "compute_fp32.sqlite")
    proc = subprocess.Popen([sys.executable, "-m", "nsys_diagnose", inputs, "-o", tmp_path / "out", "-j", "2",
                             "--no-cache"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    first = proc.stderr.readline()
    assert "ok" in first, first + proc.stderr.read()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    done = duckdb.sql(f"SELECT count(*) FROM '{tmp_path / 'out' / 'reports.parquet'}'").fetchone()[0]
    assert 1 <= done < 6
    assert "Interrupted" in (tmp_path / "out" / "summary.md").read_text()


# --- the result cache ----------------------------------------------------------------------------

def test_second_run_redoes_nothing_and_a_changed_file_is_redone(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    for rank in range(2):
        rank_export(inputs / f"rank{rank}.sqlite", rank, 10_000_000)
    calls: list[str] = []

    def counting(job):
        calls.append(job.name)
        return analyze_job(job)

    run = lambda: batch([inputs], tmp_path / "out", use_cache=True, cache_dir=tmp_path / "cache", work=counting)  # noqa: E731
    assert run() == 0 and sorted(calls) == ["rank0", "rank1"]
    first = outputs(tmp_path / "out")
    calls.clear()
    assert run() == 0 and calls == []
    assert differences(first, outputs(tmp_path / "out")) == []
    assert duckdb.sql(f"SELECT bool_and(cached) FROM '{tmp_path / 'out' / 'reports.parquet'}'").fetchone()[0]
    (inputs / "rank1.sqlite").unlink()
    rank_export(inputs / "rank1.sqlite", 1, 20_000_000)  # same name, new content
    assert run() == 0 and calls == ["rank1"]
    assert stable_json(tmp_path / "out" / "rank1.json") != first["rank1.json"]
    calls.clear()
    assert batch([inputs], tmp_path / "out", use_cache=False, cache_dir=tmp_path / "cache", work=counting) == 0
    assert sorted(calls) == ["rank0", "rank1"]  # --no-cache forces


# --- Dask ------------------------------------------------------------------------------------------

def test_dask_executor_gives_the_serial_results(serial, folder, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        code = batch([folder], tmp_path, executor="dask", scheduler=cluster.scheduler_address)
    assert code == serial[0]
    assert differences(outputs(serial[1]), outputs(tmp_path)) == []


# --- ranks of one job --------------------------------------------------------------------------------

def test_rank_table_names_the_straggler(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    for rank in range(3):
        rank_export(inputs / f"rank{rank}.sqlite", rank, 20_000_000 if rank == 2 else 10_000_000)
    assert batch([inputs], tmp_path / "out") == 0
    rows = {r["name"]: r for r in pl.read_parquet(tmp_path / "out" / "reports.parquet").to_dicts()}
    assert {r["job"] for r in rows.values()} == {"job 1"}
    assert [n for n, r in rows.items() if r["straggler"]] == ["rank2"]
    assert rows["rank0"]["gpu_utilization_pct"] == pytest.approx(80.0, abs=0.5)
    assert rows["rank2"]["gpu_utilization_pct"] == pytest.approx(40.0, abs=0.5)
    reason = rows["rank2"]["straggler_reason"]
    assert "GPU busy 40.0 % against the job's median 80.0 %" in reason
    if rows["rank2"]["step_median_ns"]:  # the steps table (ingest/sql/phases.sql) found the train_step ranges
        assert rows["rank2"]["step_median_ns"] == 20_000_000 and rows["rank0"]["step_count"] == 10
        assert "median step 20 ms, 100 % over the job's median 10 ms" in reason
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "## Ranks of one job (job 1): 3 reports of `python3 train.py`" in summary
    assert "Stragglers: rank2." in summary


def record(name, program="python3 train.py", uuids=("GPU-a",), busy=80.0, step=None, kernel_set="k1"):
    return {"name": name, "status": "ok", "program": program, "kernel_set": kernel_set, "gpu_uuids": list(uuids),
            "pids": [1], "gpu_utilization_pct": busy, "step_median_ns": step}


def test_repeated_runs_on_one_gpu_are_not_ranks():
    assert ranks.find_jobs([record("mon"), record("tue")]) == []
    assert ranks.find_jobs([record("a", program="x"), record("b", program="y", uuids=("GPU-b",))]) == []


def test_ranks_by_kernel_set_when_no_command_and_by_steps_when_all_have_them():
    recs = [record("r0", program=None, uuids=("GPU-0",), step=100), record("r1", program=None, uuids=("GPU-1",), step=100),
            record("r2", program=None, uuids=("GPU-2",), step=115)]
    (job,) = ranks.find_jobs(recs)
    assert job.program == "kernel set k1" and job.by_steps and job.median_step_ns == 100
    assert list(job.stragglers) == ["r2"] and "15 % over" in job.stragglers["r2"]
    recs[0]["step_median_ns"] = None
    (job,) = ranks.find_jobs(recs)
    assert not job.by_steps and job.stragglers == {}


# --- the command line ----------------------------------------------------------------------------------

def test_cli_batch_over_a_glob_plain_progress_and_exit_codes(folder, tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "nsys_diagnose", str(folder / "job" / "rank[02].sqlite"), "-o", out,
                        "-j", "2", "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"2 analyzed, 0 failed, 0 skipped: {out / 'summary.md'}"
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and all(ln.startswith(("[1/2] ok", "[2/2] ok")) for ln in lines), r.stderr
    written = {p.name for p in out.iterdir()} - {"index.html"}  # the HTML index, where report/html_index.py is
    assert written == {"findings.parquet", "rank0.json", "rank0.md", "rank2.json", "rank2.md", "reports.parquet",
                       "summary.md"}
    # (the exit code of a real process is shown above; this batch of failures runs in-process)
    r = call_cli(folder / "job" / "rank1_corrupt.sqlite", folder / "job" / "notes.txt", "-o", out, "--fail-on", "never",
                 timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[-1].endswith(f"2 of 2 input(s) failed, none analyzed (see {out / 'summary.md'})")
    assert "notes.txt: is not a SQLite database" in r.stderr
    assert (out / "rank0.json").exists()  # reports of inputs outside this batch are left alone


def test_cli_batch_errors_are_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "file").write_text("x")
    for args, needle in (([empty], "is a directory with no exports"), ([EXPORTS, "-o", tmp_path / "file"], "a batch writes into a folder"),
                         ([EXPORTS, "--executor", "dask"], "needs --scheduler")):
        r = call_cli(*args, timeout=60)
        assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
