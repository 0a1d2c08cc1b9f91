"""Every scenario beside the built-in rules (rules/<category>/_fixtures/<rule-id>/*.yaml), through
the whole pipeline, by the same harness as `nsys-diagnose test-rules` (nsys_diagnose.rule_tests):
checked first, then run, then compared with its snapshot (`nsys-diagnose test-rules rules
--update-snapshots` rewrites them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nsys_diagnose import rule_tests
from nsys_diagnose.engine.catalog import load_rules

from .conftest import ROOT

# the repository's rules (their scenarios live beside them, and an installed wheel leaves them out)
RULES = load_rules([ROOT / "rules"])
CASES = rule_tests.load_cases(ROOT / "rules", RULES, RULES)  # a bad scenario fails collection


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule_id}-{c.path.stem}")
def test_rule_fixture(case: rule_tests.Case, tmp_path: Path):
    problems = rule_tests.failures(case, rule_tests.run_case(case, RULES, tmp_path), RULES[case.rule_id])
    assert not problems, "; ".join(problems)
