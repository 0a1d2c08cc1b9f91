"""Writing outputs safely: atomically (temporary file, then rename), never over an input."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from nsys_diagnose.errors import UsageError

_UMASK = os.umask(0)  # read once, at import (os.umask can only be read by setting it)
os.umask(_UMASK)


def refuse_overwriting_inputs(output: Path, inputs: list[Path]) -> None:
    out = output.resolve()
    for p in inputs:
        if p.exists() and out.exists() and os.path.samefile(out, p) or out == p.resolve():
            raise UsageError(f"{output}: output path is an input file; refusing to overwrite it")


def _naming(e: OSError, path: Path) -> OSError:
    """The same error, naming the destination rather than the temporary file."""
    return type(e)(e.errno, f"cannot be written ({e.strerror or e})", str(path))


def write_atomic(path: Path, text: str | bytes) -> None:
    """Readers see the old file or the new one, never half of one; a failed write leaves the old
    file and no temporary behind. Failures are OSErrors that name `path`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise _naming(e, path) from None
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would create it, not mkstemp's 0600
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise _naming(e, path) from None
        raise
