"""A rule's YAML checked against itself and against the tables ingest builds, when it loads.

A typo in a rule should stop it from loading with the file and line, not read later as
"skipped: not captured" or as a rule that never fires. So: `requires` names known tables; every
column a finding, the display or a template refers to is one of `columns`; the SQL is one
SELECT; and each `when` is one expression over the declared columns and parameters, built from
a short list of SQL forms, so that splicing it into the composed query cannot change the query's
shape (the engine then needs no guard against a `when` that starts a second statement).
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import string
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from nsys_diagnose.engine.headlines import WORD_LIMITS, template_words
from nsys_diagnose.engine.model import Rule, as_subquery
from nsys_diagnose.errors import RuleSpecError
from nsys_diagnose.ingest import sql_library

if TYPE_CHECKING:  # DuckDB and the ingest are imported where a check runs: loading rules unchecked needs neither
    import duckdb

LineOf = Callable[[tuple[str | int, ...]], int | None]

# The expression forms a `when` may use: columns, constants, parameters, comparisons, AND/OR/NOT,
# IN, IS NULL, BETWEEN, CASE, CAST and a few scalar functions. No subquery, aggregate, window,
# lambda or star: a `when` judges one row by its own values.
ALLOWED_CLASSES = {"COLUMN_REF", "CONSTANT", "PARAMETER", "COMPARISON", "CONJUNCTION", "OPERATOR",
                   "BETWEEN", "CASE", "CAST", "FUNCTION"}
ALLOWED_FUNCTIONS = {
    "+", "-", "*", "/", "//", "%", "||", "~~", "!~~", "~~*", "!~~*",  # arithmetic, concat, (I)LIKE
    "abs", "round", "floor", "ceil", "greatest", "least", "ifnull", "nullif", "lower", "upper",
    "length", "strlen", "starts_with", "ends_with", "contains", "regexp_matches", "list_contains",
}

def _con() -> duckdb.DuckDBPyConnection:
    return sql_library.parser()  # parse-only, one per thread


def causes(kind: str) -> set[str]:
    """The step-time budget's causes of a kind (gpu or idle): budget_causes, ingest/sql/causes.sql."""
    return {r["cause"] for r in sql_library.data_rows("budget_causes") if r["kind"] == kind}


def known_tables() -> set[str]:
    """The normalized tables a rule may require: those ingest records as captured or not."""
    from nsys_diagnose.ingest.database import view_sources

    return set(view_sources())


