"""Rule scenarios: `<fixtures>/<rule-id>/{fires,quiet}-*.yaml`, each a small export (`given:`)
and what the rule must say about it (`expect:`). `nsys-diagnose test-rules DIR` and the test
suite run them through the whole pipeline (SQLite file -> ingest -> rule).

A scenario that cannot fail is worse than none, so each is checked before it runs: unknown keys
are errors (a misspelled `evidance:` would otherwise expect nothing), `params` are checked as
`--set` checks them, evidence keys must be result columns, and the file name says what the
status must be: `fires-*` expects `fired`, `quiet-*` expects `passed` or `skipped`. A run also
checks that the SQL returns the columns the YAML declares, in order.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
from nsys_diagnose.analyze import report_from_trace, tables_read
from nsys_diagnose.engine.catalog import line_of, read_yaml
from nsys_diagnose.engine.model import Rule, RuleResult, Strict, as_subquery
from nsys_diagnose.engine.selection import overrides_from
from nsys_diagnose.errors import RuleSpecError, UsageError
from nsys_diagnose.ingest.database import Trace, with_memory_retry, with_trace
from nsys_diagnose.synthetic import expand, write_export
from pydantic import Field, ValidationError, field_validator

EXPECTED = {"fires": ("fired",), "quiet": ("passed", "skipped")}


class Repeat(Strict):
    n: int = Field(ge=1, le=1_000_000)
    every_ns: int
    corr_step: int = 1


class Expect(Strict):
    status: Literal["fired", "passed", "skipped", "error"]
    findings: int | None = Field(None, ge=0, description="how many findings (optional)")
    evidence: list[dict[str, Any]] = Field(default_factory=list, description="each entry: a subset of "
                                           "one finding's evidence, in the order of the findings")
    reason: str | None = Field(None, description="a substring of the skip or error reason")


class Scenario(Strict):
    description: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict, description="overrides of the rule's parameters")
    given: dict[str, Any] = Field(description="raw nsys tables; `strings: {id: text}` is StringIds")
    expect: Expect

    @field_validator("given")
    @classmethod
    def _tables(cls, given: dict[str, Any]) -> dict[str, Any]:
        for table, rows in given.items():
            if table == "strings":
                if not isinstance(rows, dict) or not all(isinstance(k, int) and isinstance(v, str)
                                                         for k, v in rows.items()):
                    raise ValueError("given.strings: expected a mapping {id: text}")
                continue
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise ValueError(f"given.{table}: expected a list of rows (mappings)")
            for row in rows:
                if "repeat" in row:
                    try:
                        Repeat.model_validate(row["repeat"])
                    except ValidationError as e:
                        err = e.errors()[0]
                        where = ".".join(map(str, err["loc"]))
                        raise ValueError(f"given.{table}: repeat{'.' + where if where else ''}: "
                                         f"{'unknown key' if err['type'] == 'extra_forbidden' else err['msg']}") from None
        return given


@dataclass(frozen=True)
class Case:
    """One checked scenario of one rule."""
    path: Path
    rule_id: str
    scenario: Scenario
    overrides: dict[str, Any]  # the typed parameters

    @property
    def name(self) -> str:
        return f"{self.rule_id}/{self.path.stem}"


def load_case(path: Path, rules: dict[str, Rule]) -> Case:
    """The scenario at `path` (in a folder named by its rule id), checked; RuleSpecError
    naming the file, line and problem otherwise."""
    rule_id, kind = path.parent.name, path.stem.partition("-")[0]
    if kind not in EXPECTED or "-" not in path.stem:
        raise RuleSpecError(path, "a scenario's name starts with fires- (the rule must fire) or quiet- (it must not)")
    if rule_id not in rules:
        raise RuleSpecError(path, f"no rule '{rule_id}': a scenario folder is named by its rule's id")
    data, node = read_yaml(path)
    if not isinstance(data, dict) or node is None:
        raise RuleSpecError(path, "a scenario must be a YAML mapping", 1)
    try:
        scenario = Scenario(**data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        what = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        raise RuleSpecError(path, f"{'.'.join(map(str, loc))}: {what}", line_of(node, loc)) from None
    rule, expect = rules[rule_id], scenario.expect
    if expect.status not in EXPECTED[kind]:
        raise RuleSpecError(path, f"expect.status: a {kind}-* scenario expects {' or '.join(EXPECTED[kind])}, "
                                  f"not {expect.status}", line_of(node, ("expect", "status")))
    if expect.status != "fired" and (expect.findings or expect.evidence):
        raise RuleSpecError(path, f"expect: a {expect.status} rule has no findings to count or show",
                            line_of(node, ("expect",)))
    overrides: dict[str, Any] = {}
    for name, value in scenario.params.items():
        try:  # as --set and the config file check them: a known parameter, of its type and range
            overrides |= overrides_from({f"{rule_id}.{name}": value}, rules, origin="params").get(rule_id, {})
        except UsageError as e:
            raise RuleSpecError(path, str(e), line_of(node, ("params", name))) from None
    for i, want in enumerate(expect.evidence):
        for key in want:
            if key not in rule.columns:
                raise RuleSpecError(path, f"expect.evidence.{i}: '{key}' is not a result column of {rule_id}",
                                    line_of(node, ("expect", "evidence", i)))
    return Case(path, rule_id, scenario, overrides)


def scenario_files(fixtures: Path, rule_ids: Iterable[str] | None = None) -> list[Path]:
    """Every scenario under `fixtures` (those of `rule_ids` only, when given), sorted."""
    if not fixtures.is_dir():
        raise RuleSpecError(fixtures, "is not a folder of rule scenarios" if fixtures.exists()
                            else "scenario folder does not exist")
    wanted = set(rule_ids) if rule_ids is not None else None
    return sorted(p for p in fixtures.glob("*/*.yaml") if wanted is None or p.parent.name in wanted)


def load_cases(fixtures: Path, rules: dict[str, Rule], tested: Iterable[str]) -> list[Case]:
    """Every scenario of the `tested` rules, checked; each tested rule needs one of each kind."""
    tested = list(tested)
    cases = [load_case(p, rules) for p in scenario_files(fixtures)]
    cases = [c for c in cases if c.rule_id in tested]
    for rule_id in tested:
        kinds = {c.path.stem.partition("-")[0] for c in cases if c.rule_id == rule_id}
        for kind in EXPECTED:
            if kind not in kinds:
                raise RuleSpecError(fixtures / rule_id, f"rule '{rule_id}' has no {kind}-*.yaml scenario "
                                                        "(every rule needs one that fires and one that stays quiet)")
    return cases


@dataclass(frozen=True)
class Outcome:
    """A scenario's run: the rule's result and the columns its SQL returns (None: it did not bind)."""
    result: RuleResult
    columns: list[str] | None


def result_columns(con: duckdb.DuckDBPyConnection, rule: Rule, overrides: dict[str, Any]) -> list[str] | None:
    """The names of the columns the rule's SQL returns on this trace, found without running it."""
    params = {name: p.default for name, p in rule.params.items()} | overrides
    sql = as_subquery(rule.sql, tail=" LIMIT 0")
    cursor = con.cursor()
    try:
        used = cursor.extract_statements(sql)[0].named_parameters
        return [d[0] for d in cursor.execute(sql, {k: v for k, v in params.items() if k in used}).description]
    except duckdb.Error:
        return None  # the rule's own run says why, as its `error` status
    finally:
        cursor.close()


