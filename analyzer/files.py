"""Opening files without surprises: only regular files are read, and no open ever blocks.

A plain open() of a named pipe waits for a writer forever, and a character device (/dev/zero)
never ends. Every file nsys-diagnose reads (an export, a rule, a cache entry) is opened here:
non-blocking, then checked with fstat on the open descriptor, so that a file swapped for a pipe
between a check and the open is caught too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class NotRegularFile(OSError):
    """The path names a directory, pipe, device or socket. An OSError, so that callers which
    treat an unreadable file as absent (the caches) treat this one the same way."""

    def __init__(self, path: os.PathLike | str, mode: int):
        self.what = kind(mode)
        super().__init__(errno.EINVAL, f"is {self.what}, not a regular file", str(path))


class TooLarge(OSError):
    def __init__(self, path: os.PathLike | str, size: int, limit: int):
        self.size, self.limit = size, limit
        super().__init__(errno.EFBIG, f"is {size:,} bytes, more than the {limit:,} allowed", str(path))


def open_regular(path: os.PathLike | str):
    """A binary file object for `path`, which must be a regular file (links followed)."""
    fd = os.open(path, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, mode)
        if _FLAGS & getattr(os, "O_NONBLOCK", 0):  # regular files ignore it; clear it all the same
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: os.PathLike | str, limit: int | None = None) -> bytes:
    """The whole content of a regular file; TooLarge beyond `limit` bytes (read no further)."""
    with open_regular(path) as f:
        if limit is None:
            return f.read()
        data = f.read(limit + 1)
        if len(data) > limit:
            raise TooLarge(path, os.fstat(f.fileno()).st_size, limit)
        return data


def regular_or_absent(path: Path) -> bool:
    """True for a regular file, False for nothing there; NotRegularFile for anything else."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, mode)
    return True
