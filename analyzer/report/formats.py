"""The report formats by name. md, json and html take the report alone and serve the batch too;
github, sarif and junit are for one export in CI: they also take the rules and --fail-on.
Each renderer is imported when its format is asked for: a run writes one format, and the HTML
page's and the CI formats' modules would cost every run their import."""

from __future__ import annotations

from collections.abc import Callable

from nsys_diagnose.engine.model import Report, Rule

FORMATS = ("md", "json", "html")
CI_FORMATS = ("github", "sarif", "junit")  # one export at a time
TABLE_FORMATS = ("csv", "parquet")  # --tables-dir (report/tables.py)
NEEDS_TIMELINE = {"html"}  # formats that draw the binned timeline (computed while the trace is open)


def renderer(fmt: str) -> Callable[[Report], str]:
    """The renderer of one of FORMATS: the report in, the text out."""
    if fmt == "md":
        from nsys_diagnose.report import markdown
        return markdown.render
    if fmt == "json":
        from nsys_diagnose.report import json
        return json.render
    if fmt == "html":
        from nsys_diagnose.report import html
        return html.render
    raise KeyError(fmt)


def render(fmt: str, report: Report, *, rules: dict[str, Rule], fail_on: str, verbose: bool = False) -> str:
    """verbose: the Markdown report also shows the rules that passed and their tables."""
    if fmt == "github":
        from nsys_diagnose.report import github
        return github.render(report)
    if fmt == "sarif":
        from nsys_diagnose.report import sarif
        return sarif.render(report, rules)
    if fmt == "junit":
        from nsys_diagnose.report import junit
        return junit.render(report, fail_on)
    if fmt == "md":
        from nsys_diagnose.report import markdown
        return markdown.render(report, verbose=verbose)
    return renderer(fmt)(report)
