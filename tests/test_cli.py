"""The command line, run as users run it: exit codes, one-line errors, the JSON contract.

The first test starts a real process (`python -m nsys_diagnose`: the interpreter, the exit code,
the streams); the others call the same entry point in this process (cli_harness.call_cli), in
the repository root as the real process runs, without an interpreter start-up each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .cli_harness import call_cli, default_sigint
from .conftest import FIXTURES, ROOT
from .test_security import write_rule

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"


def run_process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nsys_diagnose", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


@pytest.fixture(autouse=True)
def _in_the_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # where run_process runs (the nearest pyproject.toml is read from here)


def run(*args: str):
    return call_cli(*args, timeout=120)


def test_markdown_by_default_says_the_gpu_idles():
    r = run_process(EXPORT)
    assert r.returncode == 1, r.stderr  # a warning fires: exit 1 by default
    first = r.stdout.splitlines()[2]
    assert "input pipeline stall" in first and "Data Loading" in first
    assert "## Findings" in r.stdout


def test_json_contract(tmp_path):
    out = tmp_path / "r.json"
    r = run(EXPORT, "--format", "json", "-o", out)
    assert r.returncode == 1, r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == 5
    assert set(doc["input"]) >= {"path", "nsys_version", "export_schema_version"}
    assert set(doc["metrics"]) >= {"span_ns", "gpu_busy_ns", "gpu_utilization_pct", "kernel_ns", "memcpy_ns",
                                   "memset_ns", "kernel_count", "devices"}
    assert set(doc["metrics"]["devices"][0]) >= {"device_id", "busy_ns", "utilization_pct"}
    by_id = {r["id"]: r for r in doc["rules"]}
    assert set(by_id) >= {"gpu-idle-gaps", "cuda-api-overhead", "transfer-share", "hot-kernels"}
    for rule in doc["rules"]:
        assert rule["status"] in ("fired", "passed", "skipped", "error")
        assert {"id", "status", "reason", "findings", "rows"} <= set(rule)
    required = {"hot-kernels": {"name", "instances", "total_ns"}, "cuda-api-overhead": {"api", "calls", "total_ns"},
                "transfer-share": {"kind", "count", "total_ns", "bytes"},
                "gpu-idle-gaps": {"device_id", "pid", "start_ns", "end_ns", "duration_ns"}}
    for rule_id, cols in required.items():
        assert by_id[rule_id]["rows"] and cols <= set(by_id[rule_id]["rows"][0])
    m = doc["metrics"]
    assert 0 <= m["gpu_utilization_pct"] <= 100
    assert m["gpu_busy_ns"] == sum(d["busy_ns"] for d in m["devices"])


@pytest.mark.parametrize("args,needle", [
    (["/no/such/file.sqlite"], "no such file"),
    ([ROOT / "rules"], "is a directory with no exports"),  # one with exports is a batch
    ([ROOT / "pyproject.toml"], "not a SQLite database"),
    ([EXPORT, "--set", "nope"], "expected ID.PARAM=VALUE"),
    ([EXPORT, "--set", "hot-kernels.nope=1"], "has no parameter"),
    ([EXPORT, "--set", "hot-kernels.top_n=abc"], "not a valid int"),
    ([EXPORT, "--select", "no-such-rule"], "no rule"),
    ([EXPORT, "-o", EXPORT], "refusing to overwrite"),
    (["explain", "no-such-rule"], "no rule"),
])
def test_errors_are_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.returncode == 2
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr


def test_fail_on_sets_exit_code():
    assert run(EXPORT, "--fail-on", "warning").returncode == 1
    assert run(EXPORT, "--fail-on", "never").returncode == 0


def test_set_overrides_a_parameter(tmp_path):
    out = tmp_path / "r.json"
    run(EXPORT, "--format", "json", "-o", out, "--set", "gpu-idle-gaps.min_gap_ns=500000000")
    gaps = next(r for r in json.loads(out.read_text())["rules"] if r["id"] == "gpu-idle-gaps")["rows"]
    assert gaps and all(g["duration_ns"] > 500_000_000 for g in gaps)


def test_rules_and_explain():
    listing = run("rules").stdout
    for rule_id in ("gpu-idle-gaps", "cuda-api-overhead", "transfer-share", "hot-kernels"):
        assert rule_id in listing
    doc = run("explain", "gpu-idle-gaps").stdout
    assert "What it detects" in doc and "min_gap_ns" in doc and "How to fix" in doc


def test_user_rule_folder(tmp_path):
    rules = tmp_path / "myrules" / "custom"
    rules.mkdir(parents=True)
    (rules / "many-kernels.yaml").write_text(
        "id: many-kernels\ntitle: Many kernels\ncategory: custom\nseverity: error\nsummary: Too many kernels.\n"
        "docs: {what: counts kernels, why: each costs a launch, fix: fuse them}\nrequires: [kernels]\n"
        "params:\n  max_kernels: {type: int, default: 10, unit: count, why: a tiny budget for the test}\n"
        "columns: {n: kernels}\nfindings:\n  - when: n > $max_kernels\n    message: '{n:n} kernels'\n")
    (rules / "many-kernels.sql").write_text("SELECT count(*) AS n FROM kernels")
    r = run(EXPORT, "--rules", tmp_path / "myrules", "--select", "many-kernels")
    assert r.returncode == 1 and "700 kernels" in r.stdout
    (rules / "many-kernels.yaml").write_text((rules / "many-kernels.yaml").read_text() + "sevrity: info\n")
    r = run("rules", "--rules", tmp_path / "myrules")
    assert r.returncode == 2 and "many-kernels.yaml:14" in r.stderr and "unknown key" in r.stderr


def test_ctrl_c_while_starting_up_is_one_line(monkeypatch, capsys):
    import nsys_diagnose.main as entry

    class Interrupted:  # Ctrl-C arriving while the CLI's modules are being imported
        def find_spec(self, name, path=None, target=None):
            if name == "nsys_diagnose.cli":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "nsys_diagnose.cli", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupted(), *sys.meta_path])
    with pytest.raises(SystemExit) as stop:
        entry.main()
    assert stop.value.code == 130 and capsys.readouterr().err == "nsys-diagnose: interrupted\n"


def test_ctrl_c_while_rules_run_stops_them_at_once(tmp_path):
    """The rules run in worker threads: the main thread must see the Ctrl-C and interrupt them,
    not leave them to their time limit."""
    for name in ("slow-a", "slow-b"):
        write_rule(tmp_path / "slow", name, "SELECT count(*) AS x FROM range(1000000) a, range(1000000) b", "x > 0")
    proc = subprocess.Popen([sys.executable, "-m", "nsys_diagnose", str(EXPORT), "--rules", str(tmp_path / "slow"),
                             "--select", "hostile", "--no-cache", "--format", "json", "-o", str(tmp_path / "r.json")],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True,
                            preexec_fn=default_sigint)
    time.sleep(4)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=60)
    finally:  # a child left running would hold two cores through the rest of the suite
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    # (click ends the terminal's "^C" line first: a newline before the one line)
    assert (proc.returncode, err.lstrip("\n")) == (130, "nsys-diagnose: interrupted\n")
    assert time.monotonic() - sent < 10
    assert not (tmp_path / "r.json").exists()


def test_ctrl_c_during_an_ingest_query_is_an_interrupt(monkeypatch, capsys):
    """DuckDB answers a Ctrl-C during a query on the main thread with RuntimeError('Query
    interrupted'), not KeyboardInterrupt: still exit 130 and one line."""
    import nsys_diagnose.cli as cli

    def interrupted(*args, **kwargs):
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(cli, "analyze", interrupted)
    with pytest.raises(SystemExit) as stop:
        cli.main([str(EXPORT), "--no-cache"])
    assert stop.value.code == 130 and capsys.readouterr().err == "nsys-diagnose: interrupted\n"
