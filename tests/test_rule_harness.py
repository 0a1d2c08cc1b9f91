"""The rule-author's safety net: `nsys-diagnose test-rules` and the load-time rule checks reject
what would otherwise pass silently, each with one line naming the file, the line and the problem.
Run in-process through click's CliRunner, asserting the whole line the user reads."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from nsys_diagnose.cli import main

from .conftest import FIXTURES

PID = 281476654432256  # pid 100 (2^48 + 100 * 2^24)

RULE_YAML = """\
id: many-kernels
title: Many kernels
category: team
severity: warning
summary: The trace holds many kernels.
docs: {what: counts kernels, why: a test rule, fix: launch fewer}
requires: [kernels]
params:
  min_kernels: {type: int, default: 2, unit: count, why: two is already many here}
columns:
  kernel_count: kernels in the trace
  device_id: CUDA device ordinal
findings:
  - when: kernel_count >= $min_kernels
    message: "{kernel_count:n} kernels on GPU {device_id}"
display: [device_id, kernel_count]
"""
RULE_SQL = "SELECT count(*) AS kernel_count, min(device_id) AS device_id FROM kernels\n"


def scenario(kernels: int, status: str, extra: str = "", params: str = "") -> str:
    """A scenario of `kernels` kernels; `params` goes on line 2, `extra` after `status:` (line 8)."""
    text = textwrap.dedent(f"""\
        description: {kernels} kernels
        given:
          strings: {{1: k}}
          CUPTI_ACTIVITY_KIND_KERNEL:
            - {{start: 1000, end: 2000, deviceId: 0, streamId: 7, correlationId: 1, globalPid: {PID},
               demangledName: 1, shortName: 1, repeat: {{n: {kernels}, every_ns: 5000}}}}
        expect:
          status: {status}
        """) + extra
    return text.replace("given:", params + "given:", 1)


def team_folder(tmp_path: Path, scenarios: dict[str, str] | None = None) -> Path:
    """A team's rules folder with one rule and its scenarios beside it, in _fixtures/<id>/."""
    folder = tmp_path / "team"
    (folder / "team").mkdir(parents=True)
    (folder / "team" / "many-kernels.yaml").write_text(RULE_YAML)
    (folder / "team" / "many-kernels.sql").write_text(RULE_SQL)
    cases = folder / "team" / "_fixtures" / "many-kernels"
    cases.mkdir(parents=True)
    default = {"fires-three": scenario(3, "fired", "  findings: 1\n  evidence:\n    - {kernel_count: 3, device_id: 0}\n"),
               "quiet-one": scenario(1, "passed")}
    for name, text in (default if scenarios is None else default | scenarios).items():
        (cases / f"{name}.yaml").write_text(text)
    return folder


def invoke(*args: object) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the console entry point, as a user's shell sees them."""
    with CliRunner().isolation() as (out, err, _):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        return code, out.getvalue().decode(), err.getvalue().decode()


def error_line(*args: object) -> str:
    code, out, err = invoke(*args)
    assert (code, out, err.count("\n")) == (2, "", 1), (code, out, err)
    return err.rstrip("\n")


# --- test-rules ---------------------------------------------------------------------------------

def test_a_team_folder_passes_once_its_snapshots_are_written(tmp_path):
    folder = team_folder(tmp_path)
    code, out, _ = invoke("test-rules", folder)
    assert code == 1 and out.splitlines()[0] == (
        "FAIL many-kernels/fires-three: no snapshot fires-three.snap (write it with --update-snapshots)")
    assert invoke("test-rules", folder, "--update-snapshots")[0] == 0
    code, out, err = invoke("test-rules", folder)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["ok   many-kernels/fires-three", "ok   many-kernels/quiet-one",
                                "2 scenarios of 1 rule: 2 passed, 0 failed"]


