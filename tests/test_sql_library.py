"""The SQL library documents itself: every public table, view and macro has its comment, every
table its sources and each of its columns; docs/tables.md is generated from them; rules read
only public tables."""

from __future__ import annotations

import pytest
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.ingest import database, schema, sql_library

from .conftest import ROOT

PUBLIC = sql_library.public()
TABLES = {n: e for n, e in PUBLIC.items() if e.kind != "macro"}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_entry_is_documented(name):
    e = PUBLIC[name]
    assert e.doc, f"{e.file}:{e.line}: {name} has no comment above its CREATE"
    if e.kind != "macro":
        assert e.sources is not None, f"{e.file}:{e.line}: {name} declares no '-- sources:' line"
        unknown = [s for s in e.sources if s not in schema.SOURCES]
        assert not unknown, f"{e.file}:{e.line}: {name} names sources nsys does not have: {unknown}"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_column_is_documented_in_order(name, empty_trace):
    e = TABLES[name]
    actual = [r[0] for r in empty_trace.con.execute(f"DESCRIBE {name}").fetchall()]
    assert list(e.columns) == actual, f"{e.file}:{e.line}: @column lines {list(e.columns)} != columns {actual}"
    assert all(e.columns.values()), f"{e.file}:{e.line}: a column of {name} has an empty doc"


def test_captured_flags_come_from_the_sources_lines():
    assert set(database.view_sources()) == set(TABLES) | set(database.PYTHON_TABLES)
    assert all(database.view_sources()[n] == (e.sources or []) for n, e in TABLES.items())


def test_private_tables_are_gone_after_ingest(empty_trace):
    made = {r[0] for r in empty_trace.con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert set(TABLES) <= made
    private = made - set(TABLES) - {"captured", "source_tables", "ingest_info", "export_format"}
    assert not {p for p in private if not p.startswith("src_")}, "tables left by the library but not public"


def test_rules_read_only_public_tables():
    for rule in load_rules().values():
        unknown = [t for t in [*rule.requires, *rule.requires_any] if t not in TABLES and t not in database.PYTHON_TABLES]
        assert not unknown, f"{rule.id} requires tables the library does not make public: {unknown}"


def test_tables_doc_is_current():
    doc = ROOT / "docs" / "tables.md"
    assert doc.read_text() == sql_library.markdown(), \
        "docs/tables.md is stale: python -m nsys_diagnose.ingest.sql_library > docs/tables.md"


def test_statements_split_by_the_parser_not_by_semicolons():
    text = "-- a doc\nCREATE TABLE t AS SELECT ';\n' AS s;\n\n-- b doc\nCREATE MACRO m(x) AS x + 1;\nDROP TABLE t;"
    sts = sql_library.statements("x.sql", text)
    assert [s.line for s in sts] == [2, 6, 7]
    assert sts[0].comment == ["a doc"] and sts[1].comment == ["b doc"] and sts[2].comment == []
