"""The analysis's settings are declared once (ingest/sql/settings.sql), each with its type, unit,
range and reason and a name that no other setting and no rule parameter has, and each is read
where its row says: by the ingest's SQL through phase_settings or budget_settings, or by the
Python module it names."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from nsys_diagnose.cli import cli
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.ingest import settings, sql_library

from .conftest import ROOT

DECLARED = settings.declared()
INGEST = ("phase_settings", "budget_settings")


def test_no_two_settings_share_a_name():
    """phase_settings' min_gap_ns (5 us, the GPU's dispatch latency) was also gpu-idle-gaps'
    parameter min_gap_ns (1 ms, the gaps it reports): now dispatch_gap_ns."""
    assert len(sql_library.data_rows("settings")) == len(DECLARED)
    params = {name for rule in load_rules().values() for name in rule.params}
    assert not set(DECLARED) & params


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_each_setting_is_declared_in_full(name):
    s = DECLARED[name]
    assert s["type"] in ("int", "float") and s["unit"] in ("ns", "%", "count", "ratio") and len(s["why"]) >= 20
    assert s["min"] <= s["value"] and (s["max"] is None or s["value"] <= s["max"])
    assert s["type"] == "float" or s["value"] == int(s["value"])


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_each_setting_is_read_where_its_row_says(name):
    read_by = DECLARED[name]["read_by"]
    if read_by in INGEST:
        sql = [p.read_text() for p in [*(ROOT / "analyzer" / "ingest" / "sql").glob("*.sql"),
                                        *(ROOT / "rules").glob("*/*.sql")] if p.name != "settings.sql"]
        assert any(f"'{name}'" in text for text in sql), f"no SQL reads {read_by}'s {name}"
    else:
        assert f'settings.value("{name}")' in (ROOT / "analyzer" / read_by).read_text()


def test_the_ingest_reads_the_declared_values(empty_trace):
    rows = empty_trace.con.execute("SELECT name, value FROM phase_settings UNION ALL "
                                   "SELECT name, value FROM budget_settings").fetchall()
    assert dict(rows) == {n: s["value"] for n, s in DECLARED.items() if s["read_by"] in INGEST}


def test_explain_lists_the_settings():
    out = CliRunner().invoke(cli, ["explain", "settings"]).output
    assert "  gpu_bound_pct = 80 % (float, 0 to 100; read by budget_settings)" in out.splitlines()
    assert all(f"  {name} = " in out for name in DECLARED)
