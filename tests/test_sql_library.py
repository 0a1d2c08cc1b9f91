"""The SQL library documents itself: every public table, view and macro has its comment, every
table its sources and each of its columns; docs/tables.md is generated from them; rules read
only public tables."""

from __future__ import annotations

import re

import pytest
from nsys_diagnose import analyze
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.ingest import database, schema, sql_library

from .conftest import ROOT

PUBLIC = sql_library.public()
TABLES = {n: e for n, e in PUBLIC.items() if e.kind != "macro"}
QUERIES = sql_library.queries()


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


def test_a_query_looked_up_by_name_is_the_checked_one():
    # query(name) skips queries()' checks at run time (their parse trees cost a tenth of a small
    # export's first run): it must find the same SQL under the same names
    assert {n: q.sql for n, q in QUERIES.items()} == {n: sql_library.query(n) for n in sql_library._named()}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_named_query_returns_its_documented_columns(name, empty_trace):
    """A named query's @column lines are its result columns, in order (as a rule's `columns:`)."""
    q = QUERIES[name]
    cursor = empty_trace.con.execute(q.sql, {p: None for p in q.params})
    assert [d[0] for d in cursor.description] == list(q.columns), f"{q.file}:{q.line}: @column lines != result columns"


def test_every_named_query_is_run_from_python():
    """A named query nothing runs is dead SQL."""
    text = "\n".join(p.read_text() for p in (ROOT / "analyzer").rglob("*.py"))
    assert not [n for n in QUERIES if f'"{n}"' not in text]


@pytest.mark.parametrize("text, message", [
    ("-- include: normalize\n\n-- k\n-- @column n: n\nSELECT 1 AS n;", "query (unnamed) has no name"),
    ("-- include: normalize\n\n-- k\n-- query: other_k\n-- @column n: n\nSELECT 1 AS n;", "must be named q_<what>"),
    ("-- include: normalize\n\n-- k\n-- query: q_k\nSELECT 1 AS n;", "documents no result column"),
    ("-- include: normalize\n\n-- k\n-- query: q_k\n-- @column n: n\nSELECT 1 AS n FROM;", "does not parse"),
    ("-- include: normalize\n\n-- k\n-- query: q_k\n-- @column n: n\nSELECT $x AS n;",
     "lists parameters [], its SQL uses ['x']"),
    ("-- include: normalize\n\n-- k\n-- query: q_k\n-- @column n: n\nSELECT count(*) AS n FROM steps;",
     "reads steps: not public in the modules it includes (normalize)"),
    ("-- include: normalize, phases\n\n-- k\n-- query: q_k\n-- @column n: n\nSELECT count(*) AS n FROM kernels;",
     "includes phases but reads none of its tables"),
])
def test_a_named_query_that_does_not_match_its_comment_is_an_error(text, message):
    with pytest.raises(sql_library.ModuleError, match=re.escape(message)):
        sql_library.query_file("queries/q.sql", text)


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


def test_architecture_shows_the_modules_in_run_order():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    shown = doc.split("<!-- modules: generated -->\n")[1].split("<!-- /modules -->")[0]
    assert shown == sql_library.module_table(), \
        "docs/architecture.md's module table is stale: python -m nsys_diagnose.ingest.sql_library --modules"


def test_a_module_includes_every_module_whose_tables_it_reads():
    """An include line that misses a module would run it in whatever order, or not at all."""
    mods = sql_library.modules()
    maker = {name: m.name for m in mods.values() for name in m.makes}
    for m in mods.values():
        reach = {n.name for n in sql_library.order([m.name])}
        read = {maker[w] for w in m.words if w in maker and maker[w] != m.name}
        assert read <= reach, f"{m.file} reads tables of {sorted(read - reach)} without including them"
        assert not set(m.includes) - read, f"{m.file} includes {sorted(set(m.includes) - read)} but reads none of their tables"


def _mods(**texts: str) -> dict[str, sql_library.Module]:
    return {n: sql_library.module(f"{n}.sql", t) for n, t in texts.items()}


def test_modules_run_after_their_includes_and_after_readers_of_what_they_drop():
    mods = _mods(a="-- include:\nCREATE TABLE t AS SELECT 1;",
                 b="-- include: a\nCREATE TABLE u AS SELECT * FROM t;\nDROP TABLE t;",
                 c="-- include: a\nCREATE TABLE v AS SELECT * FROM t;")
    assert [m.name for m in sql_library.order(None, mods)] == ["a", "c", "b"]  # by name, b would run first
    assert [m.name for m in sql_library.order(["b"], mods)] == ["a", "b"]


