"""Writing outputs safely: atomically (temporary file, then rename), never over an input, and
never over something that is not a regular file."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from nsys_diagnose.errors import UsageError
from nsys_diagnose.files import kind
from nsys_diagnose.text import printable

STDOUT = "-"  # `-o -`: the report goes to stdout

_UMASK = os.umask(0)  # read once, at import (os.umask can only be read by setting it)
os.umask(_UMASK)


def refuse_overwriting_inputs(output: Path, inputs: list[Path]) -> None:
    out = output.resolve()
    for p in inputs:
        if p.exists() and out.exists() and os.path.samefile(out, p) or out == p.resolve():
            raise UsageError(f"{output}: output path is an input file; refusing to overwrite it")


def refuse_special_output(output: Path) -> None:
    """An output path must be a regular file or nothing yet: the rename would replace a device
    node (as root, `-o /dev/null` would replace the system's), a FIFO or a /proc/self/fd link
    with a plain file, and a directory is not a report. Links are judged by what they point to."""
    try:
        mode = output.stat().st_mode
    except OSError:  # nothing there yet, or a path that cannot be (write_atomic says why)
        return
    if stat.S_ISREG(mode):
        return
    hint = "; use -o - to write to stdout" if not stat.S_ISDIR(mode) else ""
    raise UsageError(f"{output}: output path is {kind(mode)}, not a regular file{hint}")


def output_file(output: Path | None, inputs: list[Path]) -> Path | None:
    """Where a single report goes: None for stdout (no -o, or `-o -`), else a path checked not to
    be an input and not to be a device, pipe or directory."""
    if output is None or str(output) == STDOUT:
        return None
    refuse_overwriting_inputs(output, inputs)
    refuse_special_output(output)
    return output


def _naming(e: OSError, path: Path) -> OSError:
    """The same error, naming the destination rather than the temporary file."""
    return type(e)(e.errno, f"cannot be written ({e.strerror or e})", str(path))


def write_atomic(path: Path, text: str | bytes) -> None:
    """Readers see the old file or the new one, never half of one; a failed write leaves the old
    file and no temporary behind. Failures are OSErrors that name `path`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:80]}.", suffix=".tmp")  # NAME_MAX: 255 bytes
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


def missing_parents(path: Path) -> list[Path]:
    """The folders above `path` that do not exist yet, outermost first."""
    missing = []
    for parent in path.absolute().parents:
        if parent.exists():
            break
        missing.append(parent)
    return missing[::-1]


def publish(path: Path, text: str | bytes, say) -> None:
    """Write a report the user asked for with -o, and say so, as linters do: `wrote PATH (SIZE)`
    on stderr, and first which folder it created. Missing folders are created (as a batch's
    -o DIR is), never silently: `say` receives one line per event."""
    from nsys_diagnose.units import size

    created = missing_parents(path)
    write_atomic(path, text)
    if created:
        say(f"created folder {created[0]}")
    data = text.encode("utf-8") if isinstance(text, str) else text
    say(f"wrote {path} ({size(len(data))})")


def say(line: str) -> None:
    """What was written where: one line on stderr (stdout holds only reports), file names shown
    with their control characters escaped."""
    print(printable(line), file=sys.stderr, flush=True)
