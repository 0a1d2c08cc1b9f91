from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
H200 = SHARED / "exports" / "h200-nsys2025.3"
PUBLIC = SHARED / "exports" / "public"
FIXTURES = ROOT / "fixtures"


def h200_names() -> list[str]:
    return sorted(p.stem for p in H200.glob("*.sqlite")) if H200.is_dir() else []


needs_shared = pytest.mark.skipif(not H200.is_dir(), reason="../shared exports not present")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test gets one session-wide cache folder, never the user's."""
    monkeypatch.setenv("NSYS_DIAGNOSE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
