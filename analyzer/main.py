"""The console entry point. The CLI is imported inside the Ctrl-C guard: its imports take a
few tenths of a second, and an interrupt among them must end with one line, not a traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from nsys_diagnose.cli import main as run
    except KeyboardInterrupt:
        print("nsys-diagnose: interrupted", file=sys.stderr)
        sys.exit(130)
    run()
