"""One unit of batch work: analyze one export and render its reports. Runs inside a worker
(a local process or a Dask worker), so everything it takes and returns is plain and picklable.

Besides the report it collects the few facts the batch needs across reports (the program's
command line, its kernel set, GPUs, pids, steps, top kernel) while the trace is still open.
"""

from __future__ import annotations

import hashlib
import shlex
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from nsys_diagnose.engine.model import Rule
from nsys_diagnose.errors import DiagnoseError, InputError
from nsys_diagnose.ingest.database import has_table, with_trace
from nsys_diagnose.ingest.sql_library import query
from nsys_diagnose.report import formats
from nsys_diagnose.report import json as json_report
from nsys_diagnose.report.formats import NEEDS_TIMELINE
from nsys_diagnose.trace_report import (
    report_from_trace,  # analyze() minus open/close: we query the trace too
)


@dataclass(frozen=True)
class Job:
    path: str                      # absolute: workers may run in another folder or on another host
    name: str
    fmt: str = "md"                # the second rendering next to the JSON (md, or any --format)
    rules: dict[str, Rule] = field(default_factory=dict)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    select: tuple[str, ...] | None = None
    use_cache: bool = True         # the ingest cache of open_trace
    cache_dir: str | None = None
    reader: str = "auto"
    settings: dict[str, int | float] = field(default_factory=dict)  # the analysis's settings changed (checked)


@dataclass
class Outcome:
    name: str
    path: str
    status: str                    # ok | error | skipped
    error: str | None = None
    json_text: str | None = None
    text: str | None = None        # the report in Job.fmt (None when fmt is json)
    facts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False           # came from the batch result cache, not analyzed this run

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def failed(job: Job, reason: str, seconds: float = 0.0) -> Outcome:
    return Outcome(job.name, job.path, "error", error=reason, seconds=seconds)


def renderer(fmt: str):
    return formats.renderer(fmt)


def needs_timeline(fmt: str) -> bool:
    return fmt in NEEDS_TIMELINE


def analyze_job(job: Job) -> Outcome:
    """Never raises for a bad input: the problem becomes the outcome's error (one line)."""
    started = time.perf_counter()
    try:
        def run(trace):
            return (report_from_trace(trace, job.rules, job.overrides, list(job.select) if job.select else None,
                                      timeline=needs_timeline(job.fmt), settings=job.settings), trace_facts(trace.con))
        report, facts = with_trace(job.path, run, use_cache=job.use_cache,
                                   cache_dir=Path(job.cache_dir) if job.cache_dir else None, reader=job.reader,
                                   settings=job.settings)
        json_text = json_report.render(report)
        text = None if job.fmt == "json" else renderer(job.fmt)(report)
    except InputError as e:
        return failed(job, e.problem, time.perf_counter() - started)
    except DiagnoseError as e:
        return failed(job, str(e), time.perf_counter() - started)
    except OSError as e:
        return failed(job, f"cannot be read ({e.strerror or e})", time.perf_counter() - started)
    except Exception as e:  # one bad file must not stop the batch: whatever it raised is its error row
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return failed(job, f"could not be analyzed: {type(e).__name__}: {first}", time.perf_counter() - started)
    return Outcome(job.name, job.path, "ok", json_text=json_text, text=text, facts=facts,
                   seconds=time.perf_counter() - started)


def command_line(meta: list[tuple[str, str]]) -> str | None:
    """The profiled command from META_DATA_CAPTURE (PROCESS_<i>:COMMAND and :ARGUMENT_<j>)."""
    procs: dict[int, dict[str, Any]] = {}
    for name, value in meta:
        head, _, key = name.partition(":")
        if not head.startswith("PROCESS_") or not head[8:].isdigit():
            continue
        p = procs.setdefault(int(head[8:]), {"command": None, "args": {}})
        if key == "COMMAND":
            p["command"] = value
        elif key.startswith("ARGUMENT_") and key[9:].isdigit():
            p["args"][int(key[9:])] = value
    lines = [shlex.join([p["command"], *(p["args"][i] for i in sorted(p["args"]))])
             for _, p in sorted(procs.items()) if p["command"]]
    return " ; ".join(lines) or None


def trace_facts(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    names = [r[0] for r in con.execute(query("batch_kernel_names")).fetchall()]
    top = con.execute(query("batch_top_kernel")).fetchone()
    uuids = [r[0] for r in con.execute(query("batch_gpu_uuids")).fetchall()]
    pids = [r[0] for r in con.execute(query("batch_gpu_pids")).fetchall()] or \
        [r[0] for r in con.execute(query("batch_pids")).fetchall()]
    facts: dict[str, Any] = {
        "program": command_line(con.execute(query("report_capture_meta")).fetchall()),
        "kernel_set": hashlib.sha256("\n".join(names).encode()).hexdigest()[:16] if names else None,
        "kernel_names": len(names),
        "top_kernel": top[0] if top else None,
        "top_kernel_short": top[1] if top else None,
        "top_kernel_ns": top[2] if top else None,
        "gpu_uuids": uuids,
        "pids": pids,
        "step_count": None, "step_median_ns": None, "step_total_ns": None, "step_source": None,
    }
    if has_table(con, "steps"):  # built by ingest/sql/phases.sql where present
        n, median, total, source = con.execute(query("batch_steps")).fetchone()
        if n:
            facts.update(step_count=n, step_median_ns=median, step_total_ns=total, step_source=source)
    return facts
