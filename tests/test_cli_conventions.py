"""The command line as people who know ruff or sqlfluff expect it, run through the installed
console script (`nsys-diagnose`, the program a user types): help, exit codes, what -o says,
what a terminal gets."""

from __future__ import annotations

import re
import subprocess

from .conftest import FIXTURES, ROOT
from .test_terminal import ANSI, CONSOLE_SCRIPT, run_on_terminal

LOADER = FIXTURES / "exports" / "dataloader_bound.sqlite"  # warnings: the input pipeline stalls
HEALTHY = FIXTURES / "exports" / "healthy_compiled.sqlite"  # notes only


def console(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([CONSOLE_SCRIPT, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_bare_command_prints_the_help_and_exits_2():
    r = console()
    assert r.returncode == 2, r.stderr
    assert r.stdout.startswith("Usage: nsys-diagnose") and "\\x0a" not in r.stdout + r.stderr
    assert len(r.stdout.splitlines()) > 20 and r.stdout == console("--help").stdout


def test_help_lists_the_analyze_options_and_whole_summaries():
    r = console("--help")
    assert r.returncode == 0 and r.stderr == ""
    for flag in ("-o, --output", "--format", "--select", "--ignore", "--fail-on", "--set", "--tables-dir"):
        assert flag in r.stdout, flag
    commands = r.stdout.split("Commands:")[1].split("\n\n")[0]
    assert "..." not in commands and "compare" in commands and "explain" in commands
    assert "[default: warning]" in " ".join(r.stdout.split())


def test_by_default_a_warning_exits_1_and_notes_exit_0(tmp_path):
    assert console(LOADER, "-o", tmp_path / "a.md").returncode == 1
    assert console(LOADER, "-o", tmp_path / "b.md", "--fail-on", "never").returncode == 0
    assert console(HEALTHY, "-o", tmp_path / "c.md").returncode == 0


def test_o_says_what_it_wrote_and_which_folder_it_created(tmp_path):
    target = tmp_path / "new" / "deeper" / "r.md"
    r = console(LOADER, "-o", target, "--fail-on", "never")
    assert r.returncode == 0 and r.stdout == ""
    size = target.stat().st_size
    lines = r.stderr.splitlines()
    assert lines[0] == f"created folder {tmp_path / 'new'}"
    assert re.fullmatch(rf"wrote {re.escape(str(target))} \([\d.]+ kB\)", lines[1]) and len(lines) == 2
    assert f"({size / 1e3:.3g} kB)" in lines[1]
    again = console(LOADER, "-o", target, "--fail-on", "never")  # the folder is there now: one line
    assert again.stderr.splitlines() == [lines[1]]


def test_html_to_a_terminal_is_refused_with_the_o_hint():
    code, out, err = run_on_terminal(LOADER, "--format", "html", console_script=True)
    assert code == 2 and "<html" not in out.lower()
    assert "-o report.html" in err and len(err.strip().splitlines()) == 1


def test_compare_on_a_terminal_is_rendered_like_analyze():
    before, after = (FIXTURES / "exports" / f"{n}.sqlite" for n in ("graphed_with_host_work", "graphed_node_trace"))
    code, raw, err = run_on_terminal("compare", before, after, rows=30, cols=100, console_script=True)
    text = ANSI.sub("", raw)
    lines = text.rstrip("\n").split("\n")
    assert code == 0, err
    assert "**" not in text and not any(line.startswith("#") for line in lines)  # rendered, not the source
    assert len(lines) <= 28
    pointer = " ".join(" ".join(line.split()) for line in lines[-3:])
    assert re.search(r"The whole report: nsys-diagnose compare \S+ \S+ -o compare\.md", pointer), pointer
