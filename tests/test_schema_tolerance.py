"""Schema drift across nsys versions, on small synthetic exports: the quirks one at a time (real
exports that show them are checked in test_public_exports.py). The normalized tables must look
the same whichever flavour of export they come from."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.ingest.database import open_trace
from nsys_diagnose.ingest.reader import discover
from nsys_diagnose.ingest.schema import detect_format
from nsys_diagnose.report import markdown

from .synth import write_export

READERS = ["scanner", "sqlite3"]
GPID = (1 << 48) + (100 << 24)   # pid 100
GTID = GPID + 7                  # its thread 7
NORMALIZED = ["kernels", "memcpys", "memsets", "api_calls", "syncs", "gpu_busy", "device_busy", "devices",
              "processes", "trace_window", "osrt_calls"]


def kernel(start, end, corr, device=0, **over) -> dict:
    return {"start": start, "end": end, "deviceId": device, "contextId": 1, "streamId": 7,
            "correlationId": corr, "globalPid": GPID, "demangledName": 2, "shortName": 2} | over


def memcpy(start, end, corr, kind=1, src=0, dst=2, **over) -> dict:
    return {"start": start, "end": end, "deviceId": 0, "contextId": 1, "streamId": 7, "correlationId": corr,
            "globalPid": GPID, "bytes": 1000, "copyKind": kind, "srcKind": src, "dstKind": dst} | over


def api(start, end, corr, name_id=1, event_class=0, **over) -> dict:
    return {"start": start, "end": end, "eventClass": event_class, "globalTid": GTID,
            "correlationId": corr, "nameId": name_id, "returnValue": 0} | over


STRINGS = [{"id": 1, "value": "cudaLaunchKernel_v7000"}, {"id": 2, "value": "my_kernel"},
           {"id": 3, "value": "cudaMemcpy_v3020"}, {"id": 4, "value": "cudaMemcpy"},
           {"id": 5, "value": "cuLaunchKernel"}]


def launches(n=3, every=10_000_000) -> dict[str, list[dict]]:
    """n kernel launches, 5 ms kernels 10 ms apart."""
    return {"StringIds": STRINGS,
            "CUPTI_ACTIVITY_KIND_RUNTIME": [api(1_000_000 + i * every, 1_005_000 + i * every, i + 1) for i in range(n)],
            "CUPTI_ACTIVITY_KIND_KERNEL": [kernel(1_010_000 + i * every, 6_010_000 + i * every, i + 1) for i in range(n)]}


def opened(tables, tmp_path: Path, reader="auto", name="export.sqlite"):
    path = tmp_path / name
    while path.exists():  # one test may build several exports
        path = path.with_name("x" + path.name)
    return open_trace(write_export(tables, path), use_cache=False, reader=reader)


def fetch(tables, tmp_path: Path, *sqls: str, reader="auto"):
    """The rows of each query over one ingest of `tables` (one list, or a tuple of lists)."""
    trace = opened(tables, tmp_path, reader)
    try:
        got = tuple(trace.con.execute(sql).fetchall() for sql in sqls)
        return got[0] if len(got) == 1 else got
    finally:
        trace.close()


def add_empty_table(path: Path, ddl: str) -> None:
    con = sqlite3.connect(path)
    con.execute(ddl)
    con.commit()
    con.close()


# --- ENUM tables ----------------------------------------------------------------------------------

ENUM_DDL = {"ENUM_CUDA_MEMCPY_OPER": "CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT)",
            "ENUM_CUDA_MEM_KIND": "CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT)"}


def copies() -> dict[str, list[dict]]:
    t = launches(1)
    t["CUPTI_ACTIVITY_KIND_MEMCPY"] = [memcpy(20_000_000, 21_000_000, 10, kind=1, src=0),
                                       memcpy(22_000_000, 23_000_000, 11, kind=8, src=2, dst=2),
                                       memcpy(24_000_000, 25_000_000, 12, kind=14, src=9, dst=2)]
    return t


KIND_SQL = "SELECT correlation_id, kind, src_kind, host_memory FROM memcpys ORDER BY correlation_id"


def test_absent_enum_tables_use_the_built_in_labels(tmp_path):
    """Before 2022.4 there are no ENUM tables; ids and labels are stable, so built-ins stand in.
    An id the built-ins do not know is 'Unknown', never a dropped row."""
    assert fetch(copies(), tmp_path, KIND_SQL) == [
        (10, "Host-to-Device", "Pageable", "pageable"), (11, "Device-to-Device", "Device", None),
        (12, "Unknown", "Unknown", None)]


@pytest.mark.parametrize("reader", READERS)
def test_empty_enum_tables_use_the_built_in_labels(tmp_path, reader):
    """2022.4 with --lazy=false writes every ENUM table, empty."""
    path = write_export(copies(), tmp_path / "lazy-false.sqlite")
    for ddl in ENUM_DDL.values():
        add_empty_table(path, ddl)
    trace = open_trace(path, use_cache=False, reader=reader)
    try:
        assert trace.con.execute(KIND_SQL).fetchall()[:2] == [
            (10, "Host-to-Device", "Pageable", "pageable"), (11, "Device-to-Device", "Device", None)]
    finally:
        trace.close()


def test_enum_tables_of_a_newer_nsys_add_ids_and_blank_labels_fall_back(tmp_path):
    t = copies()
    t["ENUM_CUDA_MEMCPY_OPER"] = [{"id": 1, "name": "HTOD", "label": ""},
                                  {"id": 8, "name": "DTOD", "label": "Device-to-Device"},
                                  {"id": 14, "name": "FUTURE", "label": "Future-Kind"}]
    t["ENUM_CUDA_MEM_KIND"] = [{"id": 0, "name": "PAGEABLE", "label": "Pageable"},
                               {"id": 9, "name": "FUTURE", "label": "Future-Memory"}]
    assert fetch(t, tmp_path, KIND_SQL) == [
        (10, "Host-to-Device", "Pageable", "pageable"), (11, "Device-to-Device", "Device", None),
        (12, "Future-Kind", "Future-Memory", None)]


# --- rows that are not real intervals, in any order --------------------------------------------------

def test_rows_without_a_real_interval_are_dropped_everywhere(tmp_path):
    """A zero start is a lost timestamp (nsys's own GPU rules keep `start > 0`): kept, it would
    stretch the trace window back to the clock's origin and make a call seconds long. A NULL
    end (a record cut off at the end of the capture) has no duration to count."""
    t = launches(2)
    t["CUPTI_ACTIVITY_KIND_KERNEL"] += [kernel(0, 8_000_000, 50), kernel(40_000_000, None, 55)]
    t["CUPTI_ACTIVITY_KIND_RUNTIME"] += [api(0, 9_000_000, 51), api(39_000_000, None, 55)]
    t["CUPTI_ACTIVITY_KIND_MEMCPY"] = [memcpy(0, 2_000_000, 52), memcpy(30_000_000, 30_001_000, 53)]
    t["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"] = [
        {"start": 0, "end": 3_000_000, "deviceId": 0, "contextId": 1, "streamId": 7, "correlationId": 54,
         "globalPid": GPID, "syncType": 3}]
    t["OSRT_API"] = [{"start": 0, "end": 4_000_000, "globalTid": GTID, "nameId": 4}]
    got = fetch(t, tmp_path, """
        SELECT (SELECT count(*) FROM kernels), (SELECT count(*) FROM api_calls), (SELECT count(*) FROM memcpys),
               (SELECT count(*) FROM syncs), (SELECT count(*) FROM osrt_calls), start_ns, end_ns FROM trace_window""")
    assert got == [(2, 2, 1, 0, 0, 1_000_000, 30_001_000)]


def digest(con, table: str) -> tuple[int, str]:
    rows = con.execute(f"SELECT * FROM {table}").fetchall()
    return len(rows), hashlib.sha256(repr(sorted(map(repr, rows))).encode()).hexdigest()


@pytest.mark.parametrize("reader", READERS)
def test_row_order_does_not_matter(tmp_path, reader):
    """nsys 2025.6+ may write rows in any order: shuffled tables give the same normalized tables,
    including busy time over overlapping kernels on two streams."""
    t = launches(40, every=3_000_000)  # 5 ms kernels every 3 ms: they overlap
    for i, k in enumerate(t["CUPTI_ACTIVITY_KIND_KERNEL"]):
        k["streamId"] = 7 + i % 2
    t["CUPTI_ACTIVITY_KIND_MEMCPY"] = [memcpy(200_000_000 + i * 1_000_000, 200_500_000 + i * 1_000_000, 100 + i)
                                       for i in range(10)]
    ordered = opened(t, tmp_path, reader, "ordered.sqlite")
    rng = random.Random(4)
    shuffled = {name: rng.sample(rows, len(rows)) for name, rows in t.items()}
    mixed = opened(shuffled, tmp_path, reader, "shuffled.sqlite")
    try:
        for table in NORMALIZED:
            assert digest(ordered.con, table) == digest(mixed.con, table), table
        # 40 kernels 3 ms apart, 5 ms long: one busy interval from the first start to the last end
        assert ordered.con.execute("SELECT start_ns, end_ns FROM device_busy ORDER BY start_ns LIMIT 1").fetchall() == [
            (1_010_000, 1_010_000 + 39 * 3_000_000 + 5_000_000)]
    finally:
        ordered.close()
        mixed.close()


# --- API rows -------------------------------------------------------------------------------------

def test_backtrace_duplicates_are_dropped(tmp_path):
    """--cudabacktrace adds an eventClass-67 row per slow call: same correlation id, a wider
    interval, the unsuffixed name. The call is counted once and still launches its copy."""
    t = launches(1)
    t["CUPTI_ACTIVITY_KIND_RUNTIME"] += [api(20_000_000, 40_000_000, 9, name_id=3),
                                         api(19_999_000, 40_001_000, 9, name_id=4, event_class=67)]
    t["CUPTI_ACTIVITY_KIND_MEMCPY"] = [memcpy(21_000_000, 39_000_000, 9)]
    calls, copy = fetch(t, tmp_path, "SELECT api, count(*), sum(duration_ns) FROM api_calls GROUP BY api ORDER BY api",
                        "SELECT launch_api, launch_start_ns FROM memcpys")
    assert calls == [("cudaLaunchKernel", 1, 5_000), ("cudaMemcpy", 1, 20_000_000)]
    assert copy == [("cudaMemcpy", 20_000_000)]


def test_driver_only_traces_join_kernels_to_driver_launches(tmp_path):
    """OpenMP offload and CUDA-Q call only the driver API (eventClass 1)."""
    t = launches(2)
    for row in t["CUPTI_ACTIVITY_KIND_RUNTIME"]:
        row |= {"eventClass": 1, "nameId": 5}
    kernels, calls = fetch(t, tmp_path, "SELECT launch_api, count(*) FROM kernels GROUP BY ALL",
                           "SELECT layer, category, count(*) FROM api_calls GROUP BY ALL")
    assert kernels == [("cuLaunchKernel", 2)] and calls == [("driver", "launch", 2)]


def test_query_calls_are_never_taken_for_launches(tmp_path):
    """A query such as cuKernelGetName starts no GPU work: it is categorized as one, and a GPU
    operation whose only correlated call is a query has no launch (not the query as its launch)."""
    t = launches(1)
    t["StringIds"] = t["StringIds"] + [{"id": 90, "value": "cuKernelGetName"}]
    t["CUPTI_ACTIVITY_KIND_RUNTIME"] += [api(30_000_000, 30_001_000, 7, name_id=90, event_class=1)]
    t["CUPTI_ACTIVITY_KIND_KERNEL"] += [kernel(31_000_000, 32_000_000, 7)]
    calls, kernels = fetch(t, tmp_path, "SELECT api, category FROM api_calls ORDER BY api",
                           "SELECT correlation_id, launch_api FROM kernels ORDER BY correlation_id")
    assert calls == [("cuKernelGetName", "query"), ("cudaLaunchKernel", "launch")]
    assert kernels == [(1, "cudaLaunchKernel"), (7, None)]


# --- devices ----------------------------------------------------------------------------------------

def gpu(id_, cu_device, name, bus, **over) -> dict:
    return {"vmId": 1, "id": id_, "cuDevice": cu_device, "name": name, "busLocation": bus, "smCount": 132} | over


DEVICE_SQL = "SELECT device_id, name, bus_location, has_activity FROM devices ORDER BY device_id"


def test_device_ids_come_from_the_cuda_device_map(tmp_path):
    """TARGET_INFO_GPU.id is the profiler's GPU id; GPU rows carry the CUDA ordinal. The map
    (TARGET_INFO_CUDA_DEVICE, 2025.3+) wins over cuDevice, and cuDevice over id."""
    t = launches(1)
    t["CUPTI_ACTIVITY_KIND_KERNEL"][0]["deviceId"] = 1
    t["TARGET_INFO_GPU"] = [gpu(0, 0, "GPU-A", "0000:01:00.0"), gpu(1, 1, "GPU-B", "0000:02:00.0")]
    t["TARGET_INFO_CUDA_DEVICE"] = [{"gpuId": 0, "cudaId": 1, "pid": 100}, {"gpuId": 1, "cudaId": 0, "pid": 100}]
    assert fetch(t, tmp_path, DEVICE_SQL) == [(0, "GPU-B", "0000:02:00.0", False), (1, "GPU-A", "0000:01:00.0", True)]
    del t["TARGET_INFO_CUDA_DEVICE"]
    t["TARGET_INFO_GPU"] = [gpu(0, 1, "GPU-A", "0000:01:00.0"), gpu(1, 0, "GPU-B", "0000:02:00.0")]
    assert fetch(t, tmp_path, DEVICE_SQL) == [(0, "GPU-B", "0000:02:00.0", False), (1, "GPU-A", "0000:01:00.0", True)]


def test_pre_2021_cuda_gpu_table_names_devices(tmp_path):
    """The oldest exports describe GPUs in TARGET_INFO_CUDA_GPU, with other column names."""
    t = launches(1)
    t["TARGET_INFO_CUDA_GPU"] = [{"vmId": 1, "name": "Old GPU", "deviceId": 0, "numMultiprocessors": 68,
                                  "globalMemorySize": 10 << 30, "computeCapabilityMajor": 8,
                                  "computeCapabilityMinor": 6, "pid": 100}]
    assert fetch(t, tmp_path, "SELECT device_id, name, sm_count, memory_bytes, compute_major FROM devices") == [
        (0, "Old GPU", 68, 10 << 30, 8)]


def test_missing_target_info_gpu_lists_devices_from_their_activity(tmp_path):
    t = launches(2)
    t["CUPTI_ACTIVITY_KIND_KERNEL"][1]["deviceId"] = 3
    r = analyze(write_export(t, tmp_path / "no-gpu-info.sqlite"), use_cache=False)
    assert [(d.device_id, d.name) for d in r.metrics.devices] == [(0, None), (3, None)]
    assert "None" not in markdown.render(r)


# --- which exporter wrote it -------------------------------------------------------------------------

def meta(version: str, schema: str) -> list[dict]:
    return [{"name": "EXPORT_PRODUCT_VERSION", "value": version}, {"name": "EXPORT_SCHEMA_VERSION", "value": schema}]


FLAVOURS = [
    ("meta-data-export", {"META_DATA_EXPORT": meta("2026.2.1.210", "3.25.0")}, "META_DATA_EXPORT"),
    ("export-meta-data", {"EXPORT_META_DATA": meta("2022.4.2.1", "3.0.0")}, "EXPORT_META_DATA"),
    ("meta-data-export", {"META_DATA_EXPORT": meta("2023.3.1.92", "3.4.0"),
                          "EXPORT_META_DATA": meta("2022.4.2.1", "3.0.0")}, "META_DATA_EXPORT"),
    ("pre-2021.4-c", {"TARGET_INFO_GPU": [gpu(0, 0, "G", "b")]}, None),
    ("pre-2021.4-b", {"TARGET_INFO_GPU": [{"vmId": 1, "deviceId": 0, "name": "G", "busLocation": "b"}],
                      "TARGET_INFO_CUDA_GPU": [{"vmId": 1, "name": "G", "deviceId": 0}]}, None),
    ("pre-2021.4-a", {"TARGET_INFO_CUDA_GPU": [{"vmId": 1, "name": "G", "deviceId": 0}]}, None),
    ("pre-2021.4", {}, None),
]


@pytest.mark.parametrize("flavour,extra,meta_table", FLAVOURS, ids=[f"{f[0]}-{i}" for i, f in enumerate(FLAVOURS)])
def test_exporter_is_detected_from_the_tables_present(tmp_path, flavour, extra, meta_table):
    t = launches(1)
    t["CUPTI_ACTIVITY_KIND_RUNTIME"][0]["callchainId"] = None  # present since flavour B
    found = detect_format(discover(write_export(t | extra, tmp_path / "flavour.sqlite")))
    assert (found["export_meta_table"], found["schema_flavour"]) == (meta_table, flavour)


def test_versions_come_from_the_newer_metadata_table(tmp_path):
    """2023.3 renamed EXPORT_META_DATA to META_DATA_EXPORT; should a file hold both, the newer wins."""
    t = launches(1) | {"META_DATA_EXPORT": meta("2023.3.1.92", "3.4.0"), "EXPORT_META_DATA": meta("2022.4.2.1", "3.0.0")}
    inp = analyze(write_export(t, tmp_path / "both.sqlite"), use_cache=False).input
    assert (inp.export_meta_table, inp.schema_flavour, inp.nsys_version, inp.export_schema_version) == (
        "META_DATA_EXPORT", "meta-data-export", "2023.3.1.92", "3.4.0")


def test_oldest_flavour_is_told_by_its_api_columns(tmp_path):
    """No metadata and no GPU tables (a CPU-side capture): the API table lacks callchainId."""
    r = analyze(write_export(launches(1), tmp_path / "oldest.sqlite"), use_cache=False)
    assert r.input.schema_flavour == "pre-2021.4-a"
    assert "nsys version unknown (before 2021.4" in markdown.render(r)


def test_features_follow_the_columns(tmp_path):
    t = launches(1)
    t["CUPTI_ACTIVITY_KIND_KERNEL"][0] |= {"mangledName": 2, "greenContextId": None}
    t["ENUM_CUDA_MEM_KIND"] = [{"id": 0, "name": "PAGEABLE", "label": "Pageable"}]
    t["TARGET_INFO_CUDA_DEVICE"] = [{"gpuId": 0, "cudaId": 0, "pid": 100}]
    found = detect_format(discover(write_export(t, tmp_path / "features.sqlite")))
    assert found["features"] == ["cuda-device-map", "enum-tables", "green-contexts", "kernel-mangled-names"]


def test_derived_time_window_is_reported_with_its_cut_launches(tmp_path):
    """A slice cut from a longer export (nsys-ai's DERIVED_* keys): kernels whose launch lies
    before the window keep their time but have no launch API; the report says how many."""
    t = launches(3)
    t["CUPTI_ACTIVITY_KIND_RUNTIME"].pop(0)  # the first launch fell before the window
    t["META_DATA_EXPORT"] = meta("2026.2.1.210", "3.25.0") + [
        {"name": "DERIVED_FROM", "value": "full.sqlite"}, {"name": "DERIVED_WINDOW_NS", "value": "1000000-30000000"}]
    r = analyze(write_export(t, tmp_path / "derived.sqlite"), use_cache=False)
    assert r.input.derived == {"from": "full.sqlite", "window_start_ns": 1_000_000, "window_end_ns": 30_000_000,
                               "gpu_ops": 3, "gpu_ops_without_api": 1}
    assert r.metrics.kernel_count == 3
    assert "Derived export: a 29 ms window of full.sqlite. 1 of 3 GPU operations" in markdown.render(r)


def test_api_calls_without_gpu_work_say_no_cuda_activity(tmp_path):
    t = {"StringIds": STRINGS, "CUPTI_ACTIVITY_KIND_RUNTIME": [api(1_000_000, 2_000_000, 1, name_id=5, event_class=1)]}
    r = analyze(write_export(t, tmp_path / "api-only.sqlite"), use_cache=False)
    assert r.headline.startswith("No CUDA activity was captured")
    assert {x.id: x.status for x in r.rules if x.id in ("hot-kernels", "gpu-idle-gaps", "transfer-share")} == {
        "hot-kernels": "skipped", "gpu-idle-gaps": "skipped", "transfer-share": "skipped"}
    assert not r.findings
