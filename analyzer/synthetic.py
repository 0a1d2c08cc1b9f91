"""Small nsys-shaped SQLite exports built from Python values: the `given:` of a rule scenario
(rule_tests.py) and the test suite's synthetic inputs."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def _sql_type(values: list[Any]) -> str:
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int, bool}:
        return "INTEGER"
    if kinds <= {int, float, bool}:
        return "REAL"
    return "TEXT"


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def write_export(tables: dict[str, list[dict[str, Any]]], path: Path) -> Path:
    """One table per key; columns are the union of the rows' keys, typed from their values."""
    con = sqlite3.connect(path)
    try:
        for name, rows in tables.items():
            cols: list[str] = []
            for row in rows:
                cols += [c for c in row if c not in cols]
            if not cols:
                continue
            types = {c: _sql_type([r.get(c) for r in rows]) for c in cols}
            con.execute(f"CREATE TABLE {quote_ident(name)} ("
                        + ", ".join(f"{quote_ident(c)} {types[c]}" for c in cols) + ")")
            con.executemany(f"INSERT INTO {quote_ident(name)} VALUES (" + ",".join("?" * len(cols)) + ")",
                            [[r.get(c) for c in cols] for r in rows])
        con.commit()
    finally:
        con.close()
    return path


def expand(given: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Fixture shorthand: `strings: {id: text}` becomes StringIds; `repeat: {n, every_ns}` on a row
    copies it n times shifted by every_ns (start, end, correlationId advance; corr_step per copy;
    id too where the repeat gives id_step: CPU samples and their call-chain rows)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for table, rows in given.items():
        if table == "strings":
            out["StringIds"] = [{"id": int(k), "value": v} for k, v in rows.items()]
            continue
        expanded = []
        for row in rows:
            row = dict(row) if isinstance(row, dict) else row  # the caller's rows stay as given
            rep = row.pop("repeat", None) if isinstance(row, dict) else None
            if not rep:
                expanded.append(row)
                continue
            for i in range(rep["n"]):
                r = dict(row)
                shift = i * rep["every_ns"]
                for key in ("start", "end"):
                    if r.get(key) is not None:
                        r[key] += shift
                if r.get("correlationId") is not None:
                    r["correlationId"] += i * rep.get("corr_step", 1)
                if "id_step" in rep and r.get("id") is not None:
                    r["id"] += i * rep["id_step"]
                expanded.append(r)
        out[table] = expanded
    return out
