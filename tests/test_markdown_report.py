"""The Markdown report shows what fired: the headline and findings first, then a compact budget;
the rules that passed and their tables only with verbose; tables without twin column titles, ids
printed as ids, and 'N more rows' true to what the JSON holds."""

from __future__ import annotations

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.report import markdown

from .conftest import FIXTURES

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"


@pytest.fixture(scope="module")
def report():
    return analyze(EXPORT)


def sections(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def test_findings_come_first_then_the_budget_then_the_fired_rules_tables(report):
    text = markdown.render(report)
    assert text.splitlines()[2] == f"**{report.headline}**"
    fired = [r for r in report.rules if r.status == "fired" and r.rows]
    assert sections(text) == ["Findings", "Budget", "Rules", *(f"{r.title} (`{r.id}`)" for r in fired)]
    assert len(text.splitlines()) < 100


def test_passed_rules_and_their_tables_only_with_verbose(report):
    passed = [r for r in report.rules if r.status == "passed" and r.rows]
    assert passed, "the export needs a rule that passed with rows"
    quiet, verbose = markdown.render(report), markdown.render(report, verbose=True)
    for r in passed:
        assert f"(`{r.id}`)" not in quiet and f"## {r.title} (`{r.id}`)" in verbose
    assert "`--verbose`" in quiet and "| rule | status | findings | note |" in verbose


def test_no_table_has_two_columns_of_one_title(report):
    for result in report.rules:
        cols = (result.display or list(result.rows[0])[:8]) if result.rows else []
        assert len(set(markdown.headers(cols))) == len(cols), (result.id, markdown.headers(cols))
    # host-sync-in-loop shows both; they were two columns titled "recoverable"
    assert markdown.headers(["recoverable_ns", "recoverable_pct"]) == ["recoverable", "recoverable share"]


def test_ids_print_as_ids_and_counts_as_counts():
    assert markdown.cell("pid", 1397) == "1397" and markdown.cell("device_id", 12345) == "12345"
    assert markdown.cell("launch_tid", 1397) == "1397" and markdown.cell("kernels", 1397) == "1,397"


def test_more_rows_says_what_the_json_holds_and_where_the_rest_is(report):
    gaps = next(r for r in report.rules if r.id == "gpu-idle-gaps")
    assert gaps.row_count > len(gaps.rows) > markdown.TABLE_ROWS  # capped in the JSON too
    note = markdown.more_rows(gaps, markdown.TABLE_ROWS)
    assert note == (f"{gaps.row_count - markdown.TABLE_ROWS:,} more rows: the JSON report (`--format json`) holds "
                    f"the first {len(gaps.rows)}; `--tables-dir DIR` writes all {gaps.row_count} to DIR/gpu-idle-gaps.csv.")
    whole = gaps.model_copy(update={"row_count": len(gaps.rows)})
    assert markdown.more_rows(whole, markdown.TABLE_ROWS).startswith(
        f"{len(gaps.rows) - markdown.TABLE_ROWS} more rows: the JSON report holds them all; ")
