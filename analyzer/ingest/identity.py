"""Which bytes a file holds: the SHA-256 of its whole content, remembered by its stat identity.

The caches are keyed by this hash, so a cached ingest or report belongs to the bytes on disk, not
to a sample of them. Hashing is cheap next to an ingest (0.1 s warm, 0.5 s cold for a 125 MB,
1e6-kernel export, against about 12 s to ingest it) but is most of what a cached run costs, so
the hash is remembered in the cache folder (`ids/`) together with the file's identity as the
file system keeps it: device, inode, size, mtime_ns and ctime_ns. Any write, truncation, rename
over it or `touch` changes that identity, and ctime cannot be set back by a program, so the file
is hashed again. An identity is remembered only when the file's last change is MARGIN_NS older
than the start of the hash: a write in the same timestamp tick as the hash could otherwise keep
the identity while changing the bytes (git's "racily clean" files).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from nsys_diagnose.errors import InputError
from nsys_diagnose.files import open_regular, read_regular
from nsys_diagnose.output import write_atomic

MARGIN_NS = 2_000_000_000  # far above any file system's timestamp granularity (ext4, XFS: < 10 ms)
ENTRY_BYTES = 4096


def stat_identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


@dataclass(frozen=True)
class Content:
    sha256: str
    identity: list[int]
    settled: bool  # last changed long enough before the hash for the identity to vouch for it


def _entry_file(index_dir: Path, path: Path) -> Path:
    name = hashlib.sha256(os.path.abspath(path).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return index_dir / f"{name}.json"


def _remembered(entry: Path, path: Path, identity: list[int]) -> str | None:
    try:
        data = json.loads(read_regular(entry, ENTRY_BYTES))
    except (OSError, ValueError):
        return None  # absent or unreadable: hash again (and rewrite it)
    if isinstance(data, dict) and data.get("path") == os.path.abspath(path) and data.get("identity") == identity:
        digest = data.get("sha256")
        return digest if isinstance(digest, str) and len(digest) == 64 else None
    return None


def identify(path: Path, index_dir: Path | None = None) -> Content:
    """The file's SHA-256 (hex): remembered in `index_dir` when its identity is unchanged, else
    computed. InputError when the file changes while it is read."""
    with open_regular(path) as f:
        identity = stat_identity(os.fstat(f.fileno()))
        entry = _entry_file(index_dir, path) if index_dir is not None else None
        if entry is not None and (digest := _remembered(entry, path, identity)):
            return Content(digest, identity, True)
        started = time.time_ns()
        digest = hashlib.file_digest(f, "sha256").hexdigest()
        if stat_identity(os.fstat(f.fileno())) != identity:
            raise InputError(path, "changed while it was being read (is it still being written?); "
                                   "run again once it is complete")
    settled = max(identity[3], identity[4]) < started - MARGIN_NS
    if entry is not None and settled:
        try:
            write_atomic(entry, json.dumps({"path": os.path.abspath(path), "identity": identity, "sha256": digest}))
        except OSError:
            pass  # a read-only cache folder: hashed again next time
    return Content(digest, identity, settled)


def content_hash(path: Path, index_dir: Path | None = None) -> str:
    return identify(path, index_dir).sha256


def still_holds(path: Path, content: Content) -> bool:
    """The file still holds `content` (asked after reading it, e.g. after an ingest): its
    identity is unchanged and, for a file changed just before, so is its hash."""
    try:
        if stat_identity(os.stat(path)) != content.identity:
            return False
        return content.settled or identify(path).sha256 == content.sha256
    except (OSError, InputError):
        return False
