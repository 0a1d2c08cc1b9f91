"""`.nsys-rep` input: export it to SQLite with the user's own `nsys`, once, into the cache.

nsys-diagnose reads only SQLite. Given a report file it runs
`nsys export --type sqlite -o <cache>/<key>.sqlite <report>` when `nsys` is on PATH (or named by
$NSYS_DIAGNOSE_NSYS), keyed by the SHA-256 of the report's bytes so later runs skip the export
(the export is checksummed like every cache entry: cache_files.py); never next to the input.
Without nsys it stops with one line giving the command to run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

from nsys_diagnose.errors import InputError
from nsys_diagnose.ingest import cache_files, identity

SUFFIXES = (".nsys-rep", ".qdrep")  # .qdrep: the report's name before nsys 2021.4
EXPORT_FORMAT = 1  # bump when the export command changes (e.g. new flags): old exports are redone


def is_report(path: Path) -> bool:
    """An existing Nsight Systems report file (anything else goes through the SQLite checks)."""
    return path.suffix.lower() in SUFFIXES and path.is_file()


def find_nsys() -> str | None:
    explicit = os.environ.get("NSYS_DIAGNOSE_NSYS")
    return shutil.which(explicit) if explicit else shutil.which("nsys")


def export_command(nsys: str, report: Path, out: Path) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "-o", str(out), str(report)]


def report_key(path: Path, cache_dir: Path | None = None) -> str:
    """The report's content: the SHA-256 of its bytes (identity.py), and the export command."""
    digest = identity.content_hash(path, cache_dir / "ids" if cache_dir else None)
    return hashlib.sha256(f"nsys-rep|{EXPORT_FORMAT}|{digest}".encode()).hexdigest()[:32]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
        return True
    except OSError:
        return False


def _run_export(nsys: str, report: Path, out: Path, sealed: bool) -> None:
    """Export to a temporary name beside `out`, then rename (with its checksum file when
    `sealed`, for the cache): a killed export leaves no torn file."""
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp.sqlite")
    try:
        done = subprocess.run(export_command(nsys, report, tmp), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace")
        if done.returncode != 0 or not tmp.is_file():
            said = [ln.strip() for ln in (done.stderr + "\n" + done.stdout).splitlines() if ln.strip()]
            detail = f": {said[-1]}" if said else ""
            raise InputError(report, f"`nsys export` failed (exit {done.returncode}){detail}")
        if sealed:
            cache_files.seal(tmp, out)
        else:
            os.replace(tmp, out)
    except OSError as e:
        raise InputError(report, f"could not run `{nsys} export` ({e.strerror or e})") from None
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def exported(report: Path, cache_dir: Path | None) -> Iterator[Path]:
    """The SQLite export of `report`: kept in `cache_dir` (reused when already there), or, with
    no usable cache folder, made in a temporary folder that is removed on exit."""
    cached = cache_dir / f"{report_key(report, cache_dir)}.sqlite" if cache_dir and _writable(cache_dir) else None
    if cached is not None and cache_files.verified(cached):
        yield cached
        return
    nsys = find_nsys()
    if nsys is None:
        out = report.with_suffix(".sqlite")
        raise InputError(report, "is an Nsight Systems report and `nsys` is not on PATH to export it; run "
                         f"`nsys export --type sqlite -o {shlex.quote(str(out))} {shlex.quote(str(report))}` "
                         "and analyze the .sqlite")
    if cached is not None:
        with cache_files.exclusive(cache_files.lock_file(cached)):
            if not cache_files.verified(cached):  # another process may have exported it meanwhile
                _run_export(nsys, report, cached, sealed=True)
        yield cached
        return
    with cache_files.private_tempdir() as tmp:
        out = tmp / "report.sqlite"
        _run_export(nsys, report, out, sealed=False)
        yield out
