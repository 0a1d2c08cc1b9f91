"""The report on a terminal (a pseudo-terminal here): rendered by rich, one screen, a pointer to
the whole report; piped, the plain Markdown byte for byte."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

from nsys_diagnose.analyze import analyze
from nsys_diagnose.report import markdown

from .conftest import FIXTURES, ROOT

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


CONSOLE_SCRIPT = os.path.join(os.path.dirname(sys.executable), "nsys-diagnose")


def run_on_terminal(*args, rows: int = 30, cols: int = 100, term: str = "xterm-256color",
                    console_script: bool = False) -> tuple[int, str, str]:
    """Run the CLI with stdout on a pseudo-terminal of rows x cols (as `python -m nsys_diagnose`, or
    through the installed console script); (exit code, what it printed, its stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "COLORTERM")}
    env["TERM"] = term
    program = [CONSOLE_SCRIPT] if console_script else [sys.executable, "-m", "nsys_diagnose"]
    proc = subprocess.Popen([*program, *map(str, args)], stdout=slave,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=120)
    err = proc.stderr.read().decode("utf-8", "replace")
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n"), err


def on_terminal(*args, **kwargs) -> tuple[int, str]:
    code, out, err = run_on_terminal(*args, **kwargs)
    assert not err, "nothing on stderr"
    return code, out


def test_terminal_gets_one_rendered_screen_and_a_pointer():
    code, raw = on_terminal(EXPORT, rows=30, cols=100)
    assert code == 1  # its warning
    text = ANSI.sub("", raw)
    lines = text.rstrip("\n").split("\n")
    assert len(lines) <= 30 - 2, len(lines)  # the command line and the prompt still fit
    assert "nsys-diagnose: dataloader_bound.sqlite" in lines[0]
    assert "**" not in text and "## Findings" not in text  # rendered, not Markdown source
    assert "Findings" in text and "input-pipeline-stall" in text
    pointer = " ".join(line.strip() for line in lines[-2:])
    assert re.search(r"\.\.\. [\d,]+ more lines\. The whole report: nsys-diagnose \S+dataloader_bound\.sqlite "
                     r"-o report\.md", pointer), pointer
    assert re.search(r"\x1b\[[0-9;]*33m(\x1b\[[0-9;]*m)*warning", raw), "warning in yellow"
    assert max(len(line) for line in lines) <= 100


def test_a_short_report_is_shown_whole():
    code, raw = on_terminal(EXPORT, "--select", "comm-share", rows=200, cols=120)
    text = ANSI.sub("", raw)
    assert code == 0 and "more lines" not in text and "1 passed" in text


def test_piped_output_is_the_plain_markdown():
    r = subprocess.run([sys.executable, "-m", "nsys_diagnose", str(EXPORT)], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 1
    assert r.stdout == markdown.render(analyze(EXPORT))
    assert "\x1b[" not in r.stdout


def test_a_dumb_terminal_gets_the_plain_markdown():
    code, raw = on_terminal(EXPORT, term="dumb")
    assert code == 1 and raw == markdown.render(analyze(EXPORT)).replace("\r\n", "\n")
