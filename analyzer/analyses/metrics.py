"""Whole-trace figures of the report's `metrics` block (definitions in README, JSON contract)."""

from __future__ import annotations

import re
from typing import Any

import duckdb
from nsys_diagnose.engine.model import DeviceMetrics, Metrics, ProcessMetrics
from nsys_diagnose.ingest.sql_library import query


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0


def compute(con: duckdb.DuckDBPyConnection) -> Metrics:
    start, end, span = con.execute(query("report_window")).fetchone()
    devices = con.execute(query("report_device_busy")).fetchall()
    procs = con.execute(query("report_process_busy")).fetchall()
    k_ns, k_n, c_ns, c_n, s_ns, s_n, a_ns, a_n = con.execute(query("report_totals")).fetchone()
    busy = sum(d[2] for d in devices)
    return Metrics(
        span_ns=span, window_start_ns=start, window_end_ns=end,
        gpu_busy_ns=busy, gpu_utilization_pct=_pct(busy, span * len(devices)),
        kernel_ns=k_ns, memcpy_ns=c_ns, memset_ns=s_ns, kernel_count=k_n,
        memcpy_count=c_n, memset_count=s_n, api_ns=a_ns, api_count=a_n,
        devices=[DeviceMetrics(device_id=d, name=n, busy_ns=b, utilization_pct=_pct(b, span))
                 for d, n, b in devices],
        processes=[ProcessMetrics(pid=p, name=n, device_id=d, busy_ns=b, utilization_pct=_pct(b, span))
                   for p, n, d, b in procs],
    )


def export_versions(con: duckdb.DuckDBPyConnection) -> tuple[str | None, str | None]:
    """(nsys version, export schema version) from META_DATA_EXPORT / EXPORT_META_DATA; None when
    the export predates both tables (before 2021.4)."""
    meta = dict(con.execute(query("report_export_meta")).fetchall())
    return meta.get("EXPORT_PRODUCT_VERSION"), meta.get("EXPORT_SCHEMA_VERSION")


def export_info(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The report's `input` keys about where the export came from: the versions (metadata rows),
    the metadata table and schema flavour (decided from the columns present, at ingest), and,
    for a time-window slice of another export (DERIVED_* metadata keys), its origin and window."""
    nsys_version, schema_version = export_versions(con)
    table, flavour, features = con.execute(query("report_export_format")).fetchone()
    meta = dict(con.execute(query("report_export_meta")).fetchall())
    return {"nsys_version": nsys_version, "export_schema_version": schema_version,
            "export_meta_table": table, "schema_flavour": flavour, "features": list(features or []),
            "derived": _derived(con, meta)}


def _derived(con: duckdb.DuckDBPyConnection, meta: dict[str, str]) -> dict[str, Any] | None:
    keys: dict[str, Any] = {k.removeprefix("DERIVED_").lower(): v for k, v in meta.items() if k.startswith("DERIVED_")}
    if not keys:
        return None
    # The cut separates GPU work from the API calls that launched it: say how much.
    keys["gpu_ops"], keys["gpu_ops_without_api"] = con.execute(query("report_gpu_ops")).fetchone()
    window = re.fullmatch(r"\s*(-?\d+)\s*-\s*(-?\d+)\s*", keys.get("window_ns") or "")
    if window:
        del keys["window_ns"]
        keys["window_start_ns"], keys["window_end_ns"] = int(window[1]), int(window[2])
    return keys
