"""Every real export in ../shared/exports/public/ (nsys pre-2021 to 2026.2, other people's programs
and GPUs) against what nsys 2022.4 printed for the same file (golden-nsys2022.4/), and against the
raw tables read here with sqlite3. Skipped when ../shared is absent.

Where our definition differs from 2022.4's on purpose (docs/support-matrix.md), the test applies
the documented difference to nsys's numbers; it never widens a tolerance.
"""

from __future__ import annotations

import csv
import functools
import re
import sqlite3
import subprocess
import sys
from collections import defaultdict

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.model import Report
from nsys_diagnose.engine.runner import run_rule
from nsys_diagnose.ingest.database import open_trace

from .conftest import PUBLIC, ROOT, needs_shared

GOLDEN = PUBLIC / "golden-nsys2022.4"
NAMES = sorted(p.stem for p in PUBLIC.glob("*.sqlite")) if PUBLIC.is_dir() else []
pytestmark = needs_shared
RULES = load_rules()
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
              "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")


# --- what we say, computed once per export --------------------------------------------------------

@functools.cache
def report(name: str) -> Report:
    return analyze(PUBLIC / f"{name}.sqlite")


@functools.cache
def rows(name: str, rule_id: str) -> tuple[str, list[dict]]:
    """(status, every result row) of one rule, without the report's row limit."""
    trace = open_trace(PUBLIC / f"{name}.sqlite")
    try:
        rule = RULES[rule_id].model_copy(update={"rows_limit": 10**9})
        result = run_rule(trace.con, rule, {}, trace.captured)
        return result.status, result.rows
    finally:
        trace.close()


@functools.cache
def query(name: str, sql: str) -> list[tuple]:
    """A query over our normalized tables."""
    trace = open_trace(PUBLIC / f"{name}.sqlite")
    try:
        return trace.con.execute(sql).fetchall()
    finally:
        trace.close()


# --- what the file itself and nsys say -------------------------------------------------------------

