"""Queries live in .sql files (the ingest's modules, the named queries of ingest/sql/queries/,
rules), not in Python strings: a count of the SQL strings in analyzer/'s Python, read from the
syntax tree (docstrings left out; an f-string is one string). What stays is plumbing of one line
(a setting, a count, a reader's view of one source table, the wrapper around a rule's SQL); the
count may only go down: lower CEILING whenever a query moves into a .sql file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .conftest import ROOT

# 27, plus the scanner's bounded path for a table with text past the cut (issue 36: ATTACH, the
# SQLite query that finds such a value, the SQLite SELECT that cuts it, the view over it), plus
# the side-by-side ingest's copy of its database in memory into the file and its drop of what it
# made in place of TEMP objects (issue 31), less the progress bar's SET, now one constant
CEILING = 32
_SQL = re.compile(r"^\s*\(?\s*(SELECT|WITH|CREATE|INSERT|DROP|PRAGMA|SET|DESCRIBE|COPY|ATTACH|DETACH|UPDATE|DELETE|"
                  r"ALTER|BEGIN|COMMIT|ROLLBACK|CHECKPOINT|INSTALL|LOAD|EXPLAIN|SUMMARIZE|FROM)\b")


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)  # type: ignore[misc]
    return None


def sql_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each SQL string in a module."""
    tree = ast.parse(path.read_text(), str(path))
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body \
                and isinstance(node.body[0], ast.Expr):
            skip.add(id(node.body[0].value))  # a docstring
        if isinstance(node, ast.JoinedStr):
            skip |= {id(v) for v in node.values}  # an f-string's parts: the f-string counts once
    return [(node.lineno, text) for node in ast.walk(tree)
            if id(node) not in skip and (text := _text(node)) is not None and _SQL.match(text)]


def test_sql_strings_in_python_only_go_down():
    found = {p: sql_strings(p) for p in sorted((ROOT / "analyzer").rglob("*.py"))}
    total = sum(len(v) for v in found.values())
    where = ", ".join(f"{p.relative_to(ROOT)} {len(v)}" for p, v in sorted(found.items(), key=lambda x: -len(x[1])) if v)
    assert total <= CEILING, f"{total} SQL strings in analyzer/ Python (at most {CEILING}): {where}"


def test_each_sql_string_is_one_line():
    """A query of several lines belongs in a .sql file. (A rule's SQL is wrapped on lines of its
    own, so that its last line may be a comment: `\\n{}\\n` counts as the fragment it holds.)"""
    long = [f"{p.relative_to(ROOT)}:{line}" for p in sorted((ROOT / "analyzer").rglob("*.py"))
            for line, text in sql_strings(p) if "\n" in text.replace("\n{}\n", "{}") or len(text) > 140]
    assert not long, f"SQL strings of more than one line: {long}"


def test_the_count_sees_sql(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('def f(con, x):\n    """SELECT in a docstring is prose."""\n'
                     '    con.execute("SELECT 1")\n    return f"WITH a AS ({x}) SELECT * FROM a", "selected"\n')
    assert [t for _, t in sql_strings(probe)] == ["SELECT 1", "WITH a AS ({}) SELECT * FROM a"]
