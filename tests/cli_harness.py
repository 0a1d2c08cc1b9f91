"""Run the command line as users run it, bounded in time, in a subprocess or in-process.

`run_cli` starts `python -m nsys_diagnose` (the real process: interpreter, exit code, stderr).
`call_cli` runs the same entry point, `nsys_diagnose.cli.main`, in a worker thread of this process:
it skips the interpreter start-up (about half a second each) and still fails, instead of
stalling the suite, when a run does not finish within the timeout.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from .conftest import ROOT

TIMEOUT_S = 60
WROTE = re.compile(r"wrote .+ \([\d.]+ (B|kB|MB|GB)\)|created folder .+")


def only_wrote(stderr: str) -> bool:
    """stderr holds nothing but what -o says: `wrote PATH (SIZE)`, `created folder DIR`."""
    return all(WROTE.fullmatch(line) for line in stderr.splitlines())


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args, env: dict | None = None, user: int | None = None, timeout: float = TIMEOUT_S) -> Result:
    preexec = (lambda: os.setuid(user)) if user is not None else None
    r = subprocess.run([sys.executable, "-m", "nsys_diagnose", *map(str, args)], capture_output=True, text=True,
                       cwd=ROOT, timeout=timeout, preexec_fn=preexec, env={**os.environ, **(env or {})})
    return Result(r.returncode, r.stdout, r.stderr)


def call_cli(*args, timeout: float = TIMEOUT_S) -> Result:
    from nsys_diagnose import cli

    out, err, code = io.StringIO(), io.StringIO(), []

    def target() -> None:
        argv = sys.argv
        sys.argv = ["nsys-diagnose", *map(str, args)]
        try:
            cli.main()
            code.append(0)
        except SystemExit as e:
            code.append(e.code if isinstance(e.code, int) else 1)
        except BaseException as e:  # main() must never let one escape: record it as a traceback would
            err.write(f"Traceback (escaped main): {type(e).__name__}: {e}\n")
            code.append(-1)
        finally:
            sys.argv = argv

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(timeout)
    assert not worker.is_alive(), f"nsys-diagnose {' '.join(map(str, args))} hung for {timeout} s"
    return Result(code[0], out.getvalue(), err.getvalue())


def assert_one_line_error(r: Result, path: Path | str, *needles: str) -> str:
    """Exit 2, nothing on stdout, one line on stderr naming the file and the problem."""
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert str(path) in lines[0], lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert r.stdout == ""
    return lines[0]


def snapshot(*folders: Path) -> dict[str, tuple]:
    """Every entry below the folders: content hash (files), kind and mode. Links are not followed."""
    import hashlib
    import stat as st

    out: dict[str, tuple] = {}
    for folder in folders:
        for p in sorted(Path(folder).rglob("*")):
            mode = p.lstat().st_mode
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if st.S_ISREG(mode) else None
            out[str(p)] = (st.S_IFMT(mode), st.S_IMODE(mode), digest)
    return out


LEFTOVER_MARKS = (".tmp", ".wal", ".spill", "-journal", "-wal", "-shm")


def leftovers(folder: Path) -> list[str]:
    """Temporary, journal and WAL files a run left below `folder` (a cache or an input folder)."""
    return sorted(str(p) for p in Path(folder).rglob("*") if any(m in p.name for m in LEFTOVER_MARKS))


def default_sigint() -> None:
    """A child that should answer Ctrl-C gets SIGINT's default back: an ignored signal stays ignored
    across exec, and a batch test's worker set-up (batch/run.py) may have ignored it in this process."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
