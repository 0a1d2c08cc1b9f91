"""Ranks of one job: reports of the same program captured on different GPUs (or processes).

Two reports are ranks of one job when they profiled the same program (the same command line
in META_DATA_CAPTURE; where an export has none, the same set of kernel names) and each ran on
GPUs of its own: the set of GPU UUIDs where the export has them, else the set of pids. Reports
of one program that share a GPU are repeated runs (e.g. nightlies), not ranks, and get no table.

Stragglers, against the job's median (robust to the straggler itself):
- median step time (the `steps` table, where every rank has steps) at least STEP_SLOWER_PCT
  longer: this rank's steps are slow;
- GPU busy share at least BUSY_BELOW_POINTS percentage points lower: its GPU waits on its host
  (input, launches), and in a synchronous job every other rank then waits for it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from nsys_diagnose.units import duration, pct

STEP_SLOWER_PCT = 10.0
BUSY_BELOW_POINTS = 10.0


@dataclass
class Job:
    label: str
    program: str
    members: list[dict[str, Any]]          # report records (summary.record), sorted by name
    by_steps: bool                         # every rank has step times
    median_step_ns: int | None
    median_busy_pct: float
    stragglers: dict[str, str] = field(default_factory=dict)   # name -> why


def program_of(rec: dict[str, Any]) -> str | None:
    if rec.get("program"):
        return rec["program"]
    return f"kernel set {rec['kernel_set']}" if rec.get("kernel_set") else None


def identity(rec: dict[str, Any]) -> tuple:
    return ("gpu", *rec["gpu_uuids"]) if rec.get("gpu_uuids") else ("pid", *(rec.get("pids") or ()))


def straggler_reason(rec: dict[str, Any], job: Job) -> str | None:
    why = []
    if job.by_steps and job.median_step_ns:
        over = 100.0 * (rec["step_median_ns"] - job.median_step_ns) / job.median_step_ns
        if over >= STEP_SLOWER_PCT:
            why.append(f"median step {duration(rec['step_median_ns'])}, {over:.0f} % over the job's "
                       f"median {duration(job.median_step_ns)}")
    busy = rec.get("gpu_utilization_pct") or 0.0
    if job.median_busy_pct - busy >= BUSY_BELOW_POINTS:
        why.append(f"GPU busy {pct(busy)} against the job's median {pct(job.median_busy_pct)}")
    return "; ".join(why) or None


def find_jobs(records: list[dict[str, Any]]) -> list[Job]:
    """Rank groups among the analyzed reports; sets each member's job and straggler fields."""
    by_program: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        if rec["status"] == "ok" and (prog := program_of(rec)):
            by_program.setdefault(prog, []).append(rec)
    jobs: list[Job] = []
    for program, members in sorted(by_program.items(), key=lambda kv: min(r["name"] for r in kv[1])):
        ids = [identity(r) for r in members]
        if len(members) < 2 or len(set(ids)) < len(ids) or any(len(i) == 1 for i in ids):
            continue
        members = sorted(members, key=lambda r: r["name"])
        by_steps = all(r.get("step_median_ns") for r in members)
        job = Job(label=f"job {len(jobs) + 1}", program=program, members=members, by_steps=by_steps,
                  median_step_ns=int(statistics.median(r["step_median_ns"] for r in members)) if by_steps else None,
                  median_busy_pct=statistics.median(r.get("gpu_utilization_pct") or 0.0 for r in members))
        for rec in members:
            reason = straggler_reason(rec, job)
            rec["job"], rec["straggler"], rec["straggler_reason"] = job.label, reason is not None, reason
            if reason:
                job.stragglers[rec["name"]] = reason
        jobs.append(job)
    return jobs
