"""A small export's ingest statements side by side (ingest/schedule.py): each waits for the
statements it depends on, and the cache holds exactly what the one-at-a-time ingest leaves,
none of its temporary objects."""

from __future__ import annotations

import duckdb
import pytest
from nsys_diagnose.errors import InputError
from nsys_diagnose.ingest import database, schedule
from nsys_diagnose.ingest.sql_library import access, dependencies

from .conftest import FIXTURES

EXPORT = FIXTURES / "exports" / "healthy_variable_batch_infer.sqlite"  # small, 54 of 64 tables filled


def contents(db) -> dict:
    """The database's tables, views, macros and types, and every table's rows (as sorted text)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {
            "tables": con.execute("SELECT table_name, sql FROM duckdb_tables() ORDER BY 1").fetchall(),
            "views": con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall(),
            "macros": con.execute("SELECT function_name, macro_definition FROM duckdb_functions() "
                                  "WHERE function_type LIKE '%macro' AND NOT internal ORDER BY 1").fetchall(),
            "types": con.execute("SELECT type_name, labels::VARCHAR FROM duckdb_types() WHERE NOT internal "
                                 "ORDER BY 1").fetchall(),
        }
        for table, _ in out["tables"]:
            out[table] = sorted(map(repr, con.execute(f'SELECT * FROM "{table}"').fetchall()))
        return out
    finally:
        con.close()


def built(tmp_path, monkeypatch, threads: str, name: str) -> dict:
    monkeypatch.setenv("NSYS_DIAGNOSE_THREADS", threads)
    database.build(EXPORT, tmp_path / f"{name}.duckdb")
    return contents(tmp_path / f"{name}.duckdb")


def latest_first(steps, after, cursors, do):
    """Every step on one cursor, the latest ready one first: the order furthest from the files'
    that the dependencies allow, so that a dependency they miss runs a statement too early."""
    done: set[int] = set()
    while len(done) < len(steps):
        i = max(i for i in range(len(steps)) if i not in done and after[i] <= done)
        do(cursors[0], steps[i])
        done.add(i)


def test_side_by_side_leaves_what_one_at_a_time_does(tmp_path, monkeypatch):
    one = built(tmp_path, monkeypatch, "1", "one")
    assert one == built(tmp_path, monkeypatch, "2", "two")  # no temporary object left, the same rows
    monkeypatch.setattr(schedule, "run", latest_first)
    assert one == built(tmp_path, monkeypatch, "2", "latest-first")


def test_a_statement_waits_for_what_it_reads_and_a_writer_for_its_readers():
    steps = [access("CREATE TEMP TABLE a AS SELECT 1 AS x"),
             access("CREATE TEMP VIEW v AS SELECT x FROM a"),
             access("CREATE TABLE b AS SELECT x FROM v"),
             access("CREATE TABLE c AS SELECT 2 AS y"),
             access("INSERT INTO c SELECT x FROM b"),
             access("DROP TABLE a"),  # after b, which read it through v
             access("-- @each x: SELECT y FROM c\nINSERT INTO b SELECT $x", "SELECT y FROM c")]
    assert dependencies(steps) == [set(), {0}, {0, 1}, set(), {2, 3}, {0, 1, 2}, {2, 4}]


def test_a_failed_statement_stops_the_others_with_the_usual_error(tmp_path, monkeypatch):
    real = database._statements_of

    def broken(modules, settings):
        statements = real(modules, settings)
        return statements[:5] + [("normalize", "SELECT error('broken on purpose')", None)] + statements[5:]

    monkeypatch.setattr(database, "_statements_of", broken)
    messages = []
    for threads in ("1", "2"):
        monkeypatch.setenv("NSYS_DIAGNOSE_THREADS", threads)
        with pytest.raises(InputError) as err:
            database.build(EXPORT, tmp_path / f"{threads}.duckdb")
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "broken on purpose" in messages[0] and "\n" not in messages[0]
