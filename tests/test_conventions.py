"""Linter conventions: [tool.nsys-diagnose] in pyproject.toml, --select by category, --ignore,
--severity, and the CI formats github, sarif and junit; `rules --format json`."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from nsys_diagnose.engine.catalog import load_rules

from .cli_harness import assert_one_line_error, call_cli
from .conftest import FIXTURES

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"
RULES = load_rules()


def ran(doc: dict) -> set[str]:
    return {r["id"] for r in doc["rules"]}


def analyze_json(*args) -> tuple[int, dict]:
    r = call_cli(EXPORT, "--format", "json", *args)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with a pyproject.toml, the current folder set to a subfolder of it."""
    def write(table: str, *, name: str = "pyproject.toml") -> None:
        (tmp_path / name).write_text(table)
    inner = tmp_path / "src" / "deep"
    inner.mkdir(parents=True)
    monkeypatch.chdir(inner)
    return write


def test_select_by_category_and_ignore():
    _, doc = analyze_json("--select", "memory", "--ignore", "allocation-churn", "--ignore", "memory-headroom")
    assert ran(doc) == {"pageable-memcpy", "transfer-share"}
    _, doc = analyze_json("--ignore", "comm", "--ignore", "kernels")
    expected = {r.id for r in RULES.values() if r.category not in ("comm", "kernels")}
    assert ran(doc) == expected


@pytest.mark.parametrize("args,needle", [
    (["--select", "nope"], "--select: no rule or category 'nope'"),
    (["--ignore", "nope"], "--ignore: no rule or category 'nope'"),
    (["--select", "gpu", "--ignore", "gpu-idle-gaps"], "leaves no rule to run"),
    (["--severity", "hot-kernels"], "expected RULE=SEVERITY"),
    (["--severity", "hot-kernels=fatal"], "severity must be one of info, warning, error"),
    (["--severity", "nope=error"], "no rule or category 'nope'"),
])
def test_selection_errors_are_one_line(args, needle):
    assert_one_line_error(call_cli(EXPORT, *args), needle.split(":")[0], needle)


def test_severity_override_changes_findings_and_exit_code():
    code, doc = analyze_json("--select", "memory-headroom")
    assert code == 0 and {f["severity"] for f in doc["findings"]} == {"info"}
    code, doc = analyze_json("--select", "memory-headroom", "--severity", "memory-headroom=error")
    assert code == 1 and {f["severity"] for f in doc["findings"]} == {"error"}


def test_config_table_is_read_from_the_nearest_pyproject(project):
    project('[tool.nsys-diagnose]\nselect = ["memory"]\nignore = ["allocation-churn"]\nfail-on = "warning"\n'
            '[tool.nsys-diagnose.params]\n"transfer-share.min_share_pct" = 99.0\n'
            '[tool.nsys-diagnose.severity]\nmemory-headroom = "error"\n')
    code, doc = analyze_json()
    assert ran(doc) == {"memory-headroom", "pageable-memcpy", "transfer-share"}
    assert not any(f["rule_id"] == "transfer-share" for f in doc["findings"])  # 77.6 % < 99 %
    assert {f["severity"] for f in doc["findings"] if f["rule_id"] == "memory-headroom"} == {"error"}
    assert code == 1
    # flags win: --select replaces the config's, --set and --severity override per key
    # (dataloader_bound's copies are 2 % of its data-bound steady state: under min_exposed_pct)
    code, doc = analyze_json("--select", "transfer-share", "--set", "transfer-share.min_share_pct=10",
                             "--set", "transfer-share.min_exposed_pct=0", "--fail-on", "never")
    assert ran(doc) == {"transfer-share"} and doc["findings"] and code == 0
    code, doc = analyze_json("--select", "memory-headroom", "--severity", "memory-headroom=info")
    assert code == 0 and {f["severity"] for f in doc["findings"]} == {"info"}
    # --no-config: as if there were none
    _, doc = analyze_json("--no-config", "--select", "gpu")
    assert ran(doc) == {"gpu-idle-gaps"}


