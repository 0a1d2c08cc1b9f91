"""Run steps side by side on a few DuckDB cursors, each as soon as the steps it waits for have
ended (sql_library.dependencies). A failed step, or Ctrl-C, stops the others (stop(), which
the rule runner uses too: engine/runner.py) and raises its error."""

from __future__ import annotations

import heapq
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextvars import copy_context
from typing import Any, Callable, Sequence, TypeVar

import duckdb

T = TypeVar("T")


def run(steps: Sequence[T], after: list[set[int]], cursors: list[duckdb.DuckDBPyConnection],
        do: Callable[[duckdb.DuckDBPyConnection, T], Any]) -> None:
    """do(cursor, step) for every step, step i only once every step in after[i] has ended, at
    most one step on each cursor at a time."""
    waiting = [set(a) for a in after]
    unblocks: list[list[int]] = [[] for _ in steps]
    for i, a in enumerate(after):
        for j in a:
            unblocks[j].append(i)
    # the ready step with the longest chain of steps waiting on it first: in file order, the
    # chain that sets the end waits behind short side branches (launch_bound, 2 cursors,
    # simulated with its statements' times: 0.53 s against 0.45 s, the critical path)
    chain = [1] * len(steps)
    for i in reversed(range(len(steps))):
        chain[i] += max((chain[j] for j in unblocks[i]), default=0)
    ready = [(-chain[i], i) for i, w in enumerate(waiting) if not w]
    heapq.heapify(ready)
    free = list(cursors)
    running: dict[Future, tuple[int, duckdb.DuckDBPyConnection]] = {}
    with ThreadPoolExecutor(len(cursors)) as pool:
        try:
            while ready or running:
                while ready and free:
                    i, cursor = heapq.heappop(ready)[1], free.pop()
                    # in the caller's context: the progress display is a context variable
                    running[pool.submit(copy_context().run, do, cursor, steps[i])] = (i, cursor)
                # polled: a signal the OS hands to another thread wakes no blocking wait here
                done, _ = wait(running, timeout=0.1, return_when=FIRST_COMPLETED)
                for future in done:
                    i, cursor = running.pop(future)
                    future.result()  # the step's error, raised here
                    free.append(cursor)
                    for j in unblocks[i]:
                        waiting[j].discard(i)
                        if not waiting[j]:
                            heapq.heappush(ready, (-chain[j], j))
        except BaseException:  # a step failed, or Ctrl-C: stop the running ones too
            stop(list(running), cursors)
            raise


def stop(futures: list[Future], cursors: list[duckdb.DuckDBPyConnection]) -> None:
    """Cancel the queued work and interrupt the running queries until every one has ended: an
    interrupt sent between two queries of one piece of work is lost, so it is sent again."""
    for future in futures:
        future.cancel()
    while not all(future.done() for future in futures):
        for cursor in cursors:
            cursor.interrupt()
        wait(futures, timeout=0.05)