def run_case(case: Case, rules: dict[str, Rule], workdir: Path) -> Outcome:
    """The rule's run on the scenario's export, written into `workdir` (no cache: it is new)."""
    folder = workdir / case.rule_id  # two rules may each have a scenario of the same name
    folder.mkdir(exist_ok=True)
    export = write_export(expand(case.scenario.given), folder / f"{case.path.stem}.sqlite")
    overrides = {case.rule_id: case.overrides}

    def run(trace: Trace) -> Outcome:
        report = with_memory_retry(trace.con, lambda: report_from_trace(trace, rules, overrides, [case.rule_id]))
        return Outcome(report.rules[0], result_columns(trace.con, rules[case.rule_id], case.overrides))
    return with_trace(export, run, use_cache=False, tables=tables_read([rules[case.rule_id]]))


def failures(case: Case, outcome: Outcome, rule: Rule) -> list[str]:
    """What the run gets wrong against the scenario's expectation and the rule's declared
    columns; empty when it passes."""
    expect, result, out = case.scenario.expect, outcome.result, []
    if outcome.columns is not None and outcome.columns != list(rule.columns):
        out.append(f"the SQL returns the columns {outcome.columns}, its YAML's `columns:` lists {list(rule.columns)} "
                   "(the same names, in order)")
    if result.status != expect.status:
        out.append(f"status {result.status}, expected {expect.status}" + (f" ({result.reason})" if result.reason else ""))
    if expect.findings is not None and len(result.findings) != expect.findings:
        out.append(f"{len(result.findings)} findings, expected {expect.findings}: "
                   + "; ".join(f.message for f in result.findings[:3]))
    if len(expect.evidence) > len(result.findings):
        out.append(f"{len(expect.evidence)} evidence entries, but {len(result.findings)} findings")
    for i, (want, finding) in enumerate(zip(expect.evidence, result.findings)):
        got = {k: finding.evidence.get(k) for k in want}
        if got != want:
            out.append(f"finding {i + 1}: evidence {got}, expected {want}")
    if expect.reason is not None and expect.reason not in (result.reason or ""):
        out.append(f"reason {result.reason!r} does not contain {expect.reason!r}")
    for finding in result.findings:  # a message renders every field
        if "{" in finding.message or not finding.message.strip():
            out.append(f"message not fully rendered: {finding.message!r}")
    return out


def run_all(cases: list[Case], rules: dict[str, Rule]) -> Iterator[tuple[Case, list[str]]]:
    """(case, failures) for each case, in order."""
    with tempfile.TemporaryDirectory(prefix="nsys-diagnose-scenarios-") as tmp:
        for case in cases:
            yield case, failures(case, run_case(case, rules, Path(tmp)), rules[case.rule_id])
