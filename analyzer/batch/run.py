"""Run batch jobs and yield their outcomes as they finish: in this process (-j 1), in a pool of
local worker processes (the default), or on a Dask distributed cluster.

Fault isolation: a job's own errors are its outcome (work.analyze_job never raises for an input).
A worker process that dies (a crash in a native library, the kernel's OOM killer) breaks the
pool; the jobs that were running then are re-run one by one in a fresh process, so only the
input that kills its process is reported as an error and every other input still finishes.

Stopping: local workers ignore SIGINT, so Ctrl-C reaches only this process, which stops
handing out work and terminates the workers; the caller keeps what had finished. While the pool
runs, Ctrl-C only sets a flag that the wait loop turns into KeyboardInterrupt: raised wherever
the main thread happened to be (inside concurrent.futures' locks), it could leave the pool's
threads unable to shut down, and the process hung at exit.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    Future,
    ProcessPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from nsys_diagnose.batch.work import Job, Outcome, analyze_job, failed
from nsys_diagnose.errors import UsageError

Work = Callable[[Job], Outcome]
DIED = "the analysis process died while reading this file (a crash, or killed for memory)"


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run_jobs(jobs: Iterable[Job], *, executor: str = "local", workers: int | None = None,
             scheduler: str | None = None, work: Work = analyze_job) -> Iterator[Outcome]:
    jobs = list(jobs)
    if not jobs:
        return iter(())
    if executor == "dask":
        return _dask(jobs, scheduler, work)
    workers = min(workers or default_workers(), len(jobs))
    return _serial(jobs, work) if workers == 1 else _pool(jobs, workers, work)


def _serial(jobs: list[Job], work: Work) -> Iterator[Outcome]:
    for job in jobs:
        yield work(job)


# --- local worker processes ---------------------------------------------------------------

_busy = False


def _on_sigterm(signum, frame):
    # Mid-job: unwind, so open_trace's finally blocks remove their temporary DuckDB files (an
    # ingest can be gigabytes). Should the exit be swallowed (a signal landing in a finalizer),
    # SIGALRM's default action ends the process anyway. Idle: nothing to clean, leave at once.
    if _busy:
        signal.alarm(3)
        raise SystemExit(143)
    os._exit(143)


def _quiet_unraisable(info) -> None:
    if not isinstance(info.exc_value, SystemExit):  # our own exit, swallowed by a finalizer
        sys.__unraisablehook__(info)


def _worker_init(threads: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("NSYS_DIAGNOSE_THREADS", str(threads))  # database.thread_config
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.unraisablehook = _quiet_unraisable


def _in_worker(work: Work, job: Job) -> Outcome:
    global _busy
    _busy = True
    try:
        return work(job)
    except SystemExit:
        os._exit(143)  # terminated by the parent: cleanup ran, do not go back to the pool
    finally:
        _busy = False


def _new_pool(workers: int) -> ProcessPoolExecutor:
    # spawn, not fork: the parent may hold DuckDB threads, and fork is unsafe with threads.
    # Each worker's DuckDB gets its share of the cores, not a thread per core each.
    threads = max(1, default_workers() // workers)
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_init, initargs=(threads,))


def _stop(pool: ProcessPoolExecutor) -> None:
    procs = list(getattr(pool, "_processes", {}).values())  # no public API before Python 3.14
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
    # A worker killed while sending its result leaves the pool's manager thread blocked reading
    # the rest of the message, and the interpreter joins that thread at exit: the process hung.
    # Closing this end's copy of the writer turns the read into EOF; the queue feeding the
    # workers is not waited for either (it may be blocked writing to them).
    if (results := getattr(pool, "_result_queue", None)) is not None:
        results._writer.close()
    if (calls := getattr(pool, "_call_queue", None)) is not None:
        calls.cancel_join_thread()
    pool.shutdown(wait=False, cancel_futures=True)


@contextmanager
def _sigint_deferred() -> Iterator[list]:
    """Ctrl-C appends to the yielded list instead of raising at an arbitrary point."""
    hits: list = []
    if threading.current_thread() is not threading.main_thread():
        yield hits  # signals reach only the main thread: nothing to defer
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: hits.append(signum))
    try:
        yield hits
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait(futures, interrupted: list, return_when=FIRST_COMPLETED) -> set[Future]:
    """concurrent.futures.wait in short slices, so that a deferred Ctrl-C is acted on at once."""
    futures = list(futures)
    while True:
        done, not_done = wait(futures, timeout=0.1, return_when=return_when)
        if interrupted:
            raise KeyboardInterrupt
        if not not_done or (done and return_when == FIRST_COMPLETED):
            return done


def _isolated(job: Job, work: Work, interrupted: list) -> Outcome:
    pool = _new_pool(1)
    try:
        future = pool.submit(_in_worker, work, job)
        _wait([future], interrupted)
        return future.result()
    except BrokenProcessPool:
        return failed(job, DIED)
    finally:
        _stop(pool)


def _pool(jobs: list[Job], workers: int, work: Work) -> Iterator[Outcome]:
    with _sigint_deferred() as interrupted:
        yield from _pool_run(jobs, workers, work, interrupted)


def _pool_run(jobs: list[Job], workers: int, work: Work, interrupted: list) -> Iterator[Outcome]:
    """At most `workers` jobs in flight, so that when the pool breaks we know the suspects."""
    pending = deque(jobs)
    pool = _new_pool(workers)
    running: dict[Future, Job] = {}
    try:
        while pending or running:
            broken = False
            while pending and len(running) < workers:
                job = pending.popleft()
                try:
                    running[pool.submit(_in_worker, work, job)] = job
                except BrokenProcessPool:  # a worker died since the last wait; this job never ran
                    pending.appendleft(job)
                    broken = True
                    break
            done = _wait(running, interrupted, ALL_COMPLETED if broken else FIRST_COMPLETED)
            suspects: list[Job] = []
            for f in done:
                job = running.pop(f)
                try:
                    yield f.result()
                except BrokenProcessPool:
                    suspects.append(job)
            if suspects or broken:  # the pool is broken: every other running job fails with it
                _wait(running, interrupted, ALL_COMPLETED)
                for f, job in running.items():
                    try:
                        yield f.result()
                    except BrokenProcessPool:
                        suspects.append(job)
                running.clear()
                _stop(pool)
                for job in suspects:
                    yield _isolated(job, work, interrupted)
                pool = _new_pool(workers)
    finally:
        _stop(pool)


# --- Dask ------------------------------------------------------------------------------------

def check_dask(scheduler: str | None) -> None:
    """Before anything runs: the options and the optional dependency are there."""
    if not scheduler:
        raise UsageError("--executor dask needs --scheduler ADDRESS (tcp://host:8786) or a scheduler file")
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise UsageError("--executor dask needs Dask: pip install 'nsys-diagnose[dask]'") from None


def connect(scheduler: str | None):
    """A dask.distributed Client for an address (tcp://host:8786) or a scheduler file."""
    check_dask(scheduler)
    from dask.distributed import Client

    try:
        if os.path.isfile(scheduler):
            return Client(scheduler_file=scheduler, timeout="20s")
        return Client(scheduler, timeout="20s")
    except (OSError, TimeoutError, ValueError) as e:
        raise UsageError(f"--scheduler {scheduler}: cannot connect ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


def _dask(jobs: list[Job], scheduler: str | None, work: Work) -> Iterator[Outcome]:
    from dask.distributed import as_completed

    client = connect(scheduler)
    batch = uuid.uuid4().hex[:8]
    futures = {}
    try:
        for i, job in enumerate(jobs):
            # workers read job.path themselves: it must name the same file on shared storage
            futures[client.submit(work, job, key=f"nsys-diagnose-{batch}-{i}", pure=False)] = job
        for f in as_completed(futures):
            job = futures[f]
            try:
                yield f.result()
            except Exception as e:  # the worker died or could not run the task
                first = str(e).splitlines()[0] if str(e) else ""
                yield failed(job, f"dask: {type(e).__name__}: {first}")
    finally:
        client.cancel(list(futures))
        client.close()
