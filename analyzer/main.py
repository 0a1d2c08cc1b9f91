"""The console entry point. The CLI is imported inside the Ctrl-C guard: its imports take a
few tenths of a second, and an interrupt among them must end with one line, not a traceback."""

from __future__ import annotations

import sys


def main() -> None:
    # DuckDB imports pandas at the first query with bound parameters, to test each value against
    # pandas' types, and when pandas is missing it tries again at every such query (some 500
    # times in a small export's first run, 20-40 ms). The command line hands DuckDB no pandas
    # object and reads none back, so pandas (the optional extra, for the library's to_pandas)
    # is kept out of its process: installed, its import cost every run a few tenths of a second.
    sys.modules.setdefault("pandas", None)
    try:
        from nsys_diagnose.cli import main as run
    except KeyboardInterrupt:
        print("nsys-diagnose: interrupted", file=sys.stderr)
        sys.exit(130)
    run()
