"""--format github: GitHub Actions workflow commands, one annotation per finding
(`::warning title=...::message`), and the Markdown report appended to the job summary page
($GITHUB_STEP_SUMMARY) when the job provides one."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from nsys_diagnose.engine.model import Report
from nsys_diagnose.errors import UsageError
from nsys_diagnose.files import NotRegularFile
from nsys_diagnose.report import markdown
from nsys_diagnose.text import inline
from nsys_diagnose.units import duration

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    """A workflow command's message: % and line breaks are escaped (GitHub decodes them)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, title: str, message: str) -> str:
    # names from the trace reach the job log: no escape sequence in them (text.py); lines stay lines
    message = "\n".join(inline(line) for line in message.split("\n"))
    return f"::{COMMAND[level]} title={_property(inline(title))}::{_data(message)}"


def render(report: Report) -> str:
    name = Path(report.input.path).name
    lines = []
    for f in report.findings:
        recoverable = getattr(f, "recoverable_ns", None)  # what the step-time budget gives back
        stake = (f" (recoverable {duration(recoverable)})" if recoverable is not None
                 else f" (at stake {duration(f.impact_ns)})" if f.impact_ns is not None else "")
        note = getattr(f, "note", None)
        lines.append(annotation(f.severity, f"nsys-diagnose {f.rule_id}{stake}: {name}",
                                f"{f.message}\nFix: {f.fix.strip()}" + (f"\nNote: {note}" if note else "")))
    for r in report.rules:
        if r.status == "error":
            lines.append(annotation("warning", f"nsys-diagnose: rule {r.id} failed: {name}", r.reason or ""))
    if not report.findings:
        lines.append(annotation("info", f"nsys-diagnose: {name}", report.headline))
    return "\n".join(lines) + "\n"


def write_step_summary(report: Report) -> Path | None:
    """Append the Markdown report to $GITHUB_STEP_SUMMARY (the job's summary page), if set. The
    file must be a regular file (or not exist yet) and not the export itself: appending to a
    FIFO would block, and to the input would damage it."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(target, flags, 0o666)
    except OSError as e:  # a FIFO with no reader: ENXIO; a directory: EISDIR
        raise UsageError(f"GITHUB_STEP_SUMMARY={target!r}: cannot be appended to ({e.strerror or e})") from None
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"GITHUB_STEP_SUMMARY={target!r}: {NotRegularFile(target, st.st_mode).strerror}")
        for given in {report.input.path, report.input.sqlite_path} - {None}:
            try:
                same = os.path.samestat(st, os.stat(str(given)))
            except OSError:
                same = False
            if same:
                raise UsageError(f"GITHUB_STEP_SUMMARY={target!r}: is the export being analyzed; refusing to append to it")
        f.write(markdown.render(report) + "\n")
    return Path(target)
