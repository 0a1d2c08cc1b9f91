"""What a batch leaves beside the per-report files: summary.md for people, and two Parquet
datasets for queries (DuckDB: `SELECT * FROM 'out/reports.parquet'`; polars: pl.read_parquet):

- reports.parquet: one row per input (analyzed, failed or skipped): status, error, every
  scalar of the report's `metrics` block, its coverage (complete, partial or could-not-look, and
  the gaps' ids: docs/coverage.md), the leading steady state (bound, verdict_class, verdict,
  steady_utilization_pct,
  steady_step_median_ns, its pid and device), devices and processes as lists of structs, the top
  finding (severity, recoverable time, pid, device), the report's recoverable time (recoverable_ns:
  every finding's, docs/recoverable.md) and top kernel, the rule statuses, and the
  rank-of-a-job columns;
- findings.parquet: one row per finding of every report, with its severity, recoverable time,
  pid and device, and the steady-state figures of its (device, process).

Both, and summary.md's table, list the most severe first, then by the time fixes can give back
(reports: every finding's recoverable time, recoverable_ns; findings: their own, in the order
each report ranks its findings: analyze.rank), failed and skipped inputs last.
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
from nsys_diagnose.engine.model import SEVERITY_RANK
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
# the leading steady state (the (device, process) with the most GPU work) and the top finding's
# place: columns of their own, not only inside the JSON
STEADY = {"coverage": STR, "coverage_gaps": pa.list_(STR),
          "bound": STR, "verdict_class": STR, "verdict": STR, "recoverable_ns": I64,
          "steady_utilization_pct": F64, "steady_step_median_ns": I64, "steady_steps": I64,
          "steady_window_ns": I64, "steady_pid": I64, "steady_device_id": I64,
          "top_finding_recoverable_ns": I64, "top_finding_pid": I64, "top_finding_device_id": I64}
FINDING_TYPES = {"name": STR, "path": STR, "finding_rank": I64, "rule_id": STR, "severity": STR,
                 "recoverable_ns": I64, "impact_ns": I64, "pid": I64, "device_id": I64, "bound": STR, "verdict_class": STR,
                 "steady_utilization_pct": F64, "steady_step_median_ns": I64, "claim": STR,
                 "message": STR, "fix": STR, "evidence_json": STR}


def int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def lead_steady(steady: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The report's leading steady state: as analyses.budget.primary picks it, most GPU work first."""
    return max(steady, key=lambda s: (s.get("busy_ns") or 0, s.get("window_ns") or 0), default=None)


def place(evidence: dict[str, Any], steady: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """(pid, device) a finding is about: its evidence's; a process-wide finding gets the device of
    its process's steady state where the process has one device only."""
    pid, dev = int_or_none(evidence.get("pid")), int_or_none(evidence.get("device_id"))
    if dev is None and pid is not None:
        devices = {s.get("device_id") for s in steady if s.get("pid") == pid}
        dev = devices.pop() if len(devices) == 1 else None
    return pid, dev


def order_key(severity: str | None, recoverable_ns: int | None, impact_ns: int | None) -> tuple:
    """analyze.rank's order across reports: most severe; drawn on the budget, by recoverable time;
    the others by time at stake; a budget slice holding nothing last. No finding after info."""
    group = 2 if recoverable_ns == 0 else 1 if recoverable_ns is None else 0
    time = recoverable_ns if recoverable_ns is not None else impact_ns or 0
    return (-SEVERITY_RANK.get(severity, -1), group, -time)


def record_key(rec: dict[str, Any]) -> tuple:
    """Failed and skipped last; then the most severe top finding; then the time the report's fixes
    could win (recoverable_ns: every finding's recoverable time, each budget slice counted once,
    docs/recoverable.md), never a time at stake the trace does not bound."""
    failed = {"ok": 0, "error": 1}.get(rec["status"], 2)
    return (failed, -SEVERITY_RANK.get(rec.get("top_finding_severity"), -1), -(rec.get("recoverable_ns") or 0),
            rec["name"].lower())


def ranked(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=record_key)


def record(out: Outcome, json_file: str | None, report_file: str | None) -> dict[str, Any]:
    """The reports.parquet row of one outcome (and the fields summary.md and ranks.py read)."""
    rec: dict[str, Any] = {k: None for k in (*HEAD, *METRIC_TYPES, *STEADY, *TAIL)}
    rec.update(name=out.name, path=out.path, status=out.status, error=out.error, cached=out.cached,
               seconds=round(out.seconds, 3), json_file=json_file, report_file=report_file)
    if out.status != "ok" or not out.json_text:
        return rec
    doc = json.loads(out.json_text)
    m, inp, facts = doc["metrics"], doc["input"], out.facts
    rec.update({k: inp.get(k) for k in ("nsys_version", "export_schema_version", "size_bytes", "reader")})
    rec["headline"] = doc.get("headline")
    coverage = doc.get("coverage") or {}
    rec["coverage"] = coverage.get("status")
    rec["coverage_gaps"] = [g.get("id") for g in coverage.get("gaps") or []]
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
        _findings=findings, _top_kernel_short=facts.get("top_kernel_short"), _steady=doc.get("steady", []))
    lead = lead_steady(doc.get("steady", []))
    pid, dev = place(top.get("evidence") or {}, doc.get("steady", []))
    rec.update(
        bound=lead["bound"] if lead else None, verdict_class=lead.get("verdict_class") if lead else None,
        verdict=lead.get("verdict") if lead else None,
        recoverable_ns=sum(f["recoverable_ns"] for f in findings if f.get("recoverable_ns") is not None),
        steady_utilization_pct=doc.get("steady_utilization_pct"),
        steady_step_median_ns=doc.get("step_median_ns"), steady_steps=lead.get("steps") if lead else None,
        steady_window_ns=lead["window_ns"] if lead else None, steady_pid=lead["pid"] if lead else None,
        steady_device_id=lead["device_id"] if lead else None,
        top_finding_recoverable_ns=top.get("recoverable_ns"), top_finding_pid=pid, top_finding_device_id=dev)
    return rec