def test_a_pyproject_without_the_table_is_passed_over(project, tmp_path):
    project('[tool.nsys-diagnose]\nselect = ["gpu"]\n')
    (tmp_path / "src" / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    _, doc = analyze_json()
    assert ran(doc) == {"gpu-idle-gaps"}


def test_config_rule_folders_are_relative_to_the_file(project, tmp_path):
    folder = tmp_path / "team-rules" / "gpu"
    folder.mkdir(parents=True)
    source = next((FIXTURES.parent / "rules").rglob("hot-kernels.yaml"))
    yaml = source.read_text().replace("id: hot-kernels", "id: team-hot-kernels")
    (folder / "team-hot-kernels.yaml").write_text(yaml)
    (folder / "team-hot-kernels.sql").write_text(source.with_suffix(".sql").read_text())
    project('[tool.nsys-diagnose]\nrules = ["team-rules"]\nselect = ["team-hot-kernels"]\n')
    _, doc = analyze_json()
    assert ran(doc) == {"team-hot-kernels"}
    listed = json.loads(call_cli("rules", "--format", "json").stdout)
    assert "team-hot-kernels" in {r["id"] for r in listed}
    assert call_cli("explain", "team-hot-kernels").stdout.startswith("team-hot-kernels: ")
    assert "team-hot-kernels" not in call_cli("rules", "--no-config").stdout


@pytest.mark.parametrize("text,needle", [
    ("[tool.nsys-diagnose]\nselect = [\n", "invalid TOML"),
    ('[tool.nsys-diagnose]\nchoose = ["gpu"]\n', "choose: unknown key"),
    ('[tool.nsys-diagnose]\nfail-on = "sometimes"\n', "fail-on:"),
    ('[tool.nsys-diagnose]\nselect = ["nope"]\n', "select: no rule or category 'nope'"),
    ('[tool.nsys-diagnose.params]\n"hot-kernels.nope" = 1\n', "has no parameter 'nope'"),
    ('[tool.nsys-diagnose.params]\n"gpu-idle-gaps.min_gap_ns" = "soon"\n', "is not a valid int"),
    ('[tool.nsys-diagnose.severity]\nhot-kernels = "fatal"\n', "severity must be one of"),
])
def test_bad_config_is_one_line_naming_the_file(project, tmp_path, text, needle):
    project(text)
    r = call_cli(EXPORT)
    assert_one_line_error(r, tmp_path / "pyproject.toml", needle)


def test_format_github_annotations_and_job_summary(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    chosen = ("--select", "transfer-share", "--select", "memory-headroom", "--set", "transfer-share.min_exposed_pct=0")
    _, doc = analyze_json(*chosen)
    r = call_cli(EXPORT, "--format", "github", *chosen)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(doc["findings"]) >= 2
    command = {"error": "error", "warning": "warning", "info": "notice"}
    for line, f in zip(lines, doc["findings"]):
        assert line.startswith(f"::{command[f['severity']]} title=nsys-diagnose {f['rule_id']}"), line
        title, message = line.split("::", 2)[1:]
        assert title.endswith("%3A dataloader_bound.sqlite")
        assert message.startswith(f["message"].replace("%", "%25")) and "%0AFix: " in message
    first = doc["findings"][0]
    assert first["rule_id"] == "transfer-share" and "77.6 %25 of GPU busy time" in lines[0]
    stake = first.get("recoverable_ns") or first["impact_ns"]
    assert re.search(r"\((recoverable|at stake) [\d.]+ ms\)", lines[0]) and stake > 0
    text = summary.read_text()
    assert text.startswith("earlier step\n# nsys-diagnose: dataloader_bound.sqlite")  # appended
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    r = call_cli(EXPORT, "--format", "github", "--select", "comm-share")  # passes: the headline as a notice
    assert r.stdout.startswith("::notice title=nsys-diagnose%3A dataloader_bound.sqlite::No bottleneck found")


def test_format_sarif(tmp_path):
    _, doc = analyze_json("--select", "memory")
    r = call_cli(EXPORT, "--format", "sarif", "--select", "memory", "-o", tmp_path / "r.sarif")
    assert r.returncode == 0, r.stderr
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    (run,) = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "nsys-diagnose"
    assert {x["id"] for x in rules} == set(RULES)  # the whole catalog
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["help"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    assert [x["ruleId"] for x in run["results"]] == [f["rule_id"] for f in doc["findings"]]
    level = {"error": "error", "warning": "warning", "info": "note"}
    for result, f in zip(run["results"], doc["findings"]):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == level[f["severity"]] and result["message"]["text"] == f["message"]
        (location,) = result["locations"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == "fixtures/exports/dataloader_bound.sqlite"
        assert len(result["partialFingerprints"]["nsysDiagnoseFinding/v1"]) == 32
    assert run["artifacts"][0]["length"] == EXPORT.stat().st_size


def test_format_junit_one_case_per_rule():
    _, doc = analyze_json("--select", "memory")
    rank = {"info": 0, "warning": 1, "error": 2}
    for fail_on in ("error", "warning", "info", "never"):
        r = call_cli(EXPORT, "--format", "junit", "--select", "memory", "--fail-on", fail_on)
        root = ET.fromstring(r.stdout)
        cases = {c.get("name"): c for c in root.iter("testcase")}
        assert set(cases) == {x["id"] for x in doc["rules"]}
        expected = set() if fail_on == "never" else {
            f["rule_id"] for f in doc["findings"] if rank[f["severity"]] >= rank[fail_on]}
        failed = {name for name, c in cases.items() if c.find("failure") is not None}
        assert failed == expected and root.get("failures") == str(len(expected)), fail_on
        assert r.returncode == (1 if expected else 0)
        for f in doc["findings"]:  # every finding is in its case's output, failing or not
            assert f"{f['severity']}: {f['message']}" in cases[f["rule_id"]].find("system-out").text
            for rel in f.get("related", []):  # merged ones under their own rule, counted once
                assert f"merged into {f['rule_id']}: " in cases[rel["rule_id"]].find("system-out").text
    assert any(rank[f["severity"]] == 0 for f in doc["findings"])  # so --fail-on info fails something


def test_junit_marks_skipped_and_failed_rules():
    from nsys_diagnose.engine.model import InputInfo, Metrics, Report, RuleResult
    from nsys_diagnose.report import junit
    report = Report(tool={"name": "nsys-diagnose", "version": "0"}, headline="h", findings=[],
                    input=InputInfo(path="x\x01.sqlite", nsys_version=None, export_schema_version=None, size_bytes=1,
                                    reader="scanner", from_cache=False),
                    metrics=Metrics(span_ns=0, gpu_busy_ns=0, gpu_utilization_pct=0, kernel_ns=0, memcpy_ns=0,
                                    memset_ns=0, kernel_count=0),
                    rules=[RuleResult(id="a", title="A", category="c", status="skipped", reason="not captured: X"),
                           RuleResult(id="b", title="B", category="c", status="error", reason="b.sql:3: boom")])
    root = ET.fromstring(junit.render(report))  # the control character is gone: still XML
    assert root.find(".//testcase[@name='a']/skipped").get("message") == "not captured: X"
    assert root.find(".//testcase[@name='b']/error").get("message") == "b.sql:3: boom"
    assert root.get("errors") == "1"


def test_ci_formats_are_for_one_export(tmp_path):
    r = call_cli(FIXTURES / "exports", "-o", tmp_path / "out", "--format", "sarif")
    assert_one_line_error(r, "--format sarif", "works on one export")


def test_rules_format_json():
    r = call_cli("rules", "--format", "json")
    assert r.returncode == 0
    listed = json.loads(r.stdout)
    assert [x["id"] for x in listed] == [x.id for x in sorted(RULES.values(), key=lambda x: (x.category, x.id))]
    gaps = next(x for x in listed if x["id"] == "gpu-idle-gaps")
    assert set(gaps) >= {"title", "category", "severity", "summary", "docs", "params", "columns", "requires"}
    assert gaps["params"]["min_gap_ns"]["default"] == RULES["gpu-idle-gaps"].params["min_gap_ns"].default
    assert gaps["params"]["min_gap_ns"]["unit"] == "ns"
    text = call_cli("rules").stdout.splitlines()
    assert len(text) == len(listed) and text[0].split()[0] == listed[0]["id"]
