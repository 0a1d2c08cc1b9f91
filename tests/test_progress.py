"""The progress line of a long run: drawn on a terminal, never into a pipe or a log."""

from __future__ import annotations

import io
import subprocess
import sys

from nsys_diagnose.analyze import analyze
from nsys_diagnose.ingest import progress

from tests.cli_harness import only_wrote
from tests.conftest import FIXTURES

EXPORT = FIXTURES / "exports" / "sleep_in_loop.sqlite"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_shows_the_stage_and_rows_then_erases_them():
    term = FakeTerminal()
    with progress.shown(term, delay=0) as shown:
        assert shown is not None
        analyze(EXPORT, use_cache=False)
    drawn = term.getvalue()
    assert "nsys-diagnose" in drawn
    # a stage it was in while drawn (which ones a fast machine catches at 4 frames a second varies)
    assert any(stage in drawn for stage in ("ingest ", "rule ", "metrics", "writing the cache"))
    assert " rows)" in drawn  # the last table built and its rows
    assert "\x1b[2K" in drawn  # transient: the line is cleared at the end


def test_a_forced_console_renders_stage_and_rows():
    from rich.console import Console

    out = io.StringIO()
    with progress.shown(io.StringIO(), delay=0, console=Console(file=out, force_terminal=True, width=120)):
        progress.stage("ingest 22_idle_gaps.sql: gap_states (45/120)", 978080, "raw_gaps")
        import time

        time.sleep(0.6)  # a few refreshes (4 per second)
    assert "gap_states (45/120)" in out.getvalue()
    assert "raw_gaps: 978,080 rows" in out.getvalue()


def test_a_pipe_gets_nothing():
    stream = io.StringIO()  # not a terminal
    with progress.shown(stream, delay=0) as shown:
        assert shown is None
        analyze(EXPORT)  # (the rules still report their stages)
    assert stream.getvalue() == ""


def test_a_short_run_draws_nothing():
    term = FakeTerminal()
    with progress.shown(term, delay=60):
        progress.stage("ingest")
    assert term.getvalue() == ""


def test_without_a_display_stages_cost_nothing():
    progress.stage("rule x", 1, "y")  # no display shown: a no-op, not an error


def test_the_cli_writes_nothing_on_a_piped_stderr(tmp_path):
    # a cold run of this export takes longer than the delay: on a terminal it would draw
    done = subprocess.run([sys.executable, "-m", "nsys_diagnose", str(EXPORT), "--no-cache", "--format", "json",
                           "-o", str(tmp_path / "r.json"), "--fail-on", "never"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert only_wrote(done.stderr)  # what -o wrote, and no progress display
