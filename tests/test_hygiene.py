"""Terminal and file-name hygiene (issue 18, class 5): names from the traced program and the file
system reach no terminal, table or file name with their control characters; a batch never
overwrites an input with its own files; a mistyped command writes nothing."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from nsys_diagnose.batch.discover import unique_names
from nsys_diagnose.batch.progress import PlainLines, RichBar
from nsys_diagnose.batch.work import Outcome
from nsys_diagnose.text import inline, printable

from .cli_harness import call_cli
from .synth import write_export
from .test_bad_inputs import base_tables
from .test_compare import jittered, training_run

OSC = "\x1b]0;pwned\x07"                     # sets the terminal's title
NASTY = f"{OSC}\x1b[2J\u202egnp.exe\u2028next\x9b31m\n"  # clear screen, bidi override, line separator, C1 CSI
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def nasty_export(path: Path) -> Path:
    t = base_tables()
    t["StringIds"][1]["value"] = f"kernel{NASTY}"
    return write_export(t, path)


def test_batch_summary_progress_and_file_names_carry_no_control_characters(tmp_path):
    inputs = tmp_path / "runs"
    inputs.mkdir()
    nasty_export(inputs / f"run{OSC}.sqlite")
    (inputs / f"broken{OSC}.sqlite").write_text("not an export")
    out = tmp_path / "out"
    r = call_cli(inputs, "-o", out, "--no-cache", "-j", "1", "--fail-on", "never")
    assert r.returncode == 2  # the broken one failed
    assert not CONTROL.search(r.stderr.replace("\n", "")), repr(r.stderr)
    assert "\\x1b]0;pwned\\x07" in r.stderr  # named visibly, so it can be found
    summary = (out / "summary.md").read_text()
    assert not CONTROL.search(summary.replace("\n", "")), repr(summary)
    for p in out.iterdir():
        assert not CONTROL.search(p.name), repr(p.name)
    assert (out / "run_]0;pwned_.md").exists()


def test_progress_lines_and_bar_print_no_escape_from_a_name():
    bad = Outcome(name=f"n{OSC}", path=f"/data/p{OSC}.sqlite", status="error", error=f"is not{NASTY}", seconds=0.1)
    plain = io.StringIO()
    with PlainLines(1, plain) as lines:
        lines.update(bad)
    assert plain.getvalue().count("\n") == 1 and not CONTROL.search(plain.getvalue()[:-1])
    rich_out = io.StringIO()
    with RichBar(1, rich_out) as bar:
        bar.update(bad)
    assert "\x1b]0;" not in rich_out.getvalue() and "\x07" not in rich_out.getvalue()
    assert "\u202e" not in rich_out.getvalue()


def test_compare_markdown_and_junit_carry_no_control_characters(tmp_path):
    before = training_run(tmp_path / "before.sqlite", jittered(12, 10_000_000, 0.05, seed=1), kernel=f"gemm{NASTY}",
                          step_name=f"step{OSC}")
    after = training_run(tmp_path / "after.sqlite", jittered(12, 12_000_000, 0.05, seed=2), kernel=f"gemm{NASTY}",
                         step_name=f"step{OSC}")
    md = call_cli("compare", before, after)  # the run's shared cache: the second call ingests nothing
    assert md.returncode == 0, md.stderr
    assert "gemm" in md.stdout and not CONTROL.search(md.stdout.replace("\n", "")), repr(md.stdout[:2000])
    junit = call_cli("compare", before, after, "--format", "junit")
    ET.fromstring(junit.stdout.split("\n", 1)[1])  # well-formed XML: no control character in it
    assert not CONTROL.search(junit.stdout.replace("\n", ""))


def test_an_input_named_like_the_batch_files_keeps_its_own_report(tmp_path):
    """index.sqlite used to be overwritten by the batch's index.html; likewise summary, reports,
    findings."""
    inputs = tmp_path / "runs"
    inputs.mkdir()
    for stem in ("index", "summary", "reports", "findings"):
        write_export(base_tables(), inputs / f"{stem}.sqlite")
    out = tmp_path / "out"
    # four exports of one content: with the run's cache, one ingest (the reports stay four: their paths differ)
    r = call_cli(inputs, "-o", out, "-j", "1", "--format", "html", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    assert "nsys-diagnose batch" in (out / "index.html").read_text()
    assert (out / "summary.md").read_text().startswith("# nsys-diagnose batch")
    for stem in ("index", "summary", "reports", "findings"):
        assert (out / "runs" / f"{stem}.html").exists() and (out / "runs" / f"{stem}.json").exists()


def test_reserved_names_without_a_parent_folder_are_numbered():
    assert unique_names([Path("/index.sqlite"), Path("/summary.sqlite")]) == ["index-2", "summary-2"]


def test_a_mistyped_command_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv, needle in ((["shema", "report"], "did you mean `nsys-diagnose schema`"),
                         (["frobnicate", "report"], "no such file or directory"),
                         (["comapre", "a.sqlite", "b.sqlite"], "did you mean `nsys-diagnose compare`")):
        r = call_cli(*argv)
        assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_file_name_with_a_newline_is_one_line_on_stderr(tmp_path):
    path = tmp_path / "a\nb\u2028c.sqlite"
    path.write_text("not an export")
    r = call_cli(path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "a\\x0ab\\u2028c.sqlite" in r.stderr


def test_the_sanitizers():
    assert inline("a\x1b]0;t\x07b\nc\u202ed") == "a ]0;t b c d"
    assert printable("a\x1b\n\u2028") == "a\\x1b\\x0a\\u2028"
    assert printable("plain – ünïcode 核") == "plain – ünïcode 核"
