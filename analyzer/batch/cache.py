"""The batch result cache: a finished analysis, keyed by what determines it.

The key covers the input's content identity (database.content_key: size, SQLite header and
sampled blocks, plus the ingest SQL), its path (the report names it), the rules with their
parameters, the output format and the code (report_cache.code_fingerprint: the version and the
analysis sources). A re-run of a folder therefore redoes only new or changed exports. Errors are not cached: a file that failed is tried again next time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from pathlib import Path

from nsys_diagnose.batch.work import Job, Outcome
from nsys_diagnose.ingest.database import content_key, default_cache_dir
from nsys_diagnose.output import write_atomic
from nsys_diagnose.report_cache import code_fingerprint, rules_fingerprint

RESULT_FORMAT = 1  # bump when Outcome or the facts change shape


def result_key(job: Job) -> str | None:
    """None when the input cannot be read: the worker will report why."""
    try:
        content = content_key(Path(job.path))
    except OSError:
        return None
    parts = [RESULT_FORMAT, code_fingerprint(), content, job.path, job.fmt, job.reader,
             sorted(job.select) if job.select else None, job.overrides, rules_fingerprint(job.rules)]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


class ResultCache:
    def __init__(self, folder: Path | None = None):
        self.folder = (folder or default_cache_dir()) / "results"

    def _file(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str | None, job: Job) -> Outcome | None:
        if key is None:
            return None
        try:
            data = json.loads(self._file(key).read_text(encoding="utf-8"))
            known = {f.name for f in fields(Outcome)}
            out = Outcome(**{k: v for k, v in data.items() if k in known})
        except (OSError, ValueError, TypeError):
            return None  # absent, torn or from another layout: analyze again
        if out.status != "ok":
            return None
        out.name, out.path, out.cached = job.name, job.path, True
        return out

    def put(self, key: str | None, outcome: Outcome) -> None:
        if key is None or outcome.status != "ok":
            return
        try:
            write_atomic(self._file(key), json.dumps(outcome.to_dict(), ensure_ascii=False))
        except OSError:
            pass  # a read-only or full cache folder costs speed next time, never the result
