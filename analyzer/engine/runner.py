"""Run rules over an opened trace. Tiny on purpose: the knowledge lives in rules/ and sql/.

A rule's SQL is one read-only SELECT with DuckDB named parameters; its result rows are the
evidence table. Each finding spec's `when` is a SQL boolean expression evaluated over those
rows; the rows where it holds become findings, with the message rendered from the row. Both are
checked when the rule loads (rule_checks.py), so a rule here is one SELECT and each `when` one
expression over its columns.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable

import duckdb
from nsys_diagnose import limits
from nsys_diagnose.ceiling import RULES_HEADROOM_BYTES, ceiling
from nsys_diagnose.engine import bounds, claims, headlines
from nsys_diagnose.engine.model import Finding, Rule, RuleResult, as_subquery
from nsys_diagnose.engine.params import convert, parse_overrides  # noqa: F401 (their home was here)
from nsys_diagnose.ingest.database import is_corrupt, with_memory_retry
from nsys_diagnose.ingest.environment import RULES_MEMORY_LIMIT, at_once, memory_limit, rule_timeout_s
from nsys_diagnose.ingest.schedule import stop
from nsys_diagnose.units import render

MAX_RULES_AT_ONCE = 4
SIDE_BY_SIDE_MAX_BYTES = 512 << 20  # rules on a bigger database run one at a time (_workers)
MAX_RULE_ROWS = 1_000_000  # a result this long is a runaway query (say, a cross join), not evidence
FETCH_ROWS = 10_000  # a rule's rows are read this many at a time (_Kept keeps the few the report uses)


def plain(value: Any) -> Any:
    """A rule's result value as JSON can carry it: NaN/inf become None (no JSON for them),
    bytes become text, dates/intervals/decimals/uuids their usual forms, nested values likewise."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return limits.clip(value, limits.MAX_VALUE_BYTES)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return limits.clip(bytes(value).decode("utf-8", "backslashreplace"), limits.MAX_VALUE_BYTES)
    if isinstance(value, decimal.Decimal):
        return plain(float(value))
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1e9)  # ns, like every duration here
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        kept = [plain(v) for v in value[: limits.MAX_LIST_ITEMS]]
        return kept + ([f"... [{len(value) - len(kept):,} more values]"] if len(value) > len(kept) else [])
    return value


def missing_inputs(rule: Rule, captured: dict[str, bool]) -> list[str]:
    missing = [v for v in rule.requires if not captured.get(v, False)]
    if rule.requires_any and not any(captured.get(v, False) for v in rule.requires_any):
        missing.append(" or ".join(rule.requires_any))
    return missing


def _composed_sql(rule: Rule) -> str:
    flags = "".join(f", ({spec.when}) AS __finding_{i}" for i, spec in enumerate(rule.findings))
    flags += "".join(f", coalesce(({part.when}), false) AS __advice_{i}" for i, part in enumerate(rule.advice) if part.when)
    return as_subquery(rule.sql, flags)


def advice(rule: Rule, row: dict[str, Any], evidence: dict[str, Any]) -> str:
    """The fix for one finding: the rule's advice parts whose condition holds on its row (a part
    the trace shows is already done is left out), or the rule's general fix."""
    return " ".join(text for text, _ in advice_parts(rule, row, evidence))


