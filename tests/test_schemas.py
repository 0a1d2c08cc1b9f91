"""The published contracts: the schema files equal what the models generate, and real report and
compare documents validate against them."""

from __future__ import annotations

import json

import jsonschema
import pytest
from nsys_diagnose import contracts
from nsys_diagnose.analyze import analyze
from nsys_diagnose.compare import compare
from nsys_diagnose.compare.contract import Comparison
from nsys_diagnose.compare.render import to_dict
from nsys_diagnose.engine.model import Report
from nsys_diagnose.report import json as json_report

from .cli_harness import call_cli
from .conftest import FIXTURES, H200, ROOT, needs_shared

REGENERATE = "python -m nsys_diagnose schema --write"


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads(contracts.shipped(name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_files_match_the_models():
    assert contracts.stale() == [], f"the models changed: regenerate the schemas with `{REGENERATE}`"
    for name in contracts.NAMES:
        assert (ROOT / "docs" / "schemas" / f"{name}.schema.json").read_text() == contracts.text(name)


def test_a_model_change_makes_the_files_stale(monkeypatch):
    class Changed(Report):
        new_field: int = 0

    models = contracts._models()
    monkeypatch.setattr(contracts, "_models", lambda: models | {"report": (Changed, *models["report"][1:])})
    # the installed package's copy and this checkout's docs copy (also under a non-editable install)
    monkeypatch.setattr(contracts, "source_copies",
                        lambda name: [contracts.shipped(name), ROOT / "docs" / "schemas" / contracts.file_name(name)])
    assert len(contracts.stale(["report"])) == 2  # the package copy and the docs copy
    assert contracts.stale(["compare"]) == []


def test_report_json_validates():
    report = analyze(FIXTURES / "exports" / "dataloader_bound.sqlite")
    doc = json.loads(json_report.render(report))
    validator("report").validate(doc)
    assert doc["schema_version"] == contracts.schema("report")["properties"]["schema_version"]["const"]
    broken = dict(doc, findings=[dict(doc["findings"][0], severity="fatal")])
    with pytest.raises(jsonschema.ValidationError):
        validator("report").validate(broken)


def _compare_docs():
    yield to_dict(compare(FIXTURES / "exports" / "dataloader_bound.sqlite", FIXTURES / "exports" / "compute_fp32.sqlite"))
    if H200.is_dir():
        yield to_dict(compare(H200 / "compute_fp32.sqlite", H200 / "compute_bf16.sqlite"))


def test_compare_json_validates():
    docs = list(_compare_docs())
    check = validator("compare")
    for doc in docs:
        doc = json.loads(json.dumps(doc, default=str))  # as written (render_json)
        check.validate(doc)
        Comparison.model_validate(doc)
    assert docs[0]["verdict"] == "not-comparable"
    with pytest.raises(jsonschema.ValidationError):
        check.validate(dict(docs[0], surprise=1))  # a key the contract does not list


@needs_shared
def test_compare_json_with_a_verdict_fills_every_list():
    doc = json.loads(json.dumps(list(_compare_docs())[1], default=str))
    assert doc["verdict"] == "improved" and doc["effect"] and doc["kernels"] and doc["drivers"]


def test_schema_command():
    r = call_cli("schema", "report")
    assert r.returncode == 0 and json.loads(r.stdout) == contracts.schema("report")
    assert r.stdout == contracts.shipped("report").read_text()
    r = call_cli("schema", "compare")
    assert r.returncode == 0 and json.loads(r.stdout)["title"] == "nsys-diagnose compare"
    assert call_cli("schema", "--check").returncode == 0
    r = call_cli("schema")
    assert r.returncode == 2 and "name one of report, compare" in r.stderr


def test_schema_write_regenerates_every_copy(tmp_path, monkeypatch):
    copies = {name: [tmp_path / "package" / f"{name}.json", tmp_path / "docs" / f"{name}.json"]
              for name in contracts.NAMES}
    monkeypatch.setattr(contracts, "source_copies", lambda name: copies[name])
    assert len(contracts.stale()) == 4  # none written yet
    assert call_cli("schema", "--check").returncode == 1
    r = call_cli("schema", "--write")
    assert r.returncode == 0 and r.stderr.count("wrote ") == 4
    assert contracts.stale() == [] and call_cli("schema", "--check").returncode == 0
    assert json.loads(copies["report"][1].read_text()) == contracts.schema("report")
