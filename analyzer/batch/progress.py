"""Progress of a batch on stderr: a rich progress bar on a terminal, one plain line per
finished input otherwise (CI logs, pipes), so logs stay readable."""

from __future__ import annotations

import sys
from typing import TextIO

from nsys_diagnose.batch.work import Outcome
from nsys_diagnose.text import printable


class PlainLines:
    def __init__(self, total: int, stream: TextIO):
        self.total, self.done, self.stream = total, 0, stream

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stream.flush()

    def update(self, out: Outcome) -> None:
        self.done += 1
        width = len(str(self.total))
        status = "cached" if out.cached else out.status
        note = f": {out.path}: {out.error}" if out.error else ""
        # names and errors come from the file system and the files: no escape may reach the terminal
        line = printable(f"[{self.done:>{width}}/{self.total}] {status:<7} {out.name} ({out.seconds:.1f} s){note}")
        self.stream.write(line + "\n")
        self.stream.flush()


class RichBar:
    def __init__(self, total: int, stream: TextIO):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        self.console = Console(file=stream)
        self.bar = Progress(TextColumn("[bold]analyzing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.description}"),
                            console=self.console, transient=False)
        self.task = self.bar.add_task("", total=total)

    def __enter__(self):
        self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.stop()

    def update(self, out: Outcome) -> None:
        if out.status == "error":
            from rich.text import Text
            self.bar.console.print(Text.assemble(("error ", "red"), printable(f"{out.path}: {out.error}")),
                                   highlight=False, markup=False)
        self.bar.update(self.task, advance=1, description=printable(out.name).replace("[", "\\["))


def progress(total: int, stream: TextIO | None = None, mode: str = "auto"):
    stream = stream or sys.stderr
    if mode == "bar" or (mode == "auto" and stream.isatty()):
        return RichBar(total, stream)
    return PlainLines(total, stream)
