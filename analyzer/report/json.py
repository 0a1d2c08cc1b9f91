"""The JSON report (contract: schema_version 3, documented in README.md)."""

from __future__ import annotations

import json

from nsys_diagnose.engine.model import Report


def render(report: Report) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False, default=str) + "\n"
