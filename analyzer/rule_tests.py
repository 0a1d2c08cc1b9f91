"""Rule scenarios, beside their rule as semgrep-rules keeps a rule's tests: a rule's
`<id>.yaml` has `_fixtures/<id>/{fires,quiet}-*.yaml` in its folder, each a small export
(`given:`) and what the rule must say about it (`expect:`), and each with the snapshot of what it
said, `<scenario>.snap` (ruff's snapshots are the model): the status, and every finding as the
report renders it (title, severity, message, fix, evidence), so that a changed message fails its
scenario until the snapshot is rewritten (`--update-snapshots`). Built-in rules and a team's
folder follow the one convention. `nsys-diagnose test-rules DIR` and the test suite run them
through the whole pipeline (SQLite file -> ingest -> rule).

A scenario that cannot fail is worse than none, so each is checked before it runs: unknown keys
are errors (a misspelled `evidance:` would otherwise expect nothing), `params` are checked as
`--set` checks them, evidence keys must be result columns, and the file name says what the
status must be: `fires-*` expects `fired`, `quiet-*` expects `passed` or `skipped`. A run also
checks that the SQL returns the columns the YAML declares, in order.
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
import yaml
from nsys_diagnose.analyze import tables_read
from nsys_diagnose.engine.catalog import line_of, read_yaml
from nsys_diagnose.engine.model import Rule, RuleResult, Strict, as_subquery
from nsys_diagnose.engine.selection import overrides_from
from nsys_diagnose.errors import RuleSpecError, UsageError
from nsys_diagnose.ingest.database import Trace, with_memory_retry, with_trace
from nsys_diagnose.output import write_atomic
from nsys_diagnose.synthetic import expand, write_export
from nsys_diagnose.trace_report import report_from_trace
from pydantic import Field, ValidationError, field_validator

EXPECTED = {"fires": ("fired",), "quiet": ("passed", "skipped")}
FIXTURES = "_fixtures"  # a rule's scenarios: <its YAML's folder>/_fixtures/<its id>/


MAX_SCENARIO_ROWS = 1_000_000  # all tables together, repeats expanded


class Repeat(Strict):
    n: int = Field(ge=1, le=1_000_000)
    every_ns: int
    corr_step: int = 1
    id_step: int | None = Field(None, description="advance the row's id by this much per copy (CPU samples)")


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
        total = 0
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
                total += row["repeat"]["n"] if "repeat" in row else 1
        # every row is built in Python before the export is written: 40 rows repeated 1e6 times
        # each took 16 GB (issue 36); a scenario is a small case, bounded as a whole
        if total > MAX_SCENARIO_ROWS:
            raise ValueError(f"{total:,} rows once repeated; a scenario may have at most {MAX_SCENARIO_ROWS:,}")
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

    @property
    def snapshot(self) -> Path:
        return self.path.with_suffix(".snap")


def scenario_folder(rule: Rule) -> Path:
    """Where the rule's scenarios are: `_fixtures/<id>/` beside its YAML."""
    return Path(rule.source).parent / FIXTURES / rule.id


def load_case(path: Path, rules: dict[str, Rule]) -> Case:
    """The scenario at `path` (in a folder named by its rule id), checked; RuleSpecError
    naming the file, line and problem otherwise."""
    rule_id, kind = path.parent.name, path.stem.partition("-")[0]
    if kind not in EXPECTED or "-" not in path.stem:
        raise RuleSpecError(path, "a scenario's name starts with fires- (the rule must fire) or quiet- (it must not)")
    if rule_id not in rules:
        raise RuleSpecError(path, f"no rule '{rule_id}': a scenario folder is named by its rule's id")
    if scenario_folder(rules[rule_id]).resolve() != path.parent.resolve():
        raise RuleSpecError(path, f"a scenario of '{rule_id}' belongs beside the rule, in {scenario_folder(rules[rule_id])}")
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


def scenario_files(root: Path) -> list[Path]:
    """Every scenario in a folder of rules (`_fixtures/<rule-id>/*.yaml` beside the rules), sorted."""
    if not root.is_dir():
        raise RuleSpecError(root, "is not a folder of rules" if root.exists() else "rules folder does not exist")
    return sorted(root.rglob(f"{FIXTURES}/*/*.yaml"))


def load_cases(root: Path, rules: dict[str, Rule], tested: Iterable[str]) -> list[Case]:
    """Every scenario of the `tested` rules in the rules folder `root`, checked; each tested rule
    needs one of each kind."""
    tested = list(tested)
    cases = [load_case(p, rules) for p in scenario_files(root)]
    cases = [c for c in cases if c.rule_id in tested]
    for rule_id in tested:
        kinds = {c.path.stem.partition("-")[0] for c in cases if c.rule_id == rule_id}
        for kind in EXPECTED:
            if kind not in kinds:
                raise RuleSpecError(scenario_folder(rules[rule_id]),
                                    f"rule '{rule_id}' has no {kind}-*.yaml scenario "
                                    "(every rule needs one that fires and one that stays quiet)")
    return cases


@dataclass(frozen=True)
class Outcome:
    """A scenario's run: the rule's result, the columns its SQL returns (None: it did not bind)
    and the result as its snapshot renders it."""
    result: RuleResult
    columns: list[str] | None
    rendered: str


def render(case: Case, result: RuleResult) -> str:
    """The snapshot of a scenario's result: its status and reason, and each finding as the report
    renders it. Floats keep 6 significant digits: the last ones may differ between DuckDB builds."""
    doc: dict[str, Any] = {"status": result.status}
    if result.reason:
        doc["reason"] = result.reason
    doc["findings"] = [{"title": result.title, "severity": f.severity, "message": f.message, "fix": f.fix,
                        "evidence": {k: _rounded(v) for k, v in f.evidence.items()}} for f in result.findings]
    return (f"# {case.name}: what the rule says about {case.path.name}\n"
            "# (nsys-diagnose test-rules RULES_DIR --update-snapshots rewrites this file)\n"
            + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def snapshot_problem(case: Case, rendered: str) -> str | None:
    """How the run differs from the scenario's snapshot, or None."""
    try:
        kept = case.snapshot.read_text(encoding="utf-8")
    except FileNotFoundError:
        return f"no snapshot {case.snapshot.name} (write it with --update-snapshots)"
    if kept == rendered:
        return None
    diff = [ln for ln in difflib.unified_diff(kept.splitlines(), rendered.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return f"differs from {case.snapshot.name} (--update-snapshots rewrites it): " + " | ".join(diff[:4])


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
        result = report.rules[0]
        return Outcome(result, result_columns(trace.con, rules[case.rule_id], case.overrides), render(case, result))
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
    if (problem := snapshot_problem(case, outcome.rendered)) is not None:
        out.append(problem)
    return out


def run_all(cases: list[Case], rules: dict[str, Rule], update: bool = False) -> Iterator[tuple[Case, list[str]]]:
    """(case, failures) for each case, in order. `update`: (re)write each scenario's snapshot
    from its run first, so that only its other expectations can fail."""
    with tempfile.TemporaryDirectory(prefix="nsys-diagnose-scenarios-") as tmp:
        for case in cases:
            outcome = run_case(case, rules, Path(tmp))
            if update and snapshot_problem(case, outcome.rendered) is not None:
                write_atomic(case.snapshot, outcome.rendered)
            yield case, failures(case, outcome, rules[case.rule_id])
