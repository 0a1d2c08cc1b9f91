"""The batch result cache: a finished analysis, keyed by what determines it.

The key covers the input's content (cache_key.content_key: the SHA-256 of all its bytes, plus the
ingest SQL and the settings the ingest reads), its path (the report names it), the rules with their parameters, the changed settings, the output format
and the code (report_cache.code_fingerprint: the version and the analysis sources). A re-run of a
folder therefore redoes only new or changed exports. An entry is served only when it still
matches its checksum (cache_files.py). Errors are not cached: a file that failed is tried again
next time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from pathlib import Path

from nsys_diagnose.batch.work import Job, Outcome
from nsys_diagnose.errors import DiagnoseError
from nsys_diagnose.ingest import settings
from nsys_diagnose.ingest.cache_files import read_entry, warn, write_entry
from nsys_diagnose.ingest.cache_key import content_key
from nsys_diagnose.ingest.environment import default_cache_dir
from nsys_diagnose.report_cache import code_fingerprint, rules_fingerprint

RESULT_FORMAT = 2  # bump when Outcome or the facts change shape


def result_key(job: Job) -> str | None:
    """None when the input cannot be read (a pipe, a device, gone, changing): the worker will
    report why. The content is read without blocking (files.open_regular)."""
    try:
        content = content_key(Path(job.path), Path(job.cache_dir) if job.cache_dir else default_cache_dir(),
                              job.settings)
    except (OSError, DiagnoseError):
        return None
    parts = [RESULT_FORMAT, code_fingerprint(), content, job.path, job.fmt, job.reader,
             sorted(job.select) if job.select else None, job.overrides, rules_fingerprint(job.rules)]
    if changed := settings.changes(job.settings):  # none: the default run's key
        parts.append(changed)
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


class ResultCache:
    def __init__(self, folder: Path | None = None):
        self.folder = (folder or default_cache_dir()) / "results"

    def _file(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str | None, job: Job) -> Outcome | None:
        if key is None or (text := read_entry(self._file(key))) is None:
            return None  # absent, or damaged (and discarded): analyze again
        try:
            data = json.loads(text)
            known = {f.name for f in fields(Outcome)}
            out = Outcome(**{k: v for k, v in data.items() if k in known})
        except (ValueError, TypeError, AttributeError):  # intact, but of another layout
            warn(self._file(key), "cache entry of another layout")
            self._file(key).unlink(missing_ok=True)
            return None
        if out.status != "ok":
            return None
        out.name, out.path, out.cached = job.name, job.path, True
        return out

    def put(self, key: str | None, outcome: Outcome) -> None:
        if key is None or outcome.status != "ok":
            return
        try:
            write_entry(self._file(key), json.dumps(outcome.to_dict(), ensure_ascii=False))
        except OSError:
            pass  # a read-only or full cache folder costs speed next time, never the result