def advice_parts(rule: Rule, row: dict[str, Any], evidence: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """The fix for one finding in parts, each with what it recommends (engine/fixes.py checks
    those against the trace): the advice parts whose condition holds on its row, or the rule's
    general fix."""
    parts: list[tuple[str, tuple[str, ...]]] = [
        (" ".join(render(p.text, evidence).split()), tuple(p.fixes))
        for i, p in enumerate(rule.advice) if not p.when or row.get(f"__advice_{i}")]
    return parts or [(rule.docs.fix, tuple(rule.docs.fixes))]


def _where(rule: Rule, error: Exception, composed: str | None) -> str:
    """`file:line` of a SQL error, from DuckDB's `LINE n:` in the SQL it ran: the rule's SQL, or
    the composed SQL, where the `when` expressions come before the rule's (stripped) SQL."""
    match = re.search(r"^LINE (\d+):", str(error), re.M)
    if not match:
        return rule.source
    line = int(match[1])
    if composed is not None:  # the body sits between the `when` line(s) and ") AS rule_rows"
        first = composed.count("\n") - rule.sql.strip().rstrip(";").count("\n")
        if line < first:
            return rule.source  # in a `when` of the YAML
        line += rule.sql[: len(rule.sql) - len(rule.sql.lstrip())].count("\n") - first + 1
    return f"{Path(rule.source).with_suffix('.sql')}:{line}"


def run_rules(con: duckdb.DuckDBPyConnection, rules: list[Rule], overrides: dict[str, dict[str, Any]],
              captured: dict[str, bool], on_done: Callable[[int, Rule], None] | None = None) -> list[RuleResult]:
    """The rules' results, in `rules`' order, each run on its own cursor, side by side on a small
    trace (_workers). on_done(n, rule) is called, in the caller's thread, as the n-th one ends."""
    cursors = [con.cursor() for _ in rules]
    try:
        with ceiling(RULES_HEADROOM_BYTES), ThreadPoolExecutor(_workers(con, len(rules))) as pool:
            futures: dict[Future[RuleResult], Rule] = {}
            try:  # from the first submission: a Ctrl-C between two would leave the pool waiting on the running rules
                for c, r in zip(cursors, rules):
                    futures[pool.submit(_run_on, c, r, overrides.get(r.id, {}), captured)] = r
                pending, ended = set(futures), 0
                while pending:  # polled: a signal the OS hands to another thread wakes no blocking wait here
                    done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                    for future in done:
                        ended += 1
                        if on_done:
                            on_done(ended, futures[future])
            except BaseException:  # Ctrl-C: stop the running rules too, not only the queued ones
                stop(list(futures), cursors)
                raise
        return [future.result() for future in futures]
    finally:
        for cursor in cursors:
            cursor.close()


def _workers(con: duckdb.DuckDBPyConnection, rules: int) -> int:
    """How many rules run at once: as many as the cores, or the threads NSYS_DIAGNOSE_THREADS
    gives (at most MAX_RULES_AT_ONCE), on a small trace, where a rule's time is mostly DuckDB
    planning it on one core (a database under database.SMALL_EXPORT_BYTES gets one thread a
    query: they run side by side instead); one on a database over SIDE_BY_SIDE_MAX_BYTES, where
    each rule already uses every core and two at once hold two working sets (at 1e7 kernels,
    120 MB more RSS for 7 % less time)."""
    used_bytes = con.execute("SELECT sum(used_blocks * block_size) FROM pragma_database_size()").fetchone()
    return min(at_once(MAX_RULES_AT_ONCE), max(rules, 1)) if (used_bytes and used_bytes[0] or 0) < SIDE_BY_SIDE_MAX_BYTES else 1


# what an allocation refused under the ceiling says from inside DuckDB's Python conversion
# ("Could not allocate tuple object!"), where no MemoryError reaches us
_NO_MEMORY = re.compile(r"could not allocate|failed to allocate|bad allocation|out of memory", re.IGNORECASE)


def run_rule(con: duckdb.DuckDBPyConnection, rule: Rule, overrides: dict[str, Any],
             captured: dict[str, bool]) -> RuleResult:
    cursor = con.cursor()
    try:
        return _run_on(cursor, rule, overrides, captured)
    finally:
        cursor.close()


def _run_on(cursor: duckdb.DuckDBPyConnection, rule: Rule, overrides: dict[str, Any],
            captured: dict[str, bool]) -> RuleResult:
    base = dict(id=rule.id, title=rule.title, category=rule.category)
    missing = missing_inputs(rule, captured)
    if missing:
        return RuleResult(**base, status="skipped", reason="not captured: " + ", ".join(missing))
    params = {name: p.default for name, p in rule.params.items()} | overrides
    started = time.perf_counter()
    timeout_s = rule_timeout_s()
    timer = threading.Timer(timeout_s, cursor.interrupt)
    sql = None
    try:
        sql = _composed_sql(rule)  # one SELECT: the catalog checked its SQL and `when`s (rule_checks.py)
        used = cursor.extract_statements(sql)[0].named_parameters
        timer.start()

        def query() -> _Kept:
            args = {k: v for k, v in params.items() if k in used}
            capped, columns = bounds.bounded(cursor, sql, args)  # values cut in DuckDB (bounds.py)
            kept = _Kept(rule, columns)
            result = cursor.execute(capped, args)
            while (chunk := result.fetchmany(FETCH_ROWS)) and kept.count <= MAX_RULE_ROWS:
                kept.add(chunk)
            return kept
        kept = with_memory_retry(cursor, query)
        if kept.count > MAX_RULE_ROWS:
            raise ValueError(f"more than {MAX_RULE_ROWS:,} result rows: a rule returns an evidence table, "
                             "aggregate in SQL")
    except Exception as e:  # a broken rule must not stop the others
        if is_corrupt(e):
            raise  # the cache file, not the rule: database.with_trace rebuilds it
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if isinstance(e, duckdb.InterruptException):
            reason = f"interrupted after {timeout_s:g} s (a rule may run at most that long)"
        elif isinstance(e, (duckdb.OutOfMemoryException, MemoryError)) or _NO_MEMORY.search(reason):
            reason = (f"out of memory ({reason}): the rules may use {memory_limit(RULES_MEMORY_LIMIT)} in DuckDB "
                      f"and add at most {RULES_HEADROOM_BYTES >> 20:,} MiB to the process")
        return _failed(base, f"{_where(rule, e, sql)}: {reason}", started)
    finally:
        timer.cancel()
    # Rendering counts against the same time limit, and the rows and findings kept against the
    # rule's byte budget (limits.py): what is left out is still counted in row_count.
    deadline = started + timeout_s
    findings: list[Finding] = []
    budget = limits.MAX_RULE_BYTES
    try:
        for spec, hits in zip(rule.findings, kept.hits):
            for row, ev in hits:
                if time.perf_counter() > deadline:
                    return _failed(base, f"{rule.source}: interrupted after {timeout_s:g} s while rendering its "
                                         "findings (a rule may take at most that long)", started)
                impact = ev.get(spec.impact_ns) if spec.impact_ns else None
                estimate = claims.estimate(spec, ev, int(impact) if impact is not None else None)
                parts = [(spec.fix, tuple(spec.fixes))] if spec.fix else advice_parts(rule, row, ev)
                finding = Finding(rule_id=rule.id, severity=spec.severity or rule.severity,
                                  message=render(spec.message, ev), fix=" ".join(t for t, _ in parts), fix_parts=parts,
                                  impact_ns=int(impact) if impact is not None else None, evidence=ev,
                                  claims=spec.claims, estimate_ns=estimate,
                                  headline=headlines.parts(rule, spec, row, ev))
                budget -= limits.json_size(finding.model_dump(mode="json"))
                if budget < 0:
                    break
                findings.append(finding)
    except Exception as e:  # KeyError, ValueError, OverflowError (an infinite impact), ...
        return _failed(base, f"{rule.source}: message template: {e}", started)
    rows, _ = limits.within_budget(kept.rows, max(0, budget))
    return RuleResult(**base, status="fired" if findings else "passed", findings=findings,
                      rows=rows, row_count=kept.count, display=rule.display,
                      seconds=time.perf_counter() - started)


class _Kept:
    """What the report takes from a rule's result, fed chunk by chunk: the leading rows of its
    table and, per finding spec, the leading rows where its `when` holds, each as many as the
    rule keeps and its byte budget (limits.MAX_RULE_BYTES) lets through; every other row is
    only counted. A rule of a million rows (one per distinct kernel name) held them all as
    Python dicts, 1.4 GB (issue 36); this holds a few hundred whatever the count."""

    def __init__(self, rule: Rule, columns: list[tuple[str, str]]):
        self.columns = columns
        names = [name for name, _ in columns]
        at = dict(zip(names, bounds.positions(columns)))
        self.flags = {n for n in names if n.startswith(("__finding_", "__advice_"))}
        # where each spec's `when` sits in a raw row, how many of its rows it may use
        self.specs = [(at[f"__finding_{i}"], spec.limit) for i, spec in enumerate(rule.findings)]
        self.rows_limit = rule.rows_limit
        self.count = 0
        self.rows: list[dict[str, Any]] = []
        self.hits: list[list[tuple[dict[str, Any], dict[str, Any]]]] = [[] for _ in rule.findings]
        self._row_bytes = 0
        self._hit_bytes = [0] * len(rule.findings)

    def add(self, chunk: list[tuple[Any, ...]]) -> None:
        for raw in chunk:
            self.count += 1
            row = None
            if len(self.rows) < self.rows_limit and self._row_bytes <= limits.MAX_RULE_BYTES:
                row, ev = self._convert(raw)
                self.rows.append(ev)
                self._row_bytes += limits.json_size(ev)
            for i, (flag, limit) in enumerate(self.specs):
                # past MAX_RULE_BYTES of evidence, the findings' budget is spent before these
                if raw[flag] and len(self.hits[i]) < limit and self._hit_bytes[i] <= limits.MAX_RULE_BYTES:
                    if row is None:
                        row, ev = self._convert(raw)
                    self.hits[i].append((row, ev))
                    self._hit_bytes[i] += limits.json_size(ev)

    def _convert(self, raw: tuple[Any, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the row with its `when` and advice flags, its evidence without them)"""
        row = dict(zip((name for name, _ in self.columns), map(plain, bounds.unwrap_row(self.columns, raw))))
        return row, {k: v for k, v in row.items() if k not in self.flags}


def _failed(base: dict[str, Any], reason: str, started: float) -> RuleResult:
    return RuleResult(**base, status="error", reason=limits.clip(reason, limits.MAX_REASON_BYTES),
                      seconds=time.perf_counter() - started)
