#!/usr/bin/env python3
"""Report equality across a change: capture every export's report, then diff two captures.

    python bench/report_diff.py capture OUTDIR [EXPORT ...]   # default: every shared + fixture export
    python bench/report_diff.py diff BEFORE AFTER             # exit 1 on any difference

`capture` runs `nsys-diagnose analyze --no-cache --format json --tables-dir` on each export, one
fresh process each, and writes OUTDIR/<name>.json: the report with the fields that legitimately
vary between runs dropped (input path, cache flags) plus every rule's full result rows. Floats
are rounded to 9 significant digits, as DuckDB's parallel sums may add in another order.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "exports"
VARYING_INPUT = ("path", "from_cache", "report_from_cache", "sqlite_path")
VARYING_RULE = ("seconds",)  # each rule's run time


def default_exports() -> list[Path]:
    sys.path.insert(0, str(ROOT))
    from tests.fixture_exports import unpack  # the corpus is kept packed in git

    unpack()
    return sorted([*SHARED.rglob("*.sqlite"), *(ROOT / "fixtures" / "exports").glob("*.sqlite")])


def _name(path: Path) -> str:
    rel = path.resolve()
    for base in (SHARED.resolve(), (ROOT / "fixtures").resolve()):
        if rel.is_relative_to(base):
            return str(rel.relative_to(base)).replace("/", "__").removesuffix(".sqlite")
    return path.stem


def _round(value):
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def _cell(text: str):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return _round(float(text))
    except ValueError:
        return text


def stripped(report: dict) -> dict:
    for key in VARYING_INPUT:
        report.get("input", {}).pop(key, None)
    for rule in report.get("rules", []):
        for key in VARYING_RULE:
            rule.pop(key, None)
    return report


def normalized(report: dict, tables: Path) -> dict:
    stripped(report)
    rows = {}
    for f in sorted(tables.glob("*.csv")):
        with f.open(newline="") as fh:
            rows[f.stem] = [[_cell(c) for c in row] for row in csv.reader(fh)]
    return _round({"report": report, "rule_rows": rows})


def capture_one(export: Path, out: Path) -> str:
    with tempfile.TemporaryDirectory(prefix="report-diff-") as tmp:
        report, tables = Path(tmp) / "r.json", Path(tmp) / "tables"
        cmd = [sys.executable, "-m", "nsys_diagnose", "analyze", str(export), "--no-cache", "--no-config",
               "--format", "json", "-o", str(report), "--tables-dir", str(tables), "--fail-on", "never"]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "NSYS_DIAGNOSE_THREADS": os.environ.get("NSYS_DIAGNOSE_THREADS", "1")})
        name = _name(export)
        if done.returncode != 0:
            result = {"error": done.returncode, "stderr": done.stderr.strip().splitlines()[-1:]}
        else:
            result = normalized(json.loads(report.read_text()), tables)
        (out / f"{name}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        return f"{name}: {'exit ' + str(done.returncode) if done.returncode else 'ok'}"


def capture(out: Path, exports: list[Path], jobs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(jobs) as pool:
        for line in pool.map(lambda e: capture_one(e, out), exports):
            print(line, flush=True)


def _first_difference(a, b, where: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'after' if k not in a else 'before'}"
            if (d := _first_difference(a[k], b[k], f"{where}.{k}")) is not None:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if (d := _first_difference(x, y, f"{where}[{i}]")) is not None:
                return d
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


def diff(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.glob("*.json")} | {p.name for p in after.glob("*.json")})
    differing = 0
    for name in names:
        a, b = before / name, after / name
        if not (a.exists() and b.exists()):
            print(f"{name}: only in {'before' if a.exists() else 'after'}")
            differing += 1
            continue
        ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
        for j in (ja, jb):
            stripped(j.get("report", {}))
        d = _first_difference(ja, jb)
        if d is not None:
            print(f"{name}: differs at {d[:300]}")
            differing += 1
    print(f"{len(names)} reports, {differing} differing")
    return 1 if differing else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out", type=Path)
    c.add_argument("exports", nargs="*", type=Path)
    c.add_argument("-j", "--jobs", type=int, default=2)
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.cmd == "capture":
        capture(args.out, args.exports or default_exports(), args.jobs)
    else:
        raise SystemExit(diff(args.before, args.after))


if __name__ == "__main__":
    main()
