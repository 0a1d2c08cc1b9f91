"""What a batch leaves beside the per-report files: summary.md for people, and two Parquet
datasets for queries (DuckDB: `SELECT * FROM 'out/reports.parquet'`; polars: pl.read_parquet):

- reports.parquet: one row per input (analyzed, failed or skipped): status, error, every
  scalar of the report's `metrics` block, devices and processes as lists of structs, the top
  finding and top kernel, the rule statuses, and the rank-of-a-job columns;
- findings.parquet: one row per finding of every report, ranked as in its report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
from nsys_diagnose import __version__
from nsys_diagnose.batch.ranks import Job
from nsys_diagnose.batch.work import Outcome
from nsys_diagnose.output import write_atomic
from nsys_diagnose.report import html_index
from nsys_diagnose.text import inline
from nsys_diagnose.units import duration, pct

I64, F64, STR, BOOL = pa.int64(), pa.float64(), pa.string(), pa.bool_()
METRIC_TYPES = {  # the JSON contract's scalars; later metrics are added with inferred types
    "span_ns": I64, "window_start_ns": I64, "window_end_ns": I64, "gpu_busy_ns": I64,
    "gpu_utilization_pct": F64, "kernel_ns": I64, "memcpy_ns": I64, "memset_ns": I64,
    "kernel_count": I64, "memcpy_count": I64, "memset_count": I64, "api_ns": I64, "api_count": I64,
}
DEVICE = pa.struct([("device_id", I64), ("name", STR), ("busy_ns", I64), ("utilization_pct", F64)])
PROCESS = pa.struct([("pid", I64), ("name", STR), ("device_id", I64), ("busy_ns", I64), ("utilization_pct", F64)])
RULE = pa.struct([("id", STR), ("status", STR), ("reason", STR), ("findings", I64), ("seconds", F64)])
HEAD = {"name": STR, "path": STR, "status": STR, "error": STR, "cached": BOOL, "seconds": F64,
        "json_file": STR, "report_file": STR, "nsys_version": STR, "export_schema_version": STR,
        "size_bytes": I64, "reader": STR, "headline": STR}
TAIL = {"device_count": I64, "process_count": I64, "devices": pa.list_(DEVICE), "processes": pa.list_(PROCESS),
        "finding_count": I64, "error_findings": I64, "warning_findings": I64, "info_findings": I64,
        "top_finding_rule": STR, "top_finding_severity": STR, "top_finding_message": STR,
        "top_finding_impact_ns": I64, "top_kernel": STR, "top_kernel_ns": I64, "top_kernel_share_pct": F64,
        "rules": pa.list_(RULE), "program": STR, "kernel_set": STR, "gpu_uuids": pa.list_(STR),
        "pids": pa.list_(I64), "step_count": I64, "step_median_ns": I64, "step_source": STR,
        "job": STR, "straggler": BOOL, "straggler_reason": STR}
FINDING_TYPES = {"name": STR, "path": STR, "finding_rank": I64, "rule_id": STR, "severity": STR,
                 "message": STR, "impact_ns": I64, "fix": STR, "evidence_json": STR}


def record(out: Outcome, json_file: str | None, report_file: str | None) -> dict[str, Any]:
    """The reports.parquet row of one outcome (and the fields summary.md and ranks.py read)."""
    rec: dict[str, Any] = {k: None for k in (*HEAD, *METRIC_TYPES, *TAIL)}
    rec.update(name=out.name, path=out.path, status=out.status, error=out.error, cached=out.cached,
               seconds=round(out.seconds, 3), json_file=json_file, report_file=report_file)
    if out.status != "ok" or not out.json_text:
        return rec
    doc = json.loads(out.json_text)
    m, inp, facts = doc["metrics"], doc["input"], out.facts
    rec.update({k: inp.get(k) for k in ("nsys_version", "export_schema_version", "size_bytes", "reader")})
    rec["headline"] = doc.get("headline")
    rec.update({k: v for k, v in m.items() if not isinstance(v, (list, dict))})
    findings = doc.get("findings", [])
    top = findings[0] if findings else {}
    sev = [f["severity"] for f in findings]
    rec.update(
        device_count=len(m.get("devices", [])), process_count=len(m.get("processes", [])),
        devices=[{k: d.get(k) for k in DEVICE.names} for d in m.get("devices", [])],
        processes=[{k: p.get(k) for k in PROCESS.names} for p in m.get("processes", [])],
        finding_count=len(findings), error_findings=sev.count("error"), warning_findings=sev.count("warning"),
        info_findings=sev.count("info"), top_finding_rule=top.get("rule_id"),
        top_finding_severity=top.get("severity"), top_finding_message=top.get("message"),
        top_finding_impact_ns=top.get("impact_ns"),
        rules=[{"id": r["id"], "status": r["status"], "reason": r.get("reason"),
                "findings": len(r.get("findings", [])), "seconds": r.get("seconds")} for r in doc.get("rules", [])],
        top_kernel=facts.get("top_kernel"), top_kernel_ns=facts.get("top_kernel_ns"),
        top_kernel_share_pct=(round(100.0 * facts["top_kernel_ns"] / m["kernel_ns"], 2)
                              if facts.get("top_kernel_ns") and m.get("kernel_ns") else None),
        **{k: facts.get(k) for k in ("program", "kernel_set", "gpu_uuids", "pids", "step_count",
                                     "step_median_ns", "step_source")},
        _findings=findings, _top_kernel_short=facts.get("top_kernel_short"))
    return rec


def _table(rows: list[dict[str, Any]], types: dict[str, pa.DataType]) -> pa.Table:
    cols = {}
    for name, typ in types.items():
        cols[name] = pa.array([r.get(name) for r in rows], type=typ)
    return pa.table(cols)


def reports_table(records: list[dict[str, Any]]) -> pa.Table:
    extra = sorted({k for r in records for k in r if not k.startswith("_")} - set(HEAD) - set(METRIC_TYPES) - set(TAIL))
    table = _table(records, {**HEAD, **METRIC_TYPES})
    for name in extra:  # metrics that later versions add: keep them, typed from their values
        table = table.append_column(name, pa.array([r.get(name) for r in records]))
    for name, typ in TAIL.items():
        table = table.append_column(name, pa.array([r.get(name) for r in records], type=typ))
    return table


def findings_table(records: list[dict[str, Any]]) -> pa.Table:
    rows = []
    for rec in records:
        for i, f in enumerate(rec.get("_findings") or [], 1):
            rows.append({"name": rec["name"], "path": rec["path"], "finding_rank": i, "rule_id": f["rule_id"],
                         "severity": f["severity"], "message": f["message"], "impact_ns": f.get("impact_ns"),
                         "fix": f.get("fix"),
                         "evidence_json": json.dumps(f.get("evidence", {}), ensure_ascii=False, default=str)})
    return _table(rows, FINDING_TYPES)


def parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _cell(text: Any, limit: int = 160) -> str:
    """A table cell: one line, no control character (names come from the traced program and
    the file system), '|' escaped, cut at `limit` characters."""
    s = "" if text is None else inline(text)
    s = s if len(s) <= limit else s[: limit - 3] + "..."
    return s.replace("|", "\\|")


def _link(rec: dict[str, Any]) -> str:
    target = rec.get("report_file") or rec.get("json_file")
    return f"[{_cell(rec['name'])}]({quote(target)})" if target else _cell(rec["name"])


def markdown(records: list[dict[str, Any]], jobs: list[Job], *, seconds: float, interrupted: int = 0) -> str:
    ok = [r for r in records if r["status"] == "ok"]
    errors = [r for r in records if r["status"] == "error"]
    skipped = [r for r in records if r["status"] == "skipped"]
    cached = sum(1 for r in ok if r["cached"])
    lines = [f"# nsys-diagnose batch: {len(records)} input(s)", "",
             f"{len(ok)} analyzed ({cached} from the result cache) · {len(errors)} failed · "
             f"{len(skipped)} skipped · {duration(seconds * 1e9)} · nsys-diagnose {__version__}"]
    if interrupted:
        lines += ["", f"**Interrupted: {interrupted} input(s) were not analyzed; this summary covers "
                      f"the ones that finished.**"]
    lines += ["", "| report | status | GPU utilization | headline finding | at stake | top kernel |",
              "|---|---|---|---|---|---|"]
    for r in records:
        if r["status"] == "ok":
            finding = r["top_finding_message"] or r["headline"]
            stake = duration(r["top_finding_impact_ns"]) if r["top_finding_impact_ns"] is not None else ""
            kernel = r.get("_top_kernel_short") or r["top_kernel"]
            kernel = f"{_cell(kernel, 60)} ({pct(r['top_kernel_share_pct'])})" if kernel else ""
            lines.append(f"| {_link(r)} | ok | {pct(r['gpu_utilization_pct'])} | {_cell(finding)} | {stake} | {kernel} |")
        else:
            lines.append(f"| {_cell(r['name'])} | {r['status']} | | {_cell(r['error'])} | | |")
    if errors:
        lines += ["", "## Failed", ""] + [f"- `{_cell(r['path'])}`: {_cell(r['error'], 400)}" for r in errors]
    if skipped:
        lines += ["", "## Skipped", ""] + [f"- `{_cell(r['path'])}`: {_cell(r['error'], 400)}" for r in skipped]
    for job in jobs:
        lines += ["", f"## Ranks of one job ({job.label}): {len(job.members)} reports of `{_cell(job.program, 200)}`", ""]
        basis = "median step time and GPU busy share" if job.by_steps else \
            "GPU busy share (no step times in these exports)"
        lines += [f"Stragglers judged by {basis}, against the job's median.", "",
                  "| rank | GPU | pid | steps | step time (median) | GPU busy | straggler |", "|---|---|---|---|---|---|---|"]
        for r in job.members:
            gpus = ", ".join(u[:12] for u in r["gpu_uuids"] or []) or ", ".join(
                (d.get("name") or f"GPU {d['device_id']}") for d in r["devices"] or [])
            steps = f"{r['step_count']:,}" if r["step_count"] else "n/a"
            step = duration(r["step_median_ns"]) if r["step_median_ns"] else "n/a"
            mark = f"**yes**: {_cell(job.stragglers[r['name']], 200)}" if r["name"] in job.stragglers else "no"
            lines.append(f"| {_link(r)} | {_cell(gpus, 60)} | {', '.join(map(str, r['pids'] or []))} | {steps} "
                         f"| {step} | {pct(r['gpu_utilization_pct'])} | {mark} |")
        named = ", ".join(job.stragglers) or "none"
        lines += ["", f"Stragglers: {named}."]
    lines += ["", "Every report's metrics: `reports.parquet`; every finding: `findings.parquet`, e.g. "
              "`duckdb -c \"SELECT name, gpu_utilization_pct, top_finding_message FROM 'reports.parquet' "
              "ORDER BY top_finding_impact_ns DESC\"`."]
    return "\n".join(lines) + "\n"


def write(out_dir: Path, records: list[dict[str, Any]], jobs: list[Job], *, seconds: float,
          interrupted: int = 0) -> None:
    write_atomic(out_dir / "reports.parquet", parquet_bytes(reports_table(records)))
    write_atomic(out_dir / "findings.parquet", parquet_bytes(findings_table(records)))
    write_atomic(out_dir / "summary.md", markdown(records, jobs, seconds=seconds, interrupted=interrupted))
    html_index.write_index(out_dir, records, jobs, seconds=seconds, interrupted=interrupted)
