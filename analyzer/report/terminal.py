"""The Markdown report on a terminal: rendered by rich (headings, tables, severities in colour)
and cut to the first screen, with a pointer to the whole report. Only for a TTY: piped or
written with -o, the report is the plain Markdown of markdown.py, byte for byte."""

from __future__ import annotations

import os
import shlex
import sys
from typing import TextIO

SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}


def wanted(stream: TextIO) -> bool:
    """A terminal that can show it: a TTY, and not one that declares itself dumb."""
    try:
        return stream.isatty() and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def full_report_command(output: str = "report.md") -> str:
    """This command line, writing the whole report to a file (the terminal shows one screen)."""
    return shlex.join(["nsys-diagnose", *sys.argv[1:], "-o", output])


def show(markdown_text: str, *, full_report: str, stream: TextIO | None = None) -> None:
    """Print `markdown_text` rendered, at most one screen of it; `full_report` is the command
    that writes all of it, named on the last line when the rest is cut."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.markup import escape
    from rich.segment import Segment, Segments
    from rich.style import Style
    from rich.text import Text

    console = Console(file=stream or sys.stdout, highlight=False)
    lines = console.render_lines(Markdown(markdown_text), console.options, pad=False)
    styles = {word: Style.parse(style) for word, style in SEVERITY_STYLE.items()}

    def colour(line: list[Segment]) -> list[Segment]:
        # markdown.py writes each finding's severity in bold (**warning**): rich renders that
        # word as a segment of its own, which takes the severity's colour here.
        return [Segment(s.text, (s.style or Style()) + styles[s.text.strip()])
                if s.text.strip() in styles and s.style and s.style.bold else s for s in line]

    def pointer(rest: int) -> list[list[Segment]]:
        note = Text.from_markup(f"[dim]... {rest:,} more lines. The whole report:[/dim] "
                                f"[bold]{escape(full_report)}[/bold][dim] (or pipe it: | less)[/dim]")
        return console.render_lines(note, console.options, pad=False)

    # the screen less the pointer and two lines: the command typed above and the prompt after
    room = max(console.height - len(pointer(len(lines))) - 2, 5)
    shown = lines if len(lines) <= room else lines[:room]
    if len(shown) < len(lines):
        shown = shown + pointer(len(lines) - len(shown))
    out: list[Segment] = []
    for line in shown:
        out += [*colour(line), Segment.line()]
    console.print(Segments(out), end="")
