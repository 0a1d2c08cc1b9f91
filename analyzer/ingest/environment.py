"""The run's environment settings: $NSYS_DIAGNOSE_MEMORY_LIMIT, _THREADS, _RULE_TIMEOUT_S and
_CACHE_DIR (with $XDG_CACHE_HOME), parsed and checked without DuckDB. Every run checks them, a
repeat run answered from the report cache too, and that run never imports DuckDB (a fifth of
its time)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from nsys_diagnose.errors import UsageError

# DuckDB's memory cap for the ingest; beyond it, it spills to disk. The rules' connection has a
# smaller one: its queries read the cache and seldom spill, and what its buffer pool held beyond
# 300 MB set the cold run's peak RSS (1e7 kernels: 960 against 790 MiB for the rule pack, in the
# same time). $NSYS_DIAGNOSE_MEMORY_LIMIT overrides both (memory_limit()).
MEMORY_LIMIT = "500MB"
RULES_MEMORY_LIMIT = "300MB"
MIN_MEMORY_LIMIT_BYTES = 64 << 20
MAX_THREADS = 1024
RULE_TIMEOUT_S = 120.0  # a rule running longer is interrupted; NSYS_DIAGNOSE_RULE_TIMEOUT_S overrides
MAX_RULE_TIMEOUT_S = 86_400.0
_SIZE = re.compile(r"\s*(\d{1,15}(?:\.\d{1,6})?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?\s*", re.IGNORECASE)
_UNITS = {u.lower(): u for u in ("B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB")}
_BYTES = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
         "TiB": 1 << 40}


def check() -> None:
    """Every setting here, checked: a cached report must not hide a typo that the same command
    with --no-cache refuses."""
    memory_limit()
    thread_config()
    rule_timeout_s()


def memory_limit(default: str | None = None) -> str:
    """DuckDB's memory cap: $NSYS_DIAGNOSE_MEMORY_LIMIT (a number and a unit, e.g. 2GB), parsed
    and written back in DuckDB's form, else `default` (MEMORY_LIMIT). The raw value never
    reaches SQL."""
    raw = os.environ.get("NSYS_DIAGNOSE_MEMORY_LIMIT")
    if raw is None:
        return default or MEMORY_LIMIT
    match = _SIZE.fullmatch(raw)
    if not match:
        raise UsageError(f"NSYS_DIAGNOSE_MEMORY_LIMIT={raw!r}: expected a size such as 500MB or 2GB")
    unit = _UNITS[(match[2] or "B").lower()]
    if size_bytes(raw) < MIN_MEMORY_LIMIT_BYTES:  # DuckDB cannot pin one block below it
        raise UsageError(f"NSYS_DIAGNOSE_MEMORY_LIMIT={raw!r}: at least {MIN_MEMORY_LIMIT_BYTES >> 20}MiB is needed")
    return f"{match[1]}{unit}"


def size_bytes(limit: str) -> float:
    """A size in memory_limit()'s form, in bytes."""
    match = _SIZE.fullmatch(limit)
    assert match, limit
    return float(match[1]) * _BYTES[_UNITS[(match[2] or "B").lower()]]


def thread_config(small: bool = False) -> dict:
    """DuckDB's threads per connection: as NSYS_DIAGNOSE_THREADS says (a batch gives each of its
    worker processes a share, so that N workers do not run N x cores threads), else one for a
    `small` database (database.SMALL_EXPORT_BYTES), else all cores. On a small one each statement is
    mostly planning, and the threads' handovers cost more than they share: the launch_bound
    export's ingest took 0.8 CPU s in one thread against 1.3 in two, its rules 0.5 s against
    0.7 (2 cores, load 6; docs/benchmarks.md, session 15). The rules then run side by side
    instead (engine/runner.py)."""
    raw = os.environ.get("NSYS_DIAGNOSE_THREADS")
    if raw is None:
        return {"threads": 1} if small else {}
    if not (re.fullmatch(r"[0-9]{1,4}", raw.strip()) and 0 < int(raw) <= MAX_THREADS):  # not str.isdigit: '²'
        raise UsageError(f"NSYS_DIAGNOSE_THREADS={raw!r}: expected a whole number of threads from 1 to {MAX_THREADS}")
    return {"threads": int(raw)}


def at_once(limit: int) -> int:
    """How many queries of a small database run side by side, each on a cursor of one thread:
    as many as a connection would get threads (the cores, or NSYS_DIAGNOSE_THREADS), at most
    `limit` (the ingest's statements, database.py; the rules, engine/runner.py)."""
    return max(1, min(thread_config().get("threads", os.cpu_count() or 1), limit))


def rule_timeout_s() -> float:
    raw = os.environ.get("NSYS_DIAGNOSE_RULE_TIMEOUT_S")
    if raw is None:
        return RULE_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_RULE_TIMEOUT_S:  # (NaN fails both; an infinite timer overflows)
        raise UsageError(f"NSYS_DIAGNOSE_RULE_TIMEOUT_S={raw!r}: expected a number of seconds > 0 "
                         f"and at most {MAX_RULE_TIMEOUT_S:,.0f}")
    return value


def default_cache_dir() -> Path:
    env = os.environ.get("NSYS_DIAGNOSE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):  # the XDG spec: a relative value is to be ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nsys-diagnose"
