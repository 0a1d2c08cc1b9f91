"""The analysis's settings, declared once in ingest/sql/settings.sql with their type, unit, range
and reason: the ingest's SQL reads them there (phase_settings, budget_settings), Python here,
without an export.

A run may change them (`--set NAME=VALUE`, the `[tool.nsys-diagnose.settings]` table, the API's
`settings=`): engine/params.py checks each value as it checks a rule parameter's (type, unit,
range: NaN, infinities and out-of-range numbers are usage errors), and the run carries them as a
mapping of name -> value. The ingest writes the changed values of the settings it reads over their rows
(ingest/database.py), so its cache key holds them (`ingest_changes`); Python reads its own
through `value(name, settings)`. A value equal to the default is no change: such a run shares
the default run's caches.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from nsys_diagnose.ingest import sql_library

INGEST = ("phase_settings", "budget_settings")  # the read_by of the settings the ingest reads
SettingValues = Mapping[str, "int | float"]  # name -> value, as a run sets them (checked: engine/params.py)


@functools.cache
def declared() -> dict[str, dict[str, Any]]:
    """Every setting's row of settings.sql, by name, in their order there."""
    return {r["name"]: r for r in sql_library.data_rows("settings")}


def default(name: str) -> int | float:
    """A setting's declared value, as its type says."""
    row = declared()[name]
    return int(row["value"]) if row["type"] == "int" else float(row["value"])


def value(name: str, settings: SettingValues | None = None) -> int | float:
    """A setting's value in a run with `settings` (its declared value where they do not set it)."""
    if settings and name in settings:
        return settings[name]
    return default(name)


def changes(settings: SettingValues | None) -> dict[str, int | float]:
    """The settings whose value differs from the declared one, by name (sorted): what a cache key holds."""
    typed = {n: int(v) if declared()[n]["type"] == "int" else float(v) for n, v in (settings or {}).items()}
    return {n: typed[n] for n in sorted(typed) if typed[n] != default(n)}


def ingest_changes(settings: SettingValues | None) -> dict[str, int | float]:
    """The changes to the settings the ingest reads: what its tables, and so its cache key, depend on."""
    return {n: v for n, v in changes(settings).items() if declared()[n]["read_by"] in INGEST}