def _suggest(name: str, choices: set[str] | list[str]) -> str:
    close = difflib.get_close_matches(name, sorted(choices), 1, 0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


_TREES: dict[str, dict[str, Any]] = {}  # parse tree by query text: a batch or a test run loads the catalog again and again
MAX_TREES = 4096


def _trees(queries: tuple[str, ...]) -> list[dict[str, Any]]:
    """DuckDB's parse trees of the queries, those not parsed before in one call: each call
    costs milliseconds, and a rule has several `when`s. (The trees are read, never changed.)"""
    missing = [q for q in dict.fromkeys(queries) if q not in _TREES]
    if missing:
        if len(_TREES) + len(missing) > MAX_TREES:
            _TREES.clear()
        # Quoted as SQL literals, not bound as a parameter: DuckDB retries a failed `import pandas` on
        # every parameterized execute, which costs more than the parse (the texts hold no NUL: check_rule).
        literals = ", ".join("'" + q.replace("'", "''") + "'" for q in missing)
        row = _con().execute(f"SELECT list_transform([{literals}]::VARCHAR[], lambda q: json_serialize_sql(q))").fetchone()
        _TREES.update(zip(missing, [json.loads(tree) for tree in row[0]] if row else [{"error": True} for _ in missing]))
    return [_TREES[q] for q in queries]


def _whens(rule: Rule) -> list[str]:
    return [spec.when for spec in rule.findings] + [part.when or "true" for part in rule.advice]


def parse_whens(rules: list[Rule]) -> None:
    """Parse the `when`s of many rules at once, ahead of their check_rule (a catalog's in one call)."""
    whens = [_as_select(w) for r in rules for w in _whens(r) if "\x00" not in w]
    if whens:
        _trees(tuple(whens))


def _as_select(when: str) -> str:
    return f"SELECT ({when}) FROM __rule_rows"


@functools.lru_cache(maxsize=1024)
def sql_problem(sql: str) -> tuple[str, int | None] | None:
    """Why a rule's SQL is not one SELECT, with the line DuckDB's parser names, else None."""
    import duckdb

    try:
        statements = _con().extract_statements(sql)
    except duckdb.Error as e:
        line = re.search(r"^LINE (\d+):", str(e), re.M)
        return str(e).strip().splitlines()[0], int(line[1]) if line else None
    if len(statements) != 1:
        return f"must hold exactly one statement, found {len(statements)}", None
    if statements[0].type != duckdb.StatementType.SELECT:
        return f"must be a SELECT, found {statements[0].type.name}", None
    try:  # the runner reads it as a subquery: a PRAGMA parses as a SELECT but cannot be one
        _con().extract_statements(as_subquery(sql))
    except duckdb.Error:
        return "must be a SELECT that can be read as a subquery (not a PRAGMA or other shorthand)", None
    return None


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every expression node (a dict with a `class`) in DuckDB's serialized parse tree."""
    if isinstance(node, dict):
        if "class" in node:
            yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def when_problem(when: str, columns: set[str], params: set[str], tree: dict[str, Any] | None = None) -> str | None:
    """Why `when` is not one expression over `columns` and `$params` of the allowed forms.
    (`tree`: the parse of _as_select(when), when the caller has it.)"""
    tree = tree if tree is not None else _trees((_as_select(when),))[0]
    if tree.get("error") and tree.get("error_type") == "parser":
        return f"not a SQL expression ({tree.get('error_message', 'unparsable')})"
    if tree.get("error"):  # it parsed, as something other than one SELECT: a smuggled statement
        return "must be one SQL expression over the result columns"
    statements: list[dict[str, Any]] = tree["statements"]
    node: dict[str, Any] = statements[0]["node"] if len(statements) == 1 else {}
    shape_ok = (node.get("type") == "SELECT_NODE" and len(node.get("select_list", [])) == 1
                and not node.get("modifiers") and not node.get("cte_map", {}).get("map")
                and node.get("from_table", {}).get("table_name") == "__rule_rows"
                and not node["from_table"].get("alias")
                and not any(node.get(k) for k in ("where_clause", "group_expressions", "having", "qualify", "sample")))
    if not shape_ok:
        return "must be one SQL expression over the result columns"
    lowered = {c.lower() for c in columns}
    for expr in _nodes(node["select_list"]):
        kind = expr["class"]
        if kind not in ALLOWED_CLASSES:
            return f"{kind.lower()} is not allowed (a `when` is an expression over one row's columns)"
        if kind == "COLUMN_REF":
            name = ".".join(expr["column_names"])
            if len(expr["column_names"]) != 1 or name.lower() not in lowered:
                return f"column '{name}' is not among the rule's `columns:`{_suggest(name, columns)}"
        elif kind == "PARAMETER" and expr["identifier"] not in params:
            return f"parameter ${expr['identifier']} is not among the rule's `params:`{_suggest(expr['identifier'], params)}"
        elif kind == "FUNCTION":
            name = expr["function_name"]
            if name.lower() not in ALLOWED_FUNCTIONS or expr.get("schema") or expr.get("catalog"):
                return f"function {name} is not allowed (allowed: {', '.join(sorted(f for f in ALLOWED_FUNCTIONS if f.isalpha() or '_' in f))})"
            if expr.get("filter") or expr.get("distinct") or expr.get("order_bys", {}).get("orders"):
                return f"function {name}: FILTER, DISTINCT and ORDER BY are not allowed"
    return None


def template_fields(template: str) -> list[str]:
    """The result columns a message template names: `{idle_ns:dur}` -> idle_ns."""
    try:
        return [re.split(r"[.\[]", field)[0] for _, field, _, _ in string.Formatter().parse(template) if field]
    except ValueError:
        return []  # an unbalanced brace: units.render reports it when the message renders


def check_rule(rule: Rule, yaml_path: object, line_of: LineOf) -> None:
    """RuleSpecError (file:line) for the first thing in `rule` that cannot be right."""
    def fail(loc: tuple[str | int, ...], problem: str) -> None:
        raise RuleSpecError(yaml_path, f"{'.'.join(map(str, loc))}: {problem}", line_of(loc))

    tables = known_tables()
    for key in ("requires", "requires_any"):
        for i, name in enumerate(getattr(rule, key)):
            if name not in tables:
                fail((key, i), f"no table '{name}'{_suggest(name, tables)}")
    sql_path = f"{str(yaml_path).removesuffix('.yaml')}.sql"
    if "\x00" in rule.sql:
        raise RuleSpecError(sql_path, "holds a NUL character")
    whens = _whens(rule)
    for i, when in enumerate(whens):  # (a YAML "\0" escape; DuckDB would cut the query text there)
        if "\x00" in when:
            n = len(rule.findings)
            fail(("findings", i, "when") if i < n else ("advice", i - n, "when"), "holds a NUL character")
    when_trees = _trees(tuple(_as_select(w) for w in whens)) if whens else []
    finding_trees, advice_trees = when_trees[:len(rule.findings)], when_trees[len(rule.findings):]
    if sql_error := sql_problem(rule.sql):
        raise RuleSpecError(sql_path, sql_error[0], sql_error[1])
    columns = set(rule.columns)

    def column(loc: tuple[str | int, ...], name: str | None) -> None:
        if name is not None and name not in columns:
            fail(loc, f"'{name}' is not among the rule's `columns:`{_suggest(name, columns)}")

    def headline_part(loc: tuple[str | int, ...], part: str, template: str | None) -> None:
        """A headline part names declared columns and holds a few words (the headline has 30)."""
        if template is None:
            return
        for field in template_fields(template):
            column(loc, field)
        if (words := template_words(template)) > WORD_LIMITS[part]:
            fail(loc, f"{words} words; a headline's {part} holds at most {WORD_LIMITS[part]} "
                      "(the detail belongs in the message)")

    params = set(rule.params)
    for i, spec in enumerate(rule.findings):
        if problem := when_problem(spec.when, columns, params, finding_trees[i]):
            fail(("findings", i, "when"), problem)
        column(("findings", i, "impact_ns"), spec.impact_ns)
        column(("findings", i, "recoverable_ns"), spec.recoverable_ns)
        if spec.recoverable_ns is not None and spec.claims is None:
            fail(("findings", i, "recoverable_ns"), "needs `claims`: recoverable time is drawn on the step-time budget")
        if spec.claims is not None:
            column(("findings", i, "claims", "place"), spec.claims.place)
            column(("findings", i, "claims", "cause_column"), spec.claims.cause_column)
            known = causes(spec.claims.kind)
            for j, cause in enumerate(spec.claims.causes):
                if cause != "*" and cause not in known:
                    fail(("findings", i, "claims", "causes", j), f"no {spec.claims.kind} cause '{cause}' in the "
                         f"budget's causes (ingest/sql/causes.sql){_suggest(cause, known)}")
        for field in template_fields(spec.message):
            column(("findings", i, "message"), field)
        if spec.headline is not None:
            h = spec.headline
            column(("findings", i, "headline", "cost"), h.cost)
            for name in ("cause", "where", "fix"):
                headline_part(("findings", i, "headline", name), name, getattr(h, name))
    for i, part in enumerate(rule.advice):
        if part.when is not None and (problem := when_problem(part.when, columns, params, advice_trees[i])):
            fail(("advice", i, "when"), problem)
        for field in template_fields(part.text):
            column(("advice", i, "text"), field)
        headline_part(("advice", i, "headline"), "fix", part.headline)
    for i, name in enumerate(rule.display):
        column(("display", i), name)
