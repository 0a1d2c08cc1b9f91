"""Lint of the rule catalog itself: what every rule must carry."""

from __future__ import annotations

import duckdb
import pytest
from nsys_diagnose import rule_tests
from nsys_diagnose.engine.catalog import builtin_rules_dir, load_rules
from nsys_diagnose.engine.rule_checks import sql_problem

from .conftest import ROOT

# the repository's rules (their scenarios live beside them, and an installed wheel leaves them out)
RULES = load_rules([ROOT / "rules"])


def test_rule_ids_unique_and_match_folders():
    for path in builtin_rules_dir().glob("*/*.yaml"):  # (a rule's scenarios are in its folder's _fixtures/)
        rule = RULES[path.stem]
        assert rule.category == path.parent.name, f"{path}: category must equal its folder"


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_has_fixtures_that_fire_and_stay_quiet(rule_id):
    folder = rule_tests.scenario_folder(RULES[rule_id])
    assert list(folder.glob("fires-*.yaml")), f"{rule_id}: no fires-* fixture in {folder}"
    assert list(folder.glob("quiet-*.yaml")), f"{rule_id}: no quiet-* fixture in {folder}"


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_docs_and_params_complete(rule_id):
    rule = RULES[rule_id]
    assert rule.summary and rule.docs.what and rule.docs.why and rule.docs.fix
    assert rule.findings, "a rule without findings never says anything"
    assert rule.requires or rule.requires_any, "declare the normalized tables the rule reads"
    for name in rule.params:
        whens = [f.when for f in rule.findings] + [p.when for p in rule.advice if p.when]
        assert f"${name}" in rule.sql or any(f"${name}" in when for when in whens), f"unused param {name}"


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_sql_is_one_select_and_columns_documented(rule_id, empty_trace):
    rule = RULES[rule_id]
    assert sql_problem(rule.sql) is None
    params = {k: p.default for k, p in rule.params.items()}
    used = empty_trace.con.extract_statements(rule.sql)[0].named_parameters
    rel = empty_trace.con.execute(rule.sql, {k: v for k, v in params.items() if k in used})
    columns = [d[0] for d in rel.description]
    assert columns == list(rule.columns), "the YAML `columns:` must list the SQL's result columns, in order"
    assert set(rule.display) <= set(columns)


def test_rule_sql_cannot_write_or_read_files(empty_trace):
    for sql in ("CREATE TABLE x AS SELECT 1", "COPY kernels TO '/tmp/x.csv'",
                "SELECT * FROM read_csv('/etc/passwd')", "ATTACH '/tmp/x.db' AS x"):
        with pytest.raises(duckdb.Error):
            empty_trace.con.execute(sql)