@pytest.mark.parametrize("texts, message", [
    ({"a": "-- include: nope\nSELECT 1;"}, "a.sql: includes 'nope', which is no module"),
    ({"a": "-- include: b\nSELECT 1;", "b": "-- include: a\nSELECT 1;"}, "round in a cycle: a (after b), b (after a)"),
])
def test_an_unknown_include_or_a_cycle_is_an_error(texts, message):
    with pytest.raises(sql_library.ModuleError, match=re.escape(message)):
        sql_library.order(None, _mods(**texts))


def test_a_module_without_its_include_line_is_an_error():
    with pytest.raises(sql_library.ModuleError, match="x.sql: its first line must name"):
        sql_library.module("x.sql", "CREATE TABLE t AS SELECT 1;")


def test_the_report_tables_cover_what_the_analyses_read():
    """A report runs only the modules of REPORT_TABLES and the rules' tables: every library name
    that the analyses, the claims and trace_report itself mention, and every table their named queries
    read, must be made by one of them."""
    texts = [p.read_text() for p in [*(ROOT / "analyzer" / "analyses").glob("*.py"),
                                     ROOT / "analyzer" / "engine" / "claims.py", ROOT / "analyzer" / "trace_report.py"]]
    named = {n for t in texts for n in re.findall(r"""query\(["'](\w+)["']\)""", t)}
    assert named and named <= set(QUERIES)
    read = sql_library.mentioned(texts) | {t for n in named for t in QUERIES[n].reads}
    run = set(sql_library.plan(analyze.REPORT_TABLES))
    assert {PUBLIC[n].module for n in read} <= run


def test_an_uncached_ingest_runs_only_the_modules_asked_for(tmp_path):
    export = ROOT / "fixtures" / "exports" / "compute_fp32.sqlite"
    some = database.open_trace(export, use_cache=False, tables={"kernels"})
    try:
        made = {r[0] for r in some.con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        assert "kernels" in made and "budget" not in made and "steps" not in made
        assert set(some.captured) == set(database.view_sources(("normalize",)))
    finally:
        some.close()
    cached = database.open_trace(export, cache_dir=tmp_path, tables={"kernels"})
    try:  # a cache file serves every later run: it holds every module's tables
        assert cached.con.execute("SELECT count(*) FROM budget").fetchone()
    finally:
        cached.close()


# --- the budget's causes: one table (ingest/sql/causes.sql) -------------------------------------

CAUSES = {(r["kind"], r["cause"]) for r in sql_library.data_rows("budget_causes")}


def test_the_budget_names_only_causes_of_the_table():
    """budget.sql writes its idle causes as literals where it decides them: each is a row of
    budget_causes, and its GPU classes are the table's gpu rows."""
    budget = sql_library.modules()["budget"]
    idle = next(st.sql for st in sql_library.statements(budget.file, budget.text)
                if "CREATE TEMP TABLE budget_idle_causes" in st.sql)
    named = set(re.findall(r"(?:'cause': |THEN |ELSE )'([^']+)'", sql_library._code(idle)))
    named |= set(re.findall(r"'([^']+)' AS cause", sql_library._code(budget.text)))
    assert named and {("idle", c) for c in named} <= CAUSES, sorted(named - {c for _, c in CAUSES})


def test_every_budget_row_names_a_cause_of_the_table(empty_trace):
    from nsys_diagnose.ingest.database import open_trace
    trace = open_trace(ROOT / "fixtures" / "exports" / "launch_bound_no_nvtx.sqlite")
    try:
        unknown = trace.con.execute("SELECT DISTINCT kind, cause FROM budget "
                                    "EXCEPT SELECT kind, cause FROM budget_causes").fetchall()
        assert not unknown and trace.con.execute("SELECT count(*) FROM budget").fetchone()[0]
    finally:
        trace.close()


def test_the_renderers_name_only_causes_of_the_table():
    from nsys_diagnose.analyses import timeline
    from nsys_diagnose.report import html_budget
    assert set(html_budget.SLICE_CLASS) <= CAUSES
    assert {("idle", c) for c in html_budget.NO_PLACE} <= CAUSES
    assert timeline.host_kinds() == ("launch", "sync", "copy", "allocation", "module loading", "other")
    others = [r for r in sql_library.data_rows("budget_causes") if r["api_categories"] == []]
    assert len(others) == 1, "one band takes the CUDA calls of every other category"
