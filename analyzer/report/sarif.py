"""--format sarif: SARIF 2.1.0, the format code-scanning services read. One run; the driver's
rules are the whole catalog (id, summary, docs, default level); one result per finding, located
at the export it was read from."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from nsys_diagnose.engine.model import Finding, Report, Rule

VERSION = "2.1.0"
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _uri(path: str) -> str:
    """Relative to the current folder where the export is below it (what a repository-rooted
    code-scanning upload expects), else an absolute file URI."""
    p = Path(path).absolute()
    try:
        return p.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return p.as_uri()


def _rule(rule: Rule) -> dict:
    docs = rule.docs
    help_text = f"{docs.why.strip()}\n\nFix: {docs.fix.strip()}"
    out = {
        "id": rule.id,
        "name": "".join(part.capitalize() for part in rule.id.split("-")),
        "shortDescription": {"text": rule.summary.strip()},
        "fullDescription": {"text": docs.what.strip()},
        "help": {"text": help_text,
                 "markdown": f"**{rule.title}**\n\n{docs.what.strip()}\n\n{docs.why.strip()}\n\n"
                             f"**Fix:** {docs.fix.strip()}"},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"category": rule.category, "status": rule.status, "tags": ["performance", rule.category]},
    }
    if docs.references:
        out["helpUri"] = docs.references[0]
    return out


def fingerprint(f: Finding) -> str:
    """What the finding is about, not its numbers: the rule, the names in its evidence, the
    device and process. The same problem in the next run of the job keeps its fingerprint."""
    parts = [f.rule_id] + [f"{k}={v}" for k, v in sorted(f.evidence.items())
                           if (isinstance(v, str) and len(v) <= 500) or k in ("device_id", "pid")]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def render(report: Report, rules: dict[str, Rule]) -> str:
    catalog = sorted(rules.values(), key=lambda r: r.id)
    index = {r.id: i for i, r in enumerate(catalog)}
    uri = _uri(report.input.path)
    location = {"physicalLocation": {"artifactLocation": {"uri": uri, "index": 0}}}
    results = []
    for f in report.findings:
        result: dict[str, Any] = {"ruleId": f.rule_id, "level": LEVEL[f.severity], "message": {"text": f.message},
                  "locations": [location], "partialFingerprints": {"nsysDiagnoseFinding/v1": fingerprint(f)},
                  "properties": {"impact_ns": f.impact_ns, "fix": f.fix.strip(), "evidence": f.evidence}}
        for extra in ("recoverable_ns", "claim", "note"):  # the step-time budget's part, where known
            if getattr(f, extra, None) is not None:
                result["properties"][extra] = getattr(f, extra)
        if f.rule_id in index:
            result["ruleIndex"] = index[f.rule_id]
        results.append(result)
    notes = [{"level": "error", "message": {"text": f"rule {r.id} failed: {r.reason}"},
              "descriptor": {"id": r.id}} for r in report.rules if r.status == "error"]
    run = {
        "tool": {"driver": {"name": "nsys-diagnose", "version": report.tool.get("version", ""),
                            "semanticVersion": report.tool.get("version", ""), "rules": [_rule(r) for r in catalog]}},
        "artifacts": [{"location": {"uri": uri}, "length": report.input.size_bytes}],
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notes}],
        "results": results,
        "properties": {"headline": report.headline},
    }
    doc = {"$schema": SCHEMA, "version": VERSION, "runs": [run]}
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