def test_a_snapshot_holds_the_rendered_findings_and_a_changed_message_fails(tmp_path):
    folder = team_folder(tmp_path)
    invoke("test-rules", folder, "--update-snapshots")
    cases = folder / "team" / "_fixtures" / "many-kernels"
    assert (cases / "quiet-one.snap").read_text().splitlines()[2:] == ["status: passed", "findings: []"]
    snap = yaml.safe_load((cases / "fires-three.snap").read_text())
    assert snap == {"status": "fired", "findings": [{
        "title": "Many kernels", "severity": "warning", "message": "3 kernels on GPU 0", "fix": "launch fewer",
        "evidence": {"kernel_count": 3, "device_id": 0}}]}
    rule = folder / "team" / "many-kernels.yaml"
    rule.write_text(rule.read_text().replace("kernels on GPU", "kernels launched on GPU"))
    code, out, _ = invoke("test-rules", folder)
    assert code == 1 and out.splitlines()[0] == (
        "FAIL many-kernels/fires-three: differs from fires-three.snap (--update-snapshots rewrites it): "
        "-  message: 3 kernels on GPU 0 | +  message: 3 kernels launched on GPU 0")


def test_two_rules_may_have_scenarios_of_the_same_name(tmp_path):
    folder = team_folder(tmp_path)
    (folder / "team" / "few-kernels.yaml").write_text(RULE_YAML.replace("id: many-kernels", "id: few-kernels"))
    (folder / "team" / "few-kernels.sql").write_text(RULE_SQL)
    (folder / "team" / "_fixtures" / "few-kernels").mkdir()
    for name in ("fires-three", "quiet-one"):  # as many-kernels' scenarios are named
        (folder / "team" / "_fixtures" / "few-kernels" / f"{name}.yaml").write_text(
            (folder / "team" / "_fixtures" / "many-kernels" / f"{name}.yaml").read_text())
    code, out, err = invoke("test-rules", folder, "--update-snapshots")
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "4 scenarios of 2 rules: 4 passed, 0 failed"


def test_a_failing_scenario_exits_1(tmp_path):
    folder = team_folder(tmp_path, {"quiet-one": scenario(4, "passed")})
    code, out, _ = invoke("test-rules", folder, "--update-snapshots")
    assert code == 1
    assert out.splitlines()[1] == "FAIL many-kernels/quiet-one: status fired, expected passed"
    assert out.splitlines()[-1] == "2 scenarios of 1 rule: 1 passed, 1 failed"


def test_sql_columns_must_be_the_declared_ones(tmp_path):
    folder = team_folder(tmp_path)
    (folder / "team" / "many-kernels.sql").write_text(
        "SELECT min(device_id) AS device_id, count(*) AS kernel_count FROM kernels\n")
    code, out, _ = invoke("test-rules", folder, "--update-snapshots")
    assert code == 1
    assert out.splitlines()[1] == (
        "FAIL many-kernels/quiet-one: the SQL returns the columns ['device_id', 'kernel_count'], its YAML's "
        "`columns:` lists ['kernel_count', 'device_id'] (the same names, in order)")


def test_misspelled_key_is_rejected(tmp_path):
    """`evidance:` would expect nothing and pass; the harness refuses it."""
    folder = team_folder(tmp_path, {"fires-three": scenario(3, "fired", "  evidance:\n    - {kernel_count: 3}\n")})
    path = folder / "team" / "_fixtures" / "many-kernels" / "fires-three.yaml"
    assert error_line("test-rules", folder) == f"nsys-diagnose: {path}:9: expect.evidance: unknown key"


def test_misspelled_parameter_is_rejected(tmp_path):
    folder = team_folder(tmp_path, {"quiet-one": scenario(3, "passed", params="params: {min_kernel: 5}\n")})
    path = folder / "team" / "_fixtures" / "many-kernels" / "quiet-one.yaml"
    assert error_line("test-rules", folder) == (
        f"nsys-diagnose: {path}:2: params 'many-kernels.min_kernel': rule 'many-kernels' has no parameter "
        "'min_kernel' (has: min_kernels)")


def test_parameter_out_of_range_is_rejected(tmp_path):
    folder = team_folder(tmp_path, {"quiet-one": scenario(3, "passed", params="params: {min_kernels: -1}\n")})
    path = folder / "team" / "_fixtures" / "many-kernels" / "quiet-one.yaml"
    assert error_line("test-rules", folder) == (
        f"nsys-diagnose: {path}:2: params 'many-kernels.min_kernels': -1 is below the smallest allowed value 0 count")


