"""Every scenario in fixtures/rules/<rule-id>/*.yaml, through the whole pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from nsys_diagnose.analyze import analyze
from nsys_diagnose.engine.catalog import load_rules

from .conftest import FIXTURES
from .synth import expand, write_export

CASES = sorted((FIXTURES / "rules").glob("*/*.yaml"))
RULES = load_rules()


def run_case(case: Path, tmp_path: Path):
    spec = yaml.safe_load(case.read_text())
    rule_id = case.parent.name
    export = write_export(expand(spec["given"]), tmp_path / "given.sqlite")
    overrides = {rule_id: spec.get("params", {})}
    report = analyze(export, rules=RULES, overrides=overrides, select=[rule_id], use_cache=False)
    return spec["expect"], report.rules[0]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.parent.name}-{c.stem}")
def test_rule_fixture(case: Path, tmp_path: Path):
    expect, result = run_case(case, tmp_path)
    assert result.status == expect["status"], result.reason
    if "findings" in expect:
        assert len(result.findings) == expect["findings"], [f.message for f in result.findings]
    for want, finding in zip(expect.get("evidence", []), result.findings, strict=False):
        assert {k: finding.evidence.get(k) for k in want} == want
    assert len(expect.get("evidence", [])) <= len(result.findings)
    if "reason" in expect:
        assert expect["reason"] in (result.reason or "")
    for finding in result.findings:  # messages render every field and carry units
        assert "{" not in finding.message and finding.message.strip()
