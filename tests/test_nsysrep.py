"""`.nsys-rep` input: exported once with the user's nsys into the cache, or one line saying how.

A stand-in `nsys` (a tiny script that copies a known export to its -o path and logs its
arguments) plays the real one, which these machines need not have.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.errors import InputError

from .conftest import FIXTURES, ROOT

KNOWN = FIXTURES / "exports" / "compute_fp32.sqlite"

FAKE_NSYS = """#!{python}
import shutil, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
if {fail!r}:
    print("Importer error: the report was made by a newer nsys", file=sys.stderr)
    sys.exit(1)
assert args[:3] == ["export", "--type", "sqlite"] and args[3] == "-o", args
shutil.copyfile({known!r}, args[4])
"""


def fake_nsys(folder: Path, *, fail: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nsys"
    script.write_text(FAKE_NSYS.format(python=sys.executable, log=str(folder / "calls.log"), fail=fail,
                                       known=str(KNOWN)))
    script.chmod(0o755)
    return script


def calls(script: Path) -> list[str]:
    log = script.parent / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def report(tmp_path) -> Path:
    """A report file in a folder of its own, so anything written beside it shows."""
    path = tmp_path / "inputs" / "run 1.nsys-rep"
    path.parent.mkdir()
    path.write_bytes(b"not read by nsys-diagnose itself" * 1000)
    return path


@pytest.fixture
def no_nsys(tmp_path, monkeypatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("NSYS_DIAGNOSE_NSYS", raising=False)


def with_nsys(monkeypatch, script: Path) -> None:
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("NSYS_DIAGNOSE_NSYS", raising=False)


def test_exported_into_the_cache_and_analyzed(report, tmp_path, monkeypatch):
    script = fake_nsys(tmp_path / "bin")
    with_nsys(monkeypatch, script)
    cache = tmp_path / "cache"
    r = analyze(report, cache_dir=cache)
    direct = analyze(KNOWN, cache_dir=tmp_path / "other-cache")
    assert r.input.path == str(report) and r.input.size_bytes == report.stat().st_size
    assert (r.metrics.kernel_count, r.metrics.kernel_ns, r.headline) == (
        direct.metrics.kernel_count, direct.metrics.kernel_ns, direct.headline)
    exported = Path(r.input.sqlite_path)
    assert exported.parent == cache and exported.suffix == ".sqlite" and exported.is_file()
    assert sorted(p.name for p in report.parent.iterdir()) == [report.name]  # nothing beside the input
    (call,) = calls(script)
    assert call.startswith("export --type sqlite -o ") and call.endswith(str(report))
    # a second run reuses the export and its ingest: nsys is not called again
    again = analyze(report, cache_dir=cache)
    assert again.input.from_cache and again.input.sqlite_path == str(exported) and len(calls(script)) == 1


def test_no_cache_leaves_nothing_behind(report, tmp_path, monkeypatch):
    script = fake_nsys(tmp_path / "bin")
    monkeypatch.setenv("NSYS_DIAGNOSE_NSYS", str(script))  # named explicitly, not on PATH
    r = analyze(report, use_cache=False)
    assert r.metrics.kernel_count > 0 and r.input.sqlite_path is None
    assert len(calls(script)) == 1
    assert sorted(p.name for p in report.parent.iterdir()) == [report.name]


def test_failed_export_is_one_line_with_what_nsys_said(report, tmp_path, monkeypatch):
    with_nsys(monkeypatch, fake_nsys(tmp_path / "bin", fail=True))
    with pytest.raises(InputError) as e:
        analyze(report, cache_dir=tmp_path / "cache")
    assert str(e.value) == (f"{report}: `nsys export` failed (exit 1): "
                            "Importer error: the report was made by a newer nsys")
    assert list((tmp_path / "cache").glob("*.sqlite")) == []  # no torn export left to reuse


def test_without_nsys_one_line_says_which_command_to_run(report, no_nsys):
    r = subprocess.run([sys.executable, "-m", "nsys_diagnose", str(report)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line == (f"nsys-diagnose: {report}: is an Nsight Systems report and `nsys` is not on PATH to export "
                    f"it; run `nsys export --type sqlite -o '{report.with_suffix('.sqlite')}' '{report}'` "
                    "and analyze the .sqlite")


def test_a_missing_report_is_reported_as_missing(tmp_path, no_nsys):
    with pytest.raises(InputError, match="no such file"):
        analyze(tmp_path / "absent.nsys-rep")
