"""A ceiling on what a stage may add to the process's memory (issue 36).

DuckDB's memory_limit caps its buffer pool, not every allocation: a string built in an
expression (`repeat('x', 2e9)`, a recursive CTE that doubles one) is allocated outside it, and
such a rule reached 3.9 GB. While the rules run, the process's data segment (RLIMIT_DATA: heap
and private writable mappings, which is what RSS grows from) may grow by at most
RULES_HEADROOM_BYTES over what it held when they started; past it, an allocation fails, DuckDB
raises its out-of-memory error and the rule that asked is an error, the others run on.

Linux counts private mappings in RLIMIT_DATA (since 4.7); elsewhere the limit is set, and what
it bounds is the OS's business. Nested uses (test-rules runs rules inside a stage) keep the
outer ceiling. The limit is the process's: it is set only from the main thread (the CLI, a
batch's worker processes, a notebook), never where other threads may run other analyses at the
same time (a Dask worker's threads), which it would bound too.
"""

from __future__ import annotations

import contextlib
import resource
import threading
from typing import Iterator

# Above the data held when the rules start: the rules' DuckDB cap (300 MB), its retry (an
# operator that cannot spill), a thread stack per rule running and the allocator's per-thread
# arenas, with room to spare. At 1e7 kernels the built-in rules add 690 MiB of data (976 MiB of
# RSS at the peak, 2 threads; more threads, more arenas): 1 GiB left too little margin.
RULES_HEADROOM_BYTES = 1536 << 20

_lock = threading.Lock()
_depth = 0


def data_bytes() -> int | None:
    """The process's data segment now (VmData), or None where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


@contextlib.contextmanager
def ceiling(headroom: int) -> Iterator[None]:
    """Within the block, the data segment may grow by at most `headroom` bytes (never above a
    hard limit already set); the soft limit is put back after."""
    global _depth
    with _lock:
        _depth += 1
        outer = _depth > 1 or threading.current_thread() is not threading.main_thread()
        now = None if outer else data_bytes()
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if now is not None:
            limit = now + headroom
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            if soft == resource.RLIM_INFINITY or limit < soft:
                resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
            else:
                now = None  # a lower limit is already set: keep it
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if now is not None:
                resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
