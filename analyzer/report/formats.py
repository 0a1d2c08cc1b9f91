"""The report formats by name. md, json and html take the report alone and serve the batch too;
github, sarif and junit are for one export in CI: they also take the rules and --fail-on."""

from __future__ import annotations

from nsys_diagnose.engine.model import Report, Rule
from nsys_diagnose.report import github, html, json, junit, markdown, sarif

FORMATS = {"md": markdown.render, "json": json.render, "html": html.render}
CI_FORMATS = ("github", "sarif", "junit")  # one export at a time
TABLE_FORMATS = ("csv", "parquet")  # --tables-dir (report/tables.py)
NEEDS_TIMELINE = {"html"}  # formats that draw the binned timeline (computed while the trace is open)


def render(fmt: str, report: Report, *, rules: dict[str, Rule], fail_on: str, verbose: bool = False) -> str:
    """verbose: the Markdown report also shows the rules that passed and their tables."""
    if fmt == "github":
        return github.render(report)
    if fmt == "sarif":
        return sarif.render(report, rules)
    if fmt == "junit":
        return junit.render(report, fail_on)
    if fmt == "md":
        return markdown.render(report, verbose=verbose)
    return FORMATS[fmt](report)
