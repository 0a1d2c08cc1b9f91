"""The analysis's settings, declared once in ingest/sql/settings.sql with their type, unit, range
and reason: the ingest's SQL reads them there (phase_settings, budget_settings), Python here,
without an export."""

from __future__ import annotations

import functools
from typing import Any

from nsys_diagnose.ingest import sql_library


@functools.cache
def declared() -> dict[str, dict[str, Any]]:
    """Every setting's row of settings.sql, by name, in their order there."""
    return {r["name"]: r for r in sql_library.data_rows("settings")}


def value(name: str) -> int | float:
    """A setting's value, as its type says."""
    row = declared()[name]
    return int(row["value"]) if row["type"] == "int" else float(row["value"])