def _table(rows: list[dict[str, Any]], types: dict[str, pa.DataType]) -> pa.Table:
    cols = {}
    for name, typ in types.items():
        cols[name] = pa.array([r.get(name) for r in rows], type=typ)
    return pa.table(cols)


def reports_table(records: list[dict[str, Any]]) -> pa.Table:
    records = ranked(records)
    known = set(HEAD) | set(METRIC_TYPES) | set(STEADY) | set(TAIL)
    extra = sorted({k for r in records for k in r if not k.startswith("_")} - known)
    table = _table(records, {**HEAD, **METRIC_TYPES})
    for name in extra:  # metrics that later versions add: keep them, typed from their values
        table = table.append_column(name, pa.array([r.get(name) for r in records]))
    for name, typ in {**STEADY, **TAIL}.items():
        table = table.append_column(name, pa.array([r.get(name) for r in records], type=typ))
    return table


def findings_table(records: list[dict[str, Any]]) -> pa.Table:
    rows = []
    for rec in records:
        steady = {(s.get("device_id"), s.get("pid")): s for s in rec.get("_steady") or []}
        lead = lead_steady(rec.get("_steady") or [])
        for i, f in enumerate(rec.get("_findings") or [], 1):
            ev = f.get("evidence") or {}
            pid, dev = place(ev, rec.get("_steady") or [])
            # its own (device, process)'s steady state; one of its process's, else the report's lead
            own = steady.get((dev, pid)) or next((s for (d, p), s in steady.items() if p == pid), None) or lead
            rows.append({"name": rec["name"], "path": rec["path"], "finding_rank": i, "rule_id": f["rule_id"],
                         "severity": f["severity"], "recoverable_ns": f.get("recoverable_ns"),
                         "impact_ns": f.get("impact_ns"), "pid": pid, "device_id": dev,
                         "bound": own["bound"] if own else None, "verdict_class": own.get("verdict_class") if own else None,
                         "steady_utilization_pct": own["busy_pct"] if own else None,
                         "steady_step_median_ns": own.get("step_median_ns") if own else None,
                         "claim": f.get("claim"), "message": f["message"], "fix": f.get("fix"),
                         "evidence_json": json.dumps(ev, ensure_ascii=False, default=str)})
    rows.sort(key=lambda r: (*order_key(r["severity"], r["recoverable_ns"], r["impact_ns"]), r["name"].lower(),
                             r["finding_rank"]))
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


def busy_cell(r: dict[str, Any]) -> str:
    """The leading steady state's GPU busy share, else the whole window's (marked so)."""
    if r.get("steady_utilization_pct") is not None:
        return pct(r["steady_utilization_pct"])
    return f"{pct(r['gpu_utilization_pct'])} (window)" if r.get("gpu_utilization_pct") is not None else ""


def step_cell(r: dict[str, Any]) -> str:
    return duration(r["steady_step_median_ns"]) if r.get("steady_step_median_ns") else ""


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
    lines += ["", "| report | status | verdict | steady GPU busy | step median | severity | headline "
                  "| recoverable (all findings) | pid · GPU | top kernel |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in ranked(records):
        if r["status"] == "ok":
            finding = html_index.finding_text(r)  # whole: at most 30 words (headline.py)
            kernel = r.get("_top_kernel_short") or r["top_kernel"]
            kernel = f"{_cell(kernel, 60)} ({pct(r['top_kernel_share_pct'])})" if kernel else ""
            lines.append(f"| {_link(r)} | {_cell(html_index.status_text(r))} | {r.get('verdict_class') or r['bound'] or ''} | {busy_cell(r)} | {step_cell(r)} "
                         f"| {r['top_finding_severity'] or ''} | {_cell(finding, 1000)} | {html_index.stake_text(r)} | {html_index.place_text(r, '')} "
                         f"| {kernel} |")
        else:
            lines.append(f"| {_cell(r['name'])} | {r['status']} | | | | | {_cell(r['error'])} | | | |")
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
              "`duckdb.sql(\"SELECT name, verdict, steady_utilization_pct, top_finding_severity, top_finding_message FROM "
              "'reports.parquet' ORDER BY recoverable_ns DESC\")` (Python, `import duckdb`)."]
    return "\n".join(lines) + "\n"


def write(out_dir: Path, records: list[dict[str, Any]], jobs: list[Job], *, seconds: float,
          interrupted: int = 0) -> None:
    write_atomic(out_dir / "reports.parquet", parquet_bytes(reports_table(records)))
    write_atomic(out_dir / "findings.parquet", parquet_bytes(findings_table(records)))
    write_atomic(out_dir / "summary.md", markdown(records, jobs, seconds=seconds, interrupted=interrupted))
    html_index.write_index(out_dir, ranked(records), jobs, seconds=seconds, interrupted=interrupted)
