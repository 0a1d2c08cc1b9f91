"""The published contracts: JSON Schemas of the report and the compare result, generated from
their pydantic models. The generated files ship in the package (schemas/) and sit in docs/schemas/;
tests/test_schemas.py fails when a model changes and they were not regenerated with

    python -m nsys_diagnose schema --write
"""

from __future__ import annotations

import json
import typing
from importlib import resources
from pathlib import Path

from nsys_diagnose.errors import UsageError
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

NAMES = ("report", "compare")
DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _AlwaysWritten(GenerateJsonSchema):
    """What the JSON holds: every field of a model is written (defaults included), so every
    field the serializer keeps is required, and excluded ones (the HTML timeline) are absent."""

    def field_is_required(self, field, total: bool) -> bool:
        if self.mode == "serialization":
            return not field.get("serialization_exclude")
        return super().field_is_required(field, total)


def _models() -> dict[str, tuple[type[BaseModel], typing.Literal["validation", "serialization"], str]]:
    from nsys_diagnose.compare.contract import Comparison
    from nsys_diagnose.engine.model import Report

    return {
        "report": (Report, "serialization", "The report of `nsys-diagnose EXPORT --format json`."),
        "compare": (Comparison, "validation", "The result of `nsys-diagnose compare BEFORE AFTER --format json`."),
    }


def schema(name: str) -> dict:
    """The JSON Schema of one contract, as generated from its model now."""
    model, mode, description = _models()[name]
    body = model.model_json_schema(mode=mode, schema_generator=_AlwaysWritten)
    version = model.model_fields["schema_version"]
    body["properties"]["schema_version"] = _version_const(version)
    head = {"$schema": DIALECT, "title": f"nsys-diagnose {name}", "description": description}
    return head | {k: v for k, v in body.items() if k not in head}


def _version_const(field) -> dict:
    """schema_version is the one field a reader must check: pin it to this version."""
    value = field.default if isinstance(field.default, int) else typing.get_args(field.annotation)[0]
    return {"const": value, "title": "Schema Version", "type": "integer"}


def text(name: str) -> str:
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


def file_name(name: str) -> str:
    return f"{name}.schema.json"


def shipped(name: str) -> Path:
    """The schema file installed with the package."""
    return Path(str(resources.files("nsys_diagnose").joinpath("schemas", file_name(name))))


def source_copies(name: str) -> list[Path]:
    """Where `schema --write` writes: the package's schemas/ and docs/schemas/ of the source
    checkout the package is installed from (an editable install); an installed wheel has none."""
    package = Path(str(resources.files("nsys_diagnose")))
    root = package.parent
    if not ((root / "pyproject.toml").is_file() and (root / "docs").is_dir()):
        raise UsageError(f"{package}: not a source checkout; the schemas are regenerated in the repository "
                         "(with an editable install: pip install -e .)")
    return [package / "schemas" / file_name(name), root / "docs" / "schemas" / file_name(name)]


def checked_copies(name: str) -> list[Path]:
    """What `schema --check` compares: the source copies in a checkout, else the installed file."""
    try:
        return source_copies(name)
    except UsageError:
        return [shipped(name)]


def stale(names=NAMES) -> list[str]:
    """The schema files that differ from what the models generate now ([] when up to date)."""
    return [str(p) for name in names for p in checked_copies(name)
            if not p.is_file() or p.read_text(encoding="utf-8") != text(name)]