def test_quiet_scenario_expecting_fired_is_rejected(tmp_path):
    folder = team_folder(tmp_path, {"quiet-one": scenario(3, "fired")})
    path = folder / "team" / "_fixtures" / "many-kernels" / "quiet-one.yaml"
    assert error_line("test-rules", folder) == (
        f"nsys-diagnose: {path}:8: expect.status: a quiet-* scenario expects passed or skipped, not fired")


def test_fires_scenario_expecting_passed_is_rejected(tmp_path):
    folder = team_folder(tmp_path, {"fires-three": scenario(3, "passed")})
    path = folder / "team" / "_fixtures" / "many-kernels" / "fires-three.yaml"
    assert error_line("test-rules", folder) == (
        f"nsys-diagnose: {path}:8: expect.status: a fires-* scenario expects fired, not passed")


@pytest.mark.parametrize("name, text, problem", [
    ("fires-three", scenario(3, "fired", "  evidence:\n    - {kernel_cnt: 3}\n"),
     ":10: expect.evidence.0: 'kernel_cnt' is not a result column of many-kernels"),
    ("quiet-one", scenario(1, "passed", "  findings: 2\n"), ":7: expect: a passed rule has no findings to count or show"),
    ("quiet-one", scenario(1, "passed").replace("every_ns", "every"),
     ":2: given: given.CUPTI_ACTIVITY_KIND_KERNEL: repeat.every_ns: Field required"),
    ("noisy-one", scenario(1, "passed"),
     ": a scenario's name starts with fires- (the rule must fire) or quiet- (it must not)"),
])
def test_other_bad_scenarios_are_rejected(tmp_path, name, text, problem):
    folder = team_folder(tmp_path, {name: text})
    path = folder / "team" / "_fixtures" / "many-kernels" / f"{name}.yaml"
    assert error_line("test-rules", folder) == f"nsys-diagnose: {path}{problem}"


def test_every_rule_needs_both_kinds_and_folders_name_rules(tmp_path):
    folder = team_folder(tmp_path)
    (folder / "team" / "_fixtures" / "many-kernels" / "quiet-one.yaml").unlink()
    assert error_line("test-rules", folder) == (
        f"nsys-diagnose: {folder / 'team' / '_fixtures' / 'many-kernels'}: rule 'many-kernels' has no quiet-*.yaml scenario "
        "(every rule needs one that fires and one that stays quiet)")
    (folder / "team" / "_fixtures" / "many-kernel").mkdir()
    stray = folder / "team" / "_fixtures" / "many-kernel" / "quiet-x.yaml"
    stray.write_text(scenario(1, "passed"))
    assert error_line("test-rules", folder) == (
        f"nsys-diagnose: {stray}: no rule 'many-kernel': a scenario folder is named by its rule's id")


def test_usage_errors(tmp_path):
    folder = team_folder(tmp_path)
    assert error_line("test-rules", folder, "--select", "nope") == f"nsys-diagnose: --select: no rule 'nope' in {folder}"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert error_line("test-rules", empty) == f"nsys-diagnose: {empty}: holds no rules (<id>.yaml beside <id>.sql)"


def test_a_scenario_away_from_its_rule_is_rejected(tmp_path):
    """One convention, for built-in and team folders: a rule's scenarios are beside it."""
    folder = team_folder(tmp_path)
    away = folder / "_fixtures" / "many-kernels" / "quiet-away.yaml"
    away.parent.mkdir(parents=True)
    away.write_text(scenario(1, "passed"))
    assert error_line("test-rules", folder) == (
        f"nsys-diagnose: {away}: a scenario of 'many-kernels' belongs beside the rule, in "
        f"{folder / 'team' / '_fixtures' / 'many-kernels'}")


def test_builtin_rules_and_their_scenarios_in_one_command():
    rules = Path(__file__).parent.parent / "rules"
    code, out, _ = invoke("test-rules", rules, "--select", "shared-gpu")
    n = len(list(rules.glob("*/_fixtures/shared-gpu/*.yaml")))
    assert n >= 2 and code == 0 and out.splitlines()[-1] == f"{n} scenarios of 1 rule: {n} passed, 0 failed"


