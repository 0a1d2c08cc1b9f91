"""`nsys-diagnose DIR|PATH...|GLOB -o OUT`: the batch, from inputs to the summary and exit code.

Exit codes: 130 when interrupted (what finished is kept and summarized); 2 when any input
failed or nothing could be analyzed; else 1 when a finding of any report reaches --fail-on;
else 0. Skipped inputs (a .nsys-rep beside its own .sqlite export, or without nsys) do not fail
the batch on their own.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from nsys_diagnose.batch import ranks, summary
from nsys_diagnose.batch.cache import ResultCache, result_key
from nsys_diagnose.batch.discover import Found, discover, has_magic
from nsys_diagnose.batch.progress import progress
from nsys_diagnose.batch.run import Work, check_dask, run_jobs
from nsys_diagnose.batch.work import Job, Outcome, analyze_job
from nsys_diagnose.engine.model import SEVERITY_RANK, Rule
from nsys_diagnose.errors import UsageError
from nsys_diagnose.files import kind
from nsys_diagnose.ingest.cache_files import trusted_folder
from nsys_diagnose.ingest.environment import default_cache_dir
from nsys_diagnose.output import write_atomic
from nsys_diagnose.text import printable

DEFAULT_OUTPUT = Path("nsys-diagnose-out")


def _files(out_dir: Path, name: str, fmt: str) -> tuple[Path, Path | None]:
    return out_dir / f"{name}.json", (None if fmt == "json" else out_dir / f"{name}.{fmt}")


def _save(out: Outcome, out_dir: Path, fmt: str) -> tuple[Outcome, str | None, str | None]:
    """Write one outcome's reports atomically; a failed input's stale reports are removed, so
    the folder never shows an old result for a file that now fails. A report that cannot be
    written (a full disk, a name too long) makes that input an error row: the batch goes on."""
    json_path, text_path = _files(out_dir, out.name, fmt)
    if out.status == "ok":
        try:
            write_atomic(json_path, out.json_text or "")
            if text_path is not None:
                write_atomic(text_path, out.text or "")
        except OSError as e:
            out = replace(out, status="error", json_text=None, text=None,
                          error=f"its report {e.strerror or e}")  # write_atomic: "cannot be written (why)"
    if out.status != "ok":
        for p in (json_path, text_path):
            if p is not None:
                with contextlib.suppress(OSError):
                    p.unlink(missing_ok=True)
        return out, None, None
    rel = lambda p: p.relative_to(out_dir).as_posix() if p else None  # noqa: E731
    return out, rel(json_path), rel(text_path) or rel(json_path)


def _check_output(out_dir: Path, found: list[Found], fmt: str) -> None:
    if str(out_dir) == "-":
        raise UsageError("-o -: a batch writes into a folder (-o DIR), not to stdout")
    if out_dir.exists() and not out_dir.is_dir():
        what = "a file" if out_dir.is_file() else kind(out_dir.stat().st_mode)
        raise UsageError(f"{out_dir}: a batch writes into a folder (-o DIR), and this is {what}")
    inputs = {os.path.normcase(str(f.path)) for f in found}
    for f in found:
        for p in _files(out_dir, f.name, fmt):
            if p is not None and os.path.normcase(os.path.abspath(p)) in inputs:
                raise UsageError(f"{p}: output path is an input file; refusing to overwrite it")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{out_dir}: cannot create the output folder ({e.strerror or e})") from None


def run_batch(paths, *, output: Path | None, fmt: str, rules: dict[str, Rule],
              overrides: dict[str, dict[str, Any]], select: list[str] | None, fail_on: str,
              use_cache: bool, cache_dir: Path | None, reader: str, workers: int | None,
              executor: str = "local", scheduler: str | None = None, progress_mode: str = "auto",
              work: Work = analyze_job, settings: dict[str, int | float] | None = None) -> int:
    started = time.perf_counter()
    out_dir = Path(output) if output else DEFAULT_OUTPUT
    if executor == "dask":
        check_dask(scheduler)
    # A named path that is not there is a typo (or a mistyped command: `nsys-diagnose shema x`):
    # stop before anything is written, rather than make an output folder of failures.
    missing = [printable(p) for p in paths if not has_magic(str(p)) and not os.path.lexists(p)]
    if missing:
        raise UsageError(f"{', '.join(missing)}: no such file or directory (nothing was analyzed; "
                         "commands: see `nsys-diagnose --help`)")
    found, unmatched = discover(list(paths))
    for pattern in unmatched:
        click.echo(f"nsys-diagnose: {printable(pattern)}: matches no file", err=True)
    if not found:
        if len(paths) == 1 and os.path.isdir(paths[0]):
            raise UsageError(f"{paths[0]}: is a directory with no exports (*.sqlite, *.nsys-rep) below it")
        raise UsageError(f"{', '.join(map(str, paths))}: no exports (*.sqlite, *.nsys-rep) found")
    _check_output(out_dir, found, fmt)

    use_cache = use_cache and trusted_folder(cache_dir or default_cache_dir())
    cache = ResultCache(cache_dir) if use_cache else None
    jobs = [Job(str(f.path), f.name, fmt, rules, overrides, tuple(select) if select else None, use_cache,
                str(cache_dir) if cache_dir else None, reader, dict(settings or {})) for f in found if not f.skip_reason]
    keys = {j.name: result_key(j) for j in jobs} if cache else {}
    finished: list[tuple[Outcome, str | None, str | None]] = []
    done_before = [c for j in jobs if cache and (c := cache.get(keys[j.name], j))]
    to_run = [j for j in jobs if j.name not in {c.name for c in done_before}]
    interrupted = 0
    with progress(len(jobs), mode=progress_mode) as bar:
        for out in done_before:
            finished.append(_save(out, out_dir, fmt))
            bar.update(finished[-1][0])
        try:
            for out in run_jobs(to_run, executor=executor, workers=workers, scheduler=scheduler, work=work):
                finished.append(_save(out, out_dir, fmt))
                if cache:
                    cache.put(keys.get(out.name), out)
                bar.update(finished[-1][0])
        except KeyboardInterrupt:
            interrupted = len(jobs) - len(finished)

    skipped = [Outcome(f.name, str(f.path), "skipped", error=f.skip_reason) for f in found if f.skip_reason]
    records = [summary.record(o, j, t) for o, j, t in finished] + [summary.record(o, None, None) for o in skipped]
    records.sort(key=lambda r: r["name"].lower())
    jobs_found = ranks.find_jobs(records)
    summary.write(out_dir, records, jobs_found, seconds=time.perf_counter() - started, interrupted=interrupted)

    ok = [r for r in records if r["status"] == "ok"]
    failed = [r for r in records if r["status"] == "error"]
    click.echo(f"{len(ok)} analyzed, {len(failed)} failed, {len(skipped)} skipped: {out_dir / 'summary.md'}")
    if interrupted:
        click.echo(f"nsys-diagnose: interrupted; {interrupted} input(s) not analyzed, the finished ones are "
                   f"in {out_dir}", err=True)
        return 130
    if failed or not ok:
        click.echo(f"nsys-diagnose: {len(failed)} of {len(records)} input(s) failed"
                   + ("" if ok else ", none analyzed") + f" (see {out_dir / 'summary.md'})", err=True)
        return 2
    if fail_on != "never" and any(SEVERITY_RANK[f["severity"]] >= SEVERITY_RANK[fail_on]
                                  for r in ok for f in r.get("_findings") or []):
        return 1
    return 0
