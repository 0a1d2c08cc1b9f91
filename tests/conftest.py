from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
H200 = SHARED / "exports" / "h200-nsys2025.3"
PUBLIC = SHARED / "exports" / "public"
FIXTURES = ROOT / "fixtures"


# pytest-xdist runs one worker per core: each worker's DuckDB (and the CLIs it starts) then
# keeps to one thread, instead of every worker running a thread per core (20% more CPU).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("NSYS_DIAGNOSE_THREADS", "1")


def h200_names() -> list[str]:
    return sorted(p.stem for p in H200.glob("*.sqlite")) if H200.is_dir() else []


@pytest.fixture(scope="module")
def empty_trace(tmp_path_factory):
    """An export with no events, ingested: every library table, empty."""
    from nsys_diagnose.ingest.database import open_trace

    from .synth import write_export

    path = write_export({"StringIds": [{"id": 1, "value": "k"}]}, tmp_path_factory.mktemp("e") / "e.sqlite")
    trace = open_trace(path, use_cache=False)
    yield trace
    trace.close()


needs_shared = pytest.mark.skipif(not H200.is_dir(), reason="../shared exports not present")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test gets one cache folder for the whole run, never the user's. The pytest-xdist
    workers of a run share it (their base folders have one parent), so each export is ingested
    once per run, not once per worker; the cache's atomic renames make that safe."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    monkeypatch.setenv("NSYS_DIAGNOSE_CACHE_DIR", str(shared / "cache"))
