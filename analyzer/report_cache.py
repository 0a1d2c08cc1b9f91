"""The report cache: a finished analysis of one export, so that a repeat run costs no query.

A report is determined by the export's content (cache_key.content_key: the SHA-256 of all its
bytes, and the settings the ingest reads), the path it is reported under, the rules with their
parameters, --select, the reader, whether the HTML timeline is wanted, the settings that differ
from their declared values, and this package's code (its version and a hash of its source files, so that an edited rule
engine never serves a stale report). The ingest cache (database.py) keeps the normalized tables;
this one keeps the answer on top of them, beside it in the same cache folder. An entry is served
only when it still matches the checksum it was written with (cache_files.py).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from nsys_diagnose import __version__
from nsys_diagnose.engine.model import Report, Rule, Timeline
from nsys_diagnose.ingest import settings as analysis_settings
from nsys_diagnose.ingest.cache_files import read_entry, warn, write_entry
from nsys_diagnose.ingest.cache_key import content_key
from nsys_diagnose.ingest.environment import default_cache_dir
from nsys_diagnose.ingest.settings import SettingValues

FORMAT = 2  # bump when what is stored changes shape


@cache
def code_fingerprint() -> str:
    """The version and the code an analysis runs (the ingest SQL is in content_key already)."""
    h = hashlib.sha256(__version__.encode())
    root = Path(str(resources.files("nsys_diagnose")))
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + f.read_bytes())
    return h.hexdigest()


def rules_fingerprint(rules: dict[str, Rule]) -> str:
    """Every rule's YAML and SQL as loaded, parameters included."""
    h = hashlib.sha256()
    for rule_id in sorted(rules):
        h.update(rules[rule_id].model_dump_json().encode())
    return h.hexdigest()


def report_key(path: Path, rules: dict[str, Rule], overrides: dict[str, dict[str, Any]],
               select: list[str] | None, reader: str, timeline: bool, cache_dir: Path | None = None,
               settings: SettingValues | None = None) -> str:
    parts = [FORMAT, code_fingerprint(), content_key(path, cache_dir or default_cache_dir(), settings), str(path),
             reader, timeline, sorted(select) if select else None, overrides, rules_fingerprint(rules)]
    if changed := analysis_settings.changes(settings):  # every changed setting, Python's too; none: the default key
        parts.append(changed)
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


class ReportCache:
    def __init__(self, folder: Path):
        self.folder = folder / "reports"

    def get(self, key: str) -> Report | None:
        path = self.folder / f"{key}.json"
        text = read_entry(path)
        if text is None:
            return None  # absent, or damaged (and discarded): analyze again
        try:
            data = json.loads(text)
            report = Report.model_validate(data["report"])
            if data.get("timeline") is not None:
                report.timeline = Timeline.model_validate(data["timeline"])
            for result in report.rules:  # not in the JSON report; the Markdown tables show these columns
                result.display = list(data.get("display", {}).get(result.id, []))
        except (ValueError, KeyError, TypeError):  # intact, but of another layout
            warn(path, "cache entry of another layout")
            path.unlink(missing_ok=True)
            return None
        report.input.from_cache = report.input.report_from_cache = True
        return report

    def put(self, key: str, report: Report) -> None:
        data = {"report": report.model_dump(mode="json"),
                "timeline": report.timeline.model_dump(mode="json") if report.timeline else None,
                "display": {r.id: r.display for r in report.rules if r.display}}
        try:
            write_entry(self.folder / f"{key}.json", json.dumps(data, ensure_ascii=False))
        except OSError:
            pass  # a read-only or full cache folder costs speed next time, never the result
