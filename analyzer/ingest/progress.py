"""What a long analysis is doing, on a terminal: the stage and the rows of the last table built.

A cold run of a big export takes minutes; without this a terminal shows nothing meanwhile.
Only a caller that owns the terminal turns it on (`shown`, the CLI's one-export path): a batch
draws its own bar, and a library caller gets nothing. Nothing is drawn when the stream is not
a terminal (pipes, CI logs), nor for a run that ends within `DELAY_S`; the line is erased at
the end, so the report below it is unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import time
from contextvars import ContextVar
from typing import Any, Iterator, TextIO

DELAY_S = 1.5  # shorter runs draw nothing: a flash of text is noise
_current: ContextVar[Progress | None] = ContextVar("nsys_diagnose_progress", default=None)


class Progress:
    """A one-line live display (rich, on `console`), started `delay` seconds after creation."""

    def __init__(self, console, delay: float = DELAY_S):
        self.console, self.delay = console, delay
        self.started = time.monotonic()
        self.stage_text, self.last = "starting", ""
        self._lock = threading.Lock()
        self._live: Any = None  # a rich Live once drawn (rich loads only then)
        self._timer: threading.Timer | None = threading.Timer(delay, self._start)
        self._timer.daemon = True
        self._timer.start()

    def _start(self) -> None:
        from rich.live import Live

        with self._lock:
            if self._timer is None:  # stopped before the delay ran out
                return
            self._live = Live(self, console=self.console, transient=True, refresh_per_second=4,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()

    def stage(self, text: str, rows: int | None = None, done: str | None = None) -> None:
        """Now running `text`; `done` (with its `rows`) is what just finished."""
        with self._lock:
            self.stage_text = text
            if done is not None:
                self.last = f"{done}: {rows:,} rows" if rows is not None else done

    def __rich__(self):
        from rich.spinner import Spinner
        from rich.text import Text

        with self._lock:
            line = Text.assemble(("nsys-diagnose ", "bold"), self.stage_text,
                                 (f"  ({self.last})" if self.last else "", "dim"),
                                 (f"  {time.monotonic() - self.started:.0f} s", "dim"),
                                 no_wrap=True, overflow="ellipsis")  # one line, whatever the width
        return Spinner("dots", text=line)

    def stop(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
            live, self._live = self._live, None
        if timer is not None:
            timer.cancel()
        if live is not None:
            live.stop()


@contextlib.contextmanager
def shown(stream: TextIO, delay: float | None = None, console=None) -> Iterator[Progress | None]:
    """Show progress on `stream` while the block runs, if it is a terminal (or `console` is given),
    from `delay` seconds on (DELAY_S)."""
    if console is None:
        if not _is_tty(stream):
            yield None
            return
        from rich.console import Console

        console = Console(file=stream)
    progress = Progress(console, DELAY_S if delay is None else delay)
    token = _current.set(progress)
    try:
        yield progress
    finally:
        _current.reset(token)
        progress.stop()


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


def stage(text: str, rows: int | None = None, done: str | None = None) -> None:
    """Report a stage to the display shown now, if any (free otherwise)."""
    if (progress := _current.get()) is not None:
        progress.stage(text, rows, done)