def raw(name: str, sql: str) -> list[tuple]:
    """A query on the export itself, read-only, with no nsys-diagnose code in between."""
    con = sqlite3.connect(f"file:{PUBLIC / name}.sqlite?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def raw_tables(name: str) -> dict[str, set[str]]:
    tables = [r[0] for r in raw(name, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: {r[1] for r in raw(name, f'PRAGMA table_info("{t}")')} for t in tables}


def raw_count(name: str, table: str) -> int:
    return raw(name, f'SELECT count(*) FROM "{table}"')[0][0] if table in raw_tables(name) else 0


def golden(name: str, report_name: str) -> list[dict[str, str]] | None:
    """nsys 2022.4's CSV for this export, or None where it printed nothing (no such rows)."""
    path = GOLDEN / f"{name}_{report_name}.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def inventory() -> dict[str, tuple[str | None, str | None]]:
    """file stem -> (nsys version, schema version) from INVENTORY.md, None where it says none."""
    out = {}
    for line in (PUBLIC / "INVENTORY.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and cells[2].endswith(".sqlite"):
            version = cells[0] if re.fullmatch(r"[0-9.]+", cells[0]) else None
            schema = cells[1] if re.fullmatch(r"[0-9.]+", cells[1]) else None
            out[cells[2].removesuffix(".sqlite")] = (version, schema)
    return out


def strip_suffix(api: str) -> str:
    return re.sub(r"_v[0-9]+$", "", api)


def has_gpu_rows(name: str) -> bool:
    return any(raw_count(name, t) for t in GPU_TABLES)


def is_derived(name: str) -> bool:
    return report(name).input.derived is not None


# --- every export analyzes -------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_analyzes_without_error(name):
    r = report(name)
    assert r.headline
    for result in r.rules:
        assert result.status in ("fired", "passed", "skipped"), (result.id, result.reason)
        if result.status == "skipped":
            assert result.reason.startswith("not captured: "), (result.id, result.reason)


@pytest.mark.parametrize("name", NAMES)
def test_version_and_metadata_table_are_detected(name):
    tables = raw_tables(name)
    meta_table = next((t for t in ("META_DATA_EXPORT", "EXPORT_META_DATA") if t in tables), None)
    inp = report(name).input
    assert inp.export_meta_table == meta_table
    if meta_table is None:  # before 2021.4: no versions, a flavour from the GPU tables
        assert (inp.nsys_version, inp.export_schema_version) == (None, None)
        assert inp.schema_flavour.startswith("pre-2021.4")
        if "TARGET_INFO_CUDA_GPU" in tables:
            assert inp.schema_flavour in ("pre-2021.4-a", "pre-2021.4-b")
    else:
        meta = dict(raw(name, f"SELECT name, value FROM {meta_table}"))
        assert inp.nsys_version == meta["EXPORT_PRODUCT_VERSION"]
        assert inp.export_schema_version == meta["EXPORT_SCHEMA_VERSION"]
        assert inp.schema_flavour == {"META_DATA_EXPORT": "meta-data-export",
                                      "EXPORT_META_DATA": "export-meta-data"}[meta_table]
    listed = inventory().get(name)
    if listed is not None:  # the collector's own record of each file
        assert (inp.nsys_version, inp.export_schema_version) == listed


def test_pre_2021_flavour_b_is_told_by_its_gpu_tables():
    name = "martisu1631998+kmeans-parallel__report2"
    if name not in NAMES:
        pytest.skip(f"{name} not present")
    inp = report(name).input
    assert (inp.export_meta_table, inp.schema_flavour) == (None, "pre-2021.4-b")
    assert {"cuda-gpu-info", "gpu-info"} <= set(inp.features) and "enum-tables" not in inp.features
    # TARGET_INFO_CUDA_GPU names the device and gives its SM count
    assert query(name, "SELECT device_id, name, sm_count FROM devices") == [(0, "NVIDIA GeForce RTX 3080", 68)]


# --- our numbers against nsys 2022.4's -------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_hot_kernels_match_gpukernsum(name):
    """2022.4 splits a kernel name into one row per (grid, block); the 2024+ definition, ours,
    is one row per name: their rows summed per name are ours."""
    status, ours = rows(name, "hot-kernels")
    theirs = golden(name, "gpukernsum")
    if theirs is None:
        assert status == "skipped" or ours == []
        return
    merged: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in theirs:
        merged[r["Name"]][0] += int(r["Instances"])
        merged[r["Name"]][1] += int(r["Total Time (ns)"])
    assert {r["name"]: [r["instances"], r["total_ns"]] for r in ours} == dict(merged)


@pytest.mark.parametrize("name", NAMES)
def test_api_overhead_matches_cudaapisum(name):
    """2022.4 counts --cudabacktrace rows (eventClass 67) a second time and strips only 4-digit
    suffixes; we drop those rows and strip every suffix. So: their rows merged per stripped
    name, minus the eventClass-67 rows of the file itself, are ours."""
    status, ours = rows(name, "cuda-api-overhead")
    theirs = golden(name, "cudaapisum")
    if theirs is None:
        assert status == "skipped" or ours == []
        return
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in theirs:
        expected[strip_suffix(r["Name"])][0] += int(r["Num Calls"])
        expected[strip_suffix(r["Name"])][1] += int(r["Total Time (ns)"])
    backtraces = raw(name, 'SELECT s.value, count(*), sum(r."end" - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r '
                           "JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass = 67 GROUP BY s.value")
    for api, calls, total in backtraces:
        expected[strip_suffix(api)][0] -= calls
        expected[strip_suffix(api)][1] -= total
    got: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in ours:  # one row per (api, layer): merge the layers as nsys does
        got[r["api"]][0] += r["calls"]
        got[r["api"]][1] += r["total_ns"]
    assert dict(got) == {k: v for k, v in expected.items() if v != [0, 0]}


# 2022.4 labels memcpys from a hard-coded table (nsys-schema.md 4.1); 2024+ from the ENUM labels
SHORT_KINDS = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "HtoA": "Host-to-Array",
               "AtoH": "Array-to-Host", "AtoA": "Array-to-Array", "AtoD": "Array-to-Device",
               "DtoA": "Device-to-Array", "DtoD": "Device-to-Device", "HtoH": "Host-to-Host",
               "PtoP": "Peer-to-Peer", "Unknown": "Unknown"}
SIZE_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def transfer_kind(operation: str) -> str:
    if operation == "[CUDA memset]":
        return "memset"
    unified = re.fullmatch(r"\[CUDA Unified Memory memcpy (\w+)\]", operation)
    if unified:
        return "Unified " + SHORT_KINDS[unified[1]]
    label = re.fullmatch(r"\[CUDA memcpy (.+)\]", operation)[1]
    return SHORT_KINDS.get(label, label)


def size_column(table: list[dict[str, str]]) -> tuple[str, float]:
    """The total-size column and its unit in bytes: 2022.4 writes `Total (MB)` (1e6 bytes)."""
    column = next(c for c in table[0] if c.startswith("Total ("))
    return column, SIZE_UNITS[column[len("Total ("):-1]]


@pytest.mark.parametrize("name", NAMES)
def test_transfer_share_matches_gpumemtimesum_and_gpumemsizesum(name):
    status, ours = rows(name, "transfer-share")
    times, sizes = golden(name, "gpumemtimesum"), golden(name, "gpumemsizesum")
    if times is None:
        assert sizes is None and (status == "skipped" or ours == [])
        return
    assert {r["kind"]: (r["count"], r["total_ns"]) for r in ours} == {
        transfer_kind(r["Operation"]): (int(r["Count"]), int(r["Total Time (ns)"])) for r in times}
    column, unit = size_column(sizes)
    theirs = {transfer_kind(r["Operation"]): float(r[column]) for r in sizes}
    assert set(theirs) == {r["kind"] for r in ours}
    for r in ours:  # nsys prints 3 decimals: ours must round to the printed value
        assert abs(r["bytes"] / unit - theirs[r["kind"]]) <= 0.0005 + 1e-9, (r["kind"], r["bytes"], theirs[r["kind"]])


# --- schema quirks, on the files that have them -----------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_backtrace_rows_are_dropped(name):
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in raw_tables(name):
        return
    (total, backtraces, unreal), = raw(name, 'SELECT count(*), count(*) FILTER (WHERE eventClass = 67), '
                                             'count(*) FILTER (WHERE coalesce(eventClass, 0) <> 67 AND NOT coalesce(start > 0 AND "end" >= start, 0)) '
                                             "FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    assert query(name, "SELECT count(*), count(*) FILTER (WHERE event_class = 67) FROM api_calls") == [
        (total - backtraces - unreal, 0)]


@pytest.mark.parametrize("name", NAMES)
def test_every_gpu_operation_has_its_api_call_unless_the_export_is_a_window(name):
    """GPU work joins its launching call on (globalPid, correlationId), runtime or driver alike.
    A derived time window cuts some calls off: those operations stay, without a launch API,
    exactly as many as the file's own rows say."""
    (unlaunched,), = query(name, "SELECT count(*) FILTER (WHERE launch_api IS NULL) FROM gpu_activity")
    if not is_derived(name):
        assert unlaunched == 0
        return
    tables = raw_tables(name)
    dangling = sum(raw(name, f"SELECT count(*) FROM {t} g WHERE NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                             "WHERE r.correlationId = g.correlationId AND (r.globalTid & -16777216) = g.globalPid)")[0][0]
                   for t in GPU_TABLES if t in tables)
    assert unlaunched == dangling > 0
    assert report(name).input.derived["gpu_ops_without_api"] == dangling


@pytest.mark.parametrize("name", NAMES)
def test_derived_window_is_reported_and_holds_the_trace(name):
    meta_table = report(name).input.export_meta_table
    keys = dict(raw(name, f"SELECT name, value FROM {meta_table} WHERE name LIKE 'DERIVED%'")) if meta_table else {}
    derived = report(name).input.derived
    if not keys:
        assert derived is None
        return
    start, end = map(int, keys["DERIVED_WINDOW_NS"].split("-"))
    assert (derived["window_start_ns"], derived["window_end_ns"], derived["from"]) == (start, end, keys["DERIVED_FROM"])
    m = report(name).metrics
    assert start <= m.window_start_ns <= m.window_end_ns <= end


@pytest.mark.parametrize("name", NAMES)
def test_driver_only_traces_are_analyzed(name):
    """OpenMP offload and CUDA-Q programs call only the driver API (eventClass 1)."""
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in raw_tables(name):
        return
    classes = {c for (c,) in raw(name, "SELECT DISTINCT eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    if classes != {1}:
        return
    assert {layer for (layer,) in query(name, "SELECT DISTINCT layer FROM api_calls")} == {"driver"}
    launchers = {api for (api,) in query(name, "SELECT DISTINCT launch_api FROM kernels")}
    assert all(api.startswith("cuLaunch") for api in launchers), launchers


@pytest.mark.parametrize("name", NAMES)
def test_devices_are_keyed_by_the_cuda_ordinal(name):
    """TARGET_INFO_GPU.id is not always the CUDA ordinal that GPU rows carry (nsys-schema.md 1.2):
    the ordinal is TARGET_INFO_CUDA_DEVICE.cudaId, else TARGET_INFO_GPU.cuDevice."""
    tables = raw_tables(name)
    if "cuDevice" not in tables.get("TARGET_INFO_GPU", ()):
        return
    ordinal = dict(raw(name, "SELECT id, cuDevice FROM TARGET_INFO_GPU"))
    if "TARGET_INFO_CUDA_DEVICE" in tables:
        ordinal |= dict(raw(name, "SELECT gpuId, min(cudaId) FROM TARGET_INFO_CUDA_DEVICE GROUP BY gpuId"))
    expected = {ordinal[i]: bus for i, bus in raw(name, "SELECT id, busLocation FROM TARGET_INFO_GPU")}
    got = dict(query(name, "SELECT device_id, bus_location FROM devices WHERE bus_location IS NOT NULL"))
    assert got == expected
    used = {d for (d,) in query(name, "SELECT DISTINCT device_id FROM gpu_activity")}
    assert used <= set(got)


def test_gpu_ids_that_differ_from_the_cuda_ordinal():
    """cloverleaf (2024.5): TARGET_INFO_GPU id 3 is CUDA device 0, the one the kernels ran on."""
    name = "hpcgroup+pipit__perlmutter-cloverleaf-cuda"
    if name not in NAMES:
        pytest.skip(f"{name} not present")
    assert raw(name, "SELECT id, busLocation FROM TARGET_INFO_GPU WHERE cuDevice = 0") == [(3, "0000:03:00.0")]
    assert query(name, "SELECT device_id, bus_location FROM devices WHERE has_activity") == [(0, "0000:03:00.0")]


@pytest.mark.parametrize("name", NAMES)
def test_devices_without_target_info_gpu_come_from_the_activity(name):
    """No TARGET_INFO_GPU (2026.2 derived slice): every device that ran work is still listed."""
    tables = raw_tables(name)
    if "TARGET_INFO_GPU" in tables or "TARGET_INFO_CUDA_GPU" in tables or not has_gpu_rows(name):
        return
    used = {d for (d,) in query(name, "SELECT DISTINCT device_id FROM gpu_activity")}
    assert {d.device_id for d in report(name).metrics.devices} == used
    assert query(name, "SELECT count(*) FROM devices WHERE NOT has_activity") == [(0,)]


@pytest.mark.parametrize("name", NAMES)
def test_no_gpu_activity_gives_a_clear_report_and_exit_0(name):
    if has_gpu_rows(name):
        return
    r = report(name)
    assert r.headline.startswith("No CUDA activity was captured")
    assert r.findings == []
    status = {x.id: x.status for x in r.rules}
    assert all(s in ("passed", "skipped") for s in status.values()), status
    assert status["hot-kernels"] == status["gpu-idle-gaps"] == "skipped"
    done = subprocess.run([sys.executable, "-m", "nsys_diagnose", str(PUBLIC / f"{name}.sqlite")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2] == f"**{r.headline}**"


SAMPLED = [n for n in NAMES if raw_count(n, "COMPOSITE_EVENTS")]


@pytest.mark.parametrize("name", SAMPLED)
def test_gap_samples_count_the_raw_samples_of_each_host_code_gap(name):
    """gap_samples, counted again from the file: the samples of the gap's thread inside each
    steady-state host-code gap, by the function on top of the stack (stackDepth 0)."""
    gaps = query(name, "SELECT device_id, pid, tid, start_ns, end_ns, cause, detail FROM idle_gaps "
                       "WHERE in_steady_state AND cause IN ('nvtx', 'untraced')")
    expected: dict[tuple, int] = defaultdict(int)
    for device, pid, tid, start, end, cause, detail in gaps:
        (n,), = raw(name, "SELECT count(*) FROM COMPOSITE_EVENTS e "
                          "JOIN SAMPLING_CALLCHAINS c ON c.id = e.id AND c.stackDepth = 0 "
                          f"WHERE (e.globalTid >> 24) & 16777215 = {pid} AND e.globalTid & 16777215 = {tid} "
                          f"AND e.start >= {start} AND e.start < {end}")
        expected[(device, pid, cause, detail)] += n
    got = query(name, "SELECT device_id, pid, cause, detail, sum(samples), any_value(cause_samples) "
                      "FROM gap_samples GROUP BY ALL")
    assert {k: v for k, v in expected.items() if v} == {(d, p, c, x): n for d, p, c, x, n, _ in got}
    assert all(n == total for *_, n, total in got)


@needs_shared
def test_cpu_samples_name_the_host_code_of_the_saxpy_gaps():
    """saxpy-mpi computes on the host between its copies: the samples of its untraced gaps put
    two thirds of them in the program's own main (raw count: 1,188 of 1,757)."""
    name = "hpcgroup+pipit__saxpy-mpi-cuda_nsys_perlmutter0"
    if name not in SAMPLED:
        pytest.skip(f"{name} is not in ../shared")
    row = next(r for r in rows(name, "idle-gap-causes")[1] if r["cause"] == "untraced")
    assert (row["cpu_samples"], row["hot_code"], row["hot_pct"]) == (1757, "main in saxpy-mpi-cuda", 67.6)
    assert row["headline_cause"] == "idle in untraced host code (mostly main)"
