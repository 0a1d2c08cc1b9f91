"""Run rules over an opened trace. Tiny on purpose: the knowledge lives in rules/ and sql/.

A rule's SQL is one read-only SELECT with DuckDB named parameters; its result rows are the
evidence table. Each finding spec's `when` is a SQL boolean expression evaluated over those
rows; the rows where it holds become findings, with the message rendered from the row.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import duckdb

from .errors import UsageError
from .model import Finding, Rule, RuleResult
from .units import render

PY_TYPES = {"int": int, "float": float, "str": str}
RULE_TIMEOUT_S = 120.0


def parse_overrides(pairs: list[str] | tuple[str, ...], rules: dict[str, Rule]) -> dict[str, dict[str, Any]]:
    """`ID.PARAM=VALUE` strings -> {rule id: {param: typed value}}; unknown names are usage errors."""
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        rule_id, dot, param = key.partition(".")
        if not eq or not dot:
            raise UsageError(f"--set {pair!r}: expected ID.PARAM=VALUE")
        if rule_id not in rules:
            raise UsageError(f"--set {pair!r}: no rule '{rule_id}' (see `nsys-diagnose rules`)")
        spec = rules[rule_id].params.get(param)
        if spec is None:
            known = ", ".join(rules[rule_id].params) or "none"
            raise UsageError(f"--set {pair!r}: rule '{rule_id}' has no parameter '{param}' (has: {known})")
        out.setdefault(rule_id, {})[param] = convert(raw, spec.type, pair)
    return out


def convert(raw: str, typ: str, context: str) -> Any:
    try:
        if typ == "bool":
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1", "yes")
        if typ == "list":
            return [s.strip() for s in raw.split(",") if s.strip()]
        if typ == "int":
            return int(float(raw)) if "e" in raw.lower() else int(raw)
        return PY_TYPES[typ](raw)
    except ValueError:
        raise UsageError(f"--set {context!r}: {raw!r} is not a valid {typ}") from None


def missing_inputs(rule: Rule, captured: dict[str, bool]) -> list[str]:
    missing = [v for v in rule.requires if not captured.get(v, False)]
    if rule.requires_any and not any(captured.get(v, False) for v in rule.requires_any):
        missing.append(" or ".join(rule.requires_any))
    return missing


def _composed_sql(rule: Rule) -> str:
    body = rule.sql.strip().rstrip(";")
    flags = "".join(f", ({spec.when}) AS __finding_{i}" for i, spec in enumerate(rule.findings))
    return f"SELECT *{flags} FROM (\n{body}\n) AS rule_rows"


def check_sql(con: duckdb.DuckDBPyConnection, rule: Rule) -> None:
    statements = con.extract_statements(rule.sql)
    if len(statements) != 1:
        raise ValueError(f"{rule.id}.sql must hold exactly one statement, found {len(statements)}")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise ValueError(f"{rule.id}.sql must be a SELECT, found {statements[0].type.name}")


def run_rule(con: duckdb.DuckDBPyConnection, rule: Rule, overrides: dict[str, Any],
             captured: dict[str, bool]) -> RuleResult:
    base = dict(id=rule.id, title=rule.title, category=rule.category)
    missing = missing_inputs(rule, captured)
    if missing:
        return RuleResult(**base, status="skipped", reason="not captured: " + ", ".join(missing))
    params = {name: p.default for name, p in rule.params.items()} | overrides
    started = time.perf_counter()
    cursor = con.cursor()
    timer = threading.Timer(RULE_TIMEOUT_S, cursor.interrupt)
    try:
        check_sql(cursor, rule)
        sql = _composed_sql(rule)
        used = cursor.extract_statements(sql)[0].named_parameters
        timer.start()
        result = cursor.execute(sql, {k: v for k, v in params.items() if k in used})
        names = [d[0] for d in result.description]
        raw = result.fetchall()
    except Exception as e:  # a broken rule must not stop the others
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if isinstance(e, duckdb.InterruptException):
            reason = f"interrupted after {RULE_TIMEOUT_S:.0f} s"
        return RuleResult(**base, status="error", reason=f"{rule.source}: {reason}",
                          seconds=time.perf_counter() - started)
    finally:
        timer.cancel()
        cursor.close()
    flag_cols = [n for n in names if n.startswith("__finding_")]
    rows = [dict(zip(names, r)) for r in raw]
    evidence_rows = [{k: v for k, v in row.items() if k not in flag_cols} for row in rows]
    findings: list[Finding] = []
    try:
        for i, spec in enumerate(rule.findings):
            hits = [ev for row, ev in zip(rows, evidence_rows) if row[f"__finding_{i}"]]
            for ev in hits[: spec.limit]:
                impact = ev.get(spec.impact_ns) if spec.impact_ns else None
                findings.append(Finding(
                    rule_id=rule.id, severity=spec.severity or rule.severity,
                    message=render(spec.message, ev), fix=spec.fix or rule.docs.fix,
                    impact_ns=int(impact) if impact is not None else None, evidence=ev))
    except (KeyError, ValueError, TypeError) as e:
        return RuleResult(**base, status="error", reason=f"{rule.source}: message template: {e}",
                          seconds=time.perf_counter() - started)
    return RuleResult(**base, status="fired" if findings else "passed", findings=findings,
                      rows=evidence_rows[: rule.rows_limit], row_count=len(rows), display=rule.display,
                      seconds=time.perf_counter() - started)
