"""Cache entries that prove they are what was written, and the clean-up of what a killed run left.

- A JSON entry (a report, a batch result) carries the SHA-256 of its payload on its first line
  and is served only when the payload still hashes to it.
- A database (the ingest's `.duckdb`) has a `.sum` file beside it: its SHA-256 and, once the
  file has settled, its stat identity (identity.py). It is opened only when the identity is the
  one recorded or, when it is not (a copy, a chmod, a write), the bytes still hash to the sum.
- Whatever fails those checks, or cannot be opened or read, is discarded with one line on stderr
  and rebuilt by the caller.
- A run killed mid-ingest leaves a temporary database, its `.wal` and its spill folder; a run
  killed mid-write leaves a `.tmp` file. sweep() removes them: a build's files once no process
  holds the lock of its key, any other temporary file once it is an hour old.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from nsys_diagnose.files import NotRegularFile, kind, open_regular, read_regular
from nsys_diagnose.ingest.identity import MARGIN_NS, stat_identity
from nsys_diagnose.output import write_atomic
from nsys_diagnose.text import printable

HEADER = b"nsys-diagnose-entry sha256="
MAX_ENTRY_BYTES = 1 << 30       # no report comes near (limits.py bounds every rule)
STALE_TMP_S = 3600              # a write takes milliseconds; an hour-old temporary file is an orphan
TEMP_PREFIX = "nsys-diagnose-"  # private temporary folders (--no-cache ingests, nsys exports)


_REFUSED: set[str] = set()  # cache folders already said to be unusable (said once per process)


def trusted_folder(folder: Path) -> bool:
    """Whether a cache folder may be used: made private (0700) when absent; one that another user
    owns or that group or others may write is not used, since whoever can write an entry can make
    a cached report say anything (a checksum proves an entry whole, not who wrote it). Says why
    once; the analysis then runs without the cache."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError:
        return False  # the callers' own probes say nothing either: the analysis goes on uncached
    owner_ok = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
    problem = (None if owner_ok and not st.st_mode & 0o022 else
               "is owned by another user" if not owner_ok else "can be written by other users")
    if problem and str(folder) not in _REFUSED:
        _REFUSED.add(str(folder))
        print(f"nsys-diagnose: {printable(folder)}: cache folder {problem}, so its entries cannot be trusted; "
              "analyzing without the cache (chmod go-w it, or pick another with --cache-dir)",
              file=sys.stderr, flush=True)
    return problem is None


def warn(path: Path, problem: str) -> None:
    """The one line a discarded cache entry is worth."""
    print(f"nsys-diagnose: {printable(path)}: {problem}; discarded, rebuilding it", file=sys.stderr, flush=True)


def discard(*paths: Path) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()


# --- JSON entries ------------------------------------------------------------------------------

def write_entry(path: Path, payload: str) -> None:
    data = payload.encode("utf-8", "surrogatepass")
    write_atomic(path, HEADER + hashlib.sha256(data).hexdigest().encode() + b"\n" + data)


def read_entry(path: Path) -> str | None:
    """The payload of a verified entry; None when there is none. A damaged entry (wrong hash,
    no header, not a regular file, unreadable) is discarded and said on stderr."""
    try:
        raw = read_regular(path, MAX_ENTRY_BYTES)
    except FileNotFoundError:
        return None
    except OSError as e:
        warn(path, f"cache entry unreadable ({e.strerror or e})")
        discard(path)
        return None
    head, _, data = raw.partition(b"\n")
    if not head.startswith(HEADER) or hashlib.sha256(data).hexdigest().encode() != head[len(HEADER):]:
        warn(path, "cache entry does not match its checksum")
        discard(path)
        return None
    return data.decode("utf-8", "surrogatepass")


# --- databases ---------------------------------------------------------------------------------

def sum_file(db: Path) -> Path:
    return db.with_name(db.name + ".sum")


def file_sha256(path: Path) -> str:
    with open_regular(path) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _record(db: Path, digest: str) -> None:
    """Write the sum, with the identity when the file has settled (see identity.py)."""
    st = os.stat(db)
    settled = max(st.st_mtime_ns, st.st_ctime_ns) < time.time_ns() - MARGIN_NS
    write_atomic(sum_file(db), json.dumps({"sha256": digest, "identity": stat_identity(st) if settled else None}))


def seal(tmp: Path, db: Path) -> None:
    """Move a finished database `tmp` to `db` with its sum: the sum first, so that a run killed
    in between leaves a database that still verifies (by its hash)."""
    digest = file_sha256(tmp)
    write_atomic(sum_file(db), json.dumps({"sha256": digest, "identity": None}))
    os.replace(tmp, db)
    with contextlib.suppress(OSError):
        _record(db, digest)


