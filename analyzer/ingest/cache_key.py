"""The ingest cache's key of an export: its content (identity.py), the ingest's SQL and
projection, the DuckDB build that writes the cache, and the settings the ingest reads. Made
without importing DuckDB: a repeat run answered from the report cache needs this key and no
query."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
from pathlib import Path

from nsys_diagnose.ingest import identity, schema, sql_library
from nsys_diagnose.ingest import settings as analysis_settings
from nsys_diagnose.ingest.environment import default_cache_dir
from nsys_diagnose.ingest.settings import SettingValues

CACHE_FORMAT = 3  # bump when the cache layout changes in a way the SQL text does not show


def content_key(path: Path, cache_dir: Path | None = None, settings: SettingValues | None = None) -> str:
    """The ingest cache's key of the export: the SHA-256 of all its bytes (remembered in the
    cache folder by its stat identity: identity.py), of the ingest SQL and of the changed values
    of the settings the ingest reads (none: the default run's key)."""
    return content(path, cache_dir, settings)[0]


def content(path: Path, cache_dir: Path | None, settings: SettingValues | None = None) -> tuple[str, identity.Content]:
    """content_key and the export's identity it was made from."""
    found = identity.identify(path, (cache_dir or default_cache_dir()) / "ids")
    changed = analysis_settings.ingest_changes(settings)
    tuned = f"|{json.dumps(changed, sort_keys=True)}" if changed else ""
    key = hashlib.sha256(f"{ingest_fingerprint()}|{found.sha256}{tuned}".encode()).hexdigest()[:32]
    return key, found


@functools.cache
def ingest_fingerprint() -> str:
    """Changes whenever what the cache holds could change: the SQL, the projection, DuckDB."""
    h = hashlib.sha256(f"{CACHE_FORMAT}|{duckdb_build()}|{schema.SOURCES!r}|{schema.ROW_FILTERS!r}".encode())
    for name, text in sql_library.files():
        h.update(name.encode() + text.encode())
    return h.hexdigest()


def duckdb_build() -> str:
    """The installed DuckDB, as its native module's file (path, size, modification time): any
    other version or build is another file. Where that module is not found (a layout of
    another version), its version, at the cost of importing it."""
    spec = importlib.util.find_spec("_duckdb")
    if spec is not None and spec.origin and os.path.isfile(spec.origin):
        st = os.stat(spec.origin)
        return f"{spec.origin}|{st.st_size}|{st.st_mtime_ns}"
    import duckdb

    return duckdb.__version__
