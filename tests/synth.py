"""Synthetic exports for the tests: the package's builder (nsys_diagnose.synthetic) and helpers."""

from __future__ import annotations

from pathlib import Path

import yaml
from nsys_diagnose.synthetic import expand, quote_ident, write_export

__all__ = ["expand", "quote_ident", "write_export", "export_from_yaml", "union"]


def export_from_yaml(yaml_path: Path, out: Path) -> Path:
    return write_export(expand(yaml.safe_load(yaml_path.read_text())), out)


def union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merged intervals; touching ones stay apart, as in the SQL (a new interval opens when an
    operation starts after every earlier one has ended)."""
    merged: list[list[int]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]