def verified(db: Path) -> bool:
    """`db` is there and is the database its sum describes. A damaged one is discarded."""
    try:
        st = os.stat(db)
    except FileNotFoundError:
        discard(sum_file(db))
        return False
    except OSError as e:
        warn(db, f"cache file unreadable ({e.strerror or e})")
        discard(db, sum_file(db))
        return False
    try:
        recorded = json.loads(read_regular(sum_file(db), 4096))
        digest = recorded["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        warn(db, "cache file has no valid checksum file beside it")
        discard(db, sum_file(db))
        return False
    if recorded.get("identity") == stat_identity(st):
        return True
    try:
        actual = file_sha256(db)
    except NotRegularFile as e:
        warn(db, f"cache file {e.strerror}")
        discard(db, sum_file(db))
        return False
    except OSError as e:
        warn(db, f"cache file unreadable ({e.strerror or e})")
        discard(db, sum_file(db))
        return False
    if actual != digest:
        warn(db, "cache file was changed since it was written (its checksum differs)")
        discard(db, sum_file(db))
        return False
    with contextlib.suppress(OSError):
        _record(db, digest)  # settled by now, most likely: next time the identity vouches for it
    return True


# --- locks and orphans -------------------------------------------------------------------------

def lock_file(db: Path) -> Path:
    return db.with_name(f".{db.stem}.lock")


@contextlib.contextmanager
def exclusive(lock: Path, wait: bool = True) -> Iterator[bool]:
    """An exclusive lock on `lock` (a small file left in place), where the OS has one. Yields
    False when `wait` is off and another process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock; both build, and the atomic rename keeps one result
        yield True
        return
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(lock, flags, 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a pipe or device in our folder: not ours, replace it
        os.close(fd)
        warn(lock, f"lock file is {kind(os.stat(lock).st_mode)}")
        os.unlink(lock)
        fd = os.open(lock, flags | os.O_EXCL, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def build_name(db: Path) -> Path:
    """Where `db` is built before it is sealed: `.<key>.duckdb.<pid>.tmp` beside it."""
    return db.with_name(f".{db.name}.{os.getpid()}.tmp")


def _build_key(name: str) -> str | None:
    """The key of a build's leftover (`.<key>.duckdb.<pid>.tmp`, `.wal`, `.spill`), else None."""
    if not name.startswith(".") or ".duckdb." not in name:
        return None
    return name[1:].split(".duckdb.", 1)[0]


def sweep(cache_dir: Path, held: str | None = None) -> None:
    """Remove what killed runs left in the cache folder (see the module's docstring). `held` is
    the key whose lock the caller holds: its build files are orphans (the caller builds it)."""
    now = time.time()
    try:
        entries = list(os.scandir(cache_dir))
        for sub in ("reports", "results", "ids"):
            with contextlib.suppress(OSError):
                entries += list(os.scandir(cache_dir / sub))
    except OSError:
        return
    for e in entries:
        key = _build_key(e.name) if e.name.endswith((".tmp", ".tmp.wal", ".tmp.spill")) else None
        if key is not None and key == held:
            discard(Path(e.path))
        elif key is not None:
            with contextlib.suppress(OSError), exclusive(cache_dir / f".{key}.lock", wait=False) as free:
                if free:
                    discard(Path(e.path))
        elif (e.name.startswith(".") and ".tmp" in e.name) or (
                e.name.endswith(".duckdb.sum") and not os.path.lexists(e.path[: -len(".sum")])):
            # (a sum is written just before its database is renamed into place: only an old one
            # without its database is an orphan)
            with contextlib.suppress(OSError):
                if now - e.stat(follow_symlinks=False).st_mtime > STALE_TMP_S:
                    discard(Path(e.path))


class TempFolder:
    """A private temporary folder for one run (a --no-cache ingest, an nsys export), locked while
    in use: removed by remove(), or, when the run was killed, by a later run's sweep_tempdirs()."""

    def __init__(self) -> None:
        sweep_tempdirs()
        self.path = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:
            return
        # locked under another name, then renamed: a sweep never finds an unlocked .lock here
        self._fd = os.open(self.path / ".lock.new", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.replace(self.path / ".lock.new", self.path / ".lock")

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def private_tempdir() -> Iterator[Path]:
    folder = TempFolder()
    try:
        yield folder.path
    finally:
        folder.remove()


def sweep_tempdirs() -> None:
    """Remove the private folders of killed runs: unlocked ones, and ones an hour old that never
    got their lock (killed between creating the folder and locking it)."""
    base = Path(tempfile.gettempdir())
    try:
        candidates = [e for e in os.scandir(base) if e.name.startswith(TEMP_PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for e in candidates:
        with contextlib.suppress(OSError):
            st = os.stat(e.path)
            if st.st_uid != os.getuid():
                continue  # someone else's
            lock = Path(e.path) / ".lock"
            if not lock.is_file():
                if time.time() - st.st_mtime > STALE_TMP_S:
                    shutil.rmtree(e.path, ignore_errors=True)
                continue
            with exclusive(lock, wait=False) as free:
                if free:
                    shutil.rmtree(e.path, ignore_errors=True)
