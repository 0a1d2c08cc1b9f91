"""A rule's result, bounded in bytes before it leaves DuckDB (the caps are in limits.py).

A value of a type without a fixed size (text, a blob, a list, a struct) is cut inside the query:
text to its first MAX_VALUE_BYTES characters, anything else to NULL when its text form is
longer, each with its original size beside it. So a rule that returns a 100 MB string never
makes a 100 MB Python string (nor a thousand of them), and the report says what was cut.

The columns are found by running the composed SQL with LIMIT 0 first (a few milliseconds), and
referred to by position (#n), so their names need no quoting and may repeat.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb
from nsys_diagnose.limits import MAX_VALUE_BYTES, clip, too_large

# Types whose values have a bounded size: left as they are.
FIXED = re.compile(r"(BOOLEAN|U?TINYINT|U?SMALLINT|U?INTEGER|U?BIGINT|U?HUGEINT|FLOAT|DOUBLE|DECIMAL\(.*\)|DATE|"
                   r"TIME|TIME WITH TIME ZONE|TIMESTAMP.*|INTERVAL|UUID|ENUM\(.*\))")


def _variable(type_name: str) -> str | None:
    """'text', 'other' or None (a fixed-size type)."""
    if type_name == "VARCHAR":
        return "text"
    return None if FIXED.fullmatch(type_name) else "other"


def bounded(cursor: duckdb.DuckDBPyConnection, sql: str, args: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """(SQL returning the same rows with variable-size values cut, [(column name, type)])."""
    columns = [(d[0], str(d[1])) for d in cursor.execute(f"{sql}\nLIMIT 0", args).description]
    n = MAX_VALUE_BYTES
    select = []
    for i, (_, type_name) in enumerate(columns, 1):
        kind = _variable(type_name)
        if kind == "text":
            select += [f"CASE WHEN strlen(#{i}) > {n} THEN left(#{i}, {n}) ELSE #{i} END",
                       f"CASE WHEN strlen(#{i}) > {n} THEN strlen(#{i}) END"]
        elif kind == "other":
            size = f"strlen(CAST(#{i} AS VARCHAR))"
            select += [f"CASE WHEN {size} > {n} THEN NULL ELSE #{i} END", f"CASE WHEN {size} > {n} THEN {size} END"]
        else:
            select.append(f"#{i}")
    # one line in front of the composed SQL: DuckDB's LINE n in an error still points into it
    return f"SELECT {', '.join(select)} FROM ({sql}) AS bounded_rows", columns


def positions(columns: list[tuple[str, str]]) -> list[int]:
    """Where each column's value sits in a row of bounded()'s SQL (a cut column takes two places)."""
    at, j = [], 0
    for _, type_name in columns:
        at.append(j)
        j += 1 if _variable(type_name) is None else 2
    return at


def unwrap_row(columns: list[tuple[str, str]], r: tuple[Any, ...]) -> list[Any]:
    """One row of bounded()'s SQL, every cut value marked as cut."""
    values, j = [], 0
    for _, type_name in columns:
        kind = _variable(type_name)
        value = r[j]
        if kind is None:
            j += 1
        else:
            size = r[j + 1]
            j += 2
            if size is not None and kind == "text" and value is not None:
                value = clip(value, MAX_VALUE_BYTES, size)
            elif size is not None:
                value = too_large(size, type_name.split("(")[0].lower())
        values.append(value)
    return values
