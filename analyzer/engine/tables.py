"""Every result row of a rule, as an Arrow table. The report keeps `rows_limit` rows of each
rule (50 by default) to stay small; the library's rule_rows() and --tables-dir read them all by
running the rule's SQL again, with the same parameters, on the open trace."""

from __future__ import annotations

import threading
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from nsys_diagnose.engine.model import Rule, as_subquery
from nsys_diagnose.engine.runner import MAX_RULE_ROWS
from nsys_diagnose.ingest.database import with_memory_retry
from nsys_diagnose.ingest.environment import rule_timeout_s


def rule_table(con: duckdb.DuckDBPyConnection, rule: Rule, overrides: dict[str, Any] | None = None) -> pa.Table:
    """The rule's result rows, all of them, in the rule's column order and DuckDB's types.
    Raises duckdb.Error when the SQL fails (the report says so as the rule's `error` status)."""
    params = {name: p.default for name, p in rule.params.items()} | (overrides or {})
    cursor = con.cursor()
    timer = threading.Timer(rule_timeout_s(), cursor.interrupt)  # as bounded as the rule's own run
    try:
        sql = as_subquery(rule.sql, tail=f" LIMIT {MAX_RULE_ROWS + 1}")
        used = cursor.extract_statements(sql)[0].named_parameters
        timer.start()
        table = with_memory_retry(
            cursor, lambda: _arrow(cursor.execute(sql, {k: v for k, v in params.items() if k in used})))
    finally:
        timer.cancel()
        cursor.close()
    if table.num_rows > MAX_RULE_ROWS:
        raise ValueError(f"{rule.id}: more than {MAX_RULE_ROWS:,} result rows")
    return plain_types(table)


def plain_types(table: pa.Table) -> pa.Table:
    """DuckDB's sums of BIGINT are HUGEINT, which arrive as decimal(38, 0): whole numbers become
    int64 where they fit (ns and byte totals always do), other decimals float64, as in the JSON.
    Labels (the ingest's ENUM of names) arrive dictionary-encoded and become plain strings."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type))
            continue
        if not pa.types.is_decimal(f.type):
            continue
        column = table.column(i)
        try:
            column = pc.cast(column, pa.int64()) if f.type.scale == 0 else pc.cast(column, pa.float64())
        except pa.ArrowInvalid:  # beyond int64: as a float, like the JSON report's value
            column = pc.cast(column, pa.float64(), safe=False)
        table = table.set_column(i, f.name, column)
    return table


def _arrow(cursor: duckdb.DuckDBPyConnection) -> pa.Table:
    """The result as an Arrow table: to_arrow_table() from DuckDB 1.5 (where fetch_arrow_table() is
    deprecated), fetch_arrow_table() before (1.4, the lowest DuckDB supported)."""
    fetch = getattr(cursor, "to_arrow_table", None) or cursor.fetch_arrow_table
    table: pa.Table = fetch()
    return table
