"""The corpus exports live in git as xz files (fixtures/exports/*.sqlite.xz: a fifth of the
size, so the working tree stays small enough to travel to the GPU machine for new captures);
`unpack()` writes each one's .sqlite beside it, once, where tests, benchmarks and the accuracy
table read it. A written file is renamed into place, so concurrent callers (pytest-xdist
workers) never see half of one; an existing .sqlite newer than its .xz is kept.

    python -m tests.fixture_exports          # unpack (the test run does it by itself)
    python -m tests.fixture_exports --pack   # after adding a capture: NAME.sqlite -> NAME.sqlite.xz
"""

from __future__ import annotations

import lzma
import os
import shutil
import sys
import tempfile
from pathlib import Path

EXPORTS = Path(__file__).resolve().parent.parent / "fixtures" / "exports"


def unpack(folder: Path = EXPORTS) -> list[Path]:
    written = []
    for packed in sorted(folder.glob("*.sqlite.xz")):
        target = packed.with_suffix("")
        if target.exists() and target.stat().st_mtime >= packed.stat().st_mtime:
            continue
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "wb") as out, lzma.open(packed) as src:
                shutil.copyfileobj(src, out, 1 << 20)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(target)
    return written


def pack(folder: Path = EXPORTS) -> list[Path]:
    written = []
    for plain in sorted(folder.glob("*.sqlite")):
        packed = plain.with_name(plain.name + ".xz")
        if packed.exists() and packed.stat().st_mtime >= plain.stat().st_mtime:
            continue
        stat = plain.stat()
        with open(plain, "rb") as src, lzma.open(packed, "wb", preset=9) as out:
            shutil.copyfileobj(src, out, 1 << 20)
        os.utime(packed, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # equal times: neither side redone
        written.append(packed)
    return written


if __name__ == "__main__":
    done = pack() if sys.argv[1:] == ["--pack"] else unpack()
    print(f"{len(done)} file(s) written in {EXPORTS}")
