"""The report formats by name, for the single-report command and the batch alike."""

from __future__ import annotations

from nsys_diagnose.report import html, json, markdown

FORMATS = {"md": markdown.render, "json": json.render, "html": html.render}
TABLE_FORMATS = ("csv", "parquet")  # --tables-dir (report/tables.py)
NEEDS_TIMELINE = {"html"}  # formats that draw the binned timeline (computed while the trace is open)