# --- rules are checked when they load ---------------------------------------------------------

@pytest.mark.parametrize("old, new, problem", [
    ("requires: [kernels]", "requires: [kernel]", ":7: requires.0: no table 'kernel' (did you mean 'kernels'?)"),
    ("requires: [kernels]", "requires_any: [gpu_bsy]", ":7: requires_any.0: no table 'gpu_bsy' (did you mean 'gpu_busy'?)"),
    ("display: [device_id, kernel_count]", "display: [device_id, kernel_cnt]",
     ":16: display.1: 'kernel_cnt' is not among the rule's `columns:` (did you mean 'kernel_count'?)"),
    ("    message:", "    impact_ns: kernel_ns\n    message:",
     ":15: findings.0.impact_ns: 'kernel_ns' is not among the rule's `columns:` (did you mean 'kernel_count'?)"),
    ("{kernel_count:n} kernels", "{kernels:n} kernels",
     ":15: findings.0.message: 'kernels' is not among the rule's `columns:` (did you mean 'kernel_count'?)"),
    ("kernel_count >= $min_kernels", "kernel_count >= $min_kernel",
     ":14: findings.0.when: parameter $min_kernel is not among the rule's `params:` (did you mean 'min_kernels'?)"),
    ("    message:", "    claims: {kind: idle, causes: [launch, lanch]}\n    message:",
     ":15: findings.0.claims.causes.1: no idle cause 'lanch' in the budget's causes (ingest/sql/causes.sql) "
     "(did you mean 'launch'?)"),
    ("    message:", "    claims: {kind: gpu, causes: [launch]}\n    message:",
     ":15: findings.0.claims.causes.0: no gpu cause 'launch' in the budget's causes (ingest/sql/causes.sql)"),
])
def test_bad_rule_is_one_line_with_file_and_line(tmp_path, old, new, problem):
    folder = team_folder(tmp_path)
    path = folder / "team" / "many-kernels.yaml"
    assert old in RULE_YAML
    path.write_text(RULE_YAML.replace(old, new))
    assert error_line("rules", "--rules", folder) == f"nsys-diagnose: {path}{problem}"


def test_bad_rule_sql_names_the_sql_file_and_line(tmp_path):
    folder = team_folder(tmp_path)
    sql = folder / "team" / "many-kernels.sql"
    sql.write_text("SELECT count(*) AS kernel_count,\n  min(device_id) AS device_id\nFROM kernels WHERE WHERE x\n")
    assert error_line("rules", "--rules", folder).startswith(f"nsys-diagnose: {sql}:3: Parser Error: syntax error")
    sql.write_text(RULE_SQL + "; SELECT 2\n")
    assert error_line("explain", "many-kernels", "--rules", folder) == (
        f"nsys-diagnose: {sql}: must hold exactly one statement, found 2")


# --- analyze and compare share their options ----------------------------------------------------

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"


@pytest.mark.parametrize("command", [[EXPORT], ["compare", EXPORT, EXPORT]])
def test_shared_options_fail_alike(tmp_path, command):
    assert error_line(*command, "--set", "gpu-idle-gaps.min_gap=1") == (
        "nsys-diagnose: --set 'gpu-idle-gaps.min_gap=1': rule 'gpu-idle-gaps' has no parameter 'min_gap' "
        "(has: min_gap_ns, min_idle_pct)")
    assert error_line(*command, "--reader", "fast") == (
        "nsys-diagnose: Invalid value for '--reader': 'fast' is not one of 'auto', 'scanner', 'sqlite3'.")
    assert error_line(*command, "--rules", tmp_path / "none") == (
        f"nsys-diagnose: {tmp_path / 'none'}: rules folder does not exist")


def test_shared_options_have_one_help():
    def option_help(*args: str) -> list[str]:
        _, out, _ = invoke(*args, "--help")
        keep = ("--rules", "--set", "--no-cache", "--cache-dir", "--reader")
        return [" ".join(line.split()) for line in out.splitlines() if line.strip().startswith(keep)]
    assert option_help("analyze") == option_help("compare") and len(option_help("compare")) == 5
