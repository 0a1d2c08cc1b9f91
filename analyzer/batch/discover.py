"""Find the exports a batch runs on: folders (searched below), files, and glob patterns.

Each input gets a short output name that is unique in the batch: its file name without the
export suffix, lengthened by parent folders only where two inputs would otherwise collide
(`node1/rank0`, `node2/rank0`), so reports from different folders never overwrite each other.
"""

from __future__ import annotations

import glob
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from nsys_diagnose.text import has_unsafe, inline

SQLITE_SUFFIXES = (".sqlite",)
REP_SUFFIXES = (".nsys-rep", ".qdrep")  # .qdrep: the report's name before nsys 2021.4
# The batch's own files: summary.md, index.html, reports.parquet, findings.parquet. An input named
# like one (index.sqlite) gets its parent folder in its name, or a number, never the batch's file.
RESERVED_NAMES = {"summary", "index", "reports", "findings"}


@dataclass(frozen=True)
class Found:
    path: Path                 # absolute, symlinks kept (a link's own name names its report)
    name: str = ""             # output name, "/"-separated, no suffix
    skip_reason: str | None = None


def nsys_on_path() -> bool:
    try:
        from nsys_diagnose.ingest.nsysrep import (
            find_nsys,  # honours $NSYS_DIAGNOSE_NSYS
        )
    except ImportError:
        return shutil.which("nsys") is not None
    return find_nsys() is not None


def export_stem(path: Path) -> str:
    name = path.name
    for suffix in (*SQLITE_SUFFIXES, *REP_SUFFIXES):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return path.stem or name


def _safe(part: str) -> str:
    """A name part as an output file name: control and bidi characters (an escape sequence in
    a file name reaches every `ls`) become '_'."""
    return inline(part).replace(" ", "_") if has_unsafe(part) else part


def _is_export(path: Path) -> bool:
    return path.name.lower().endswith((*SQLITE_SUFFIXES, *REP_SUFFIXES)) and not path.name.startswith(".")


def _below(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root, f) for f in sorted(files) if _is_export(Path(f))]
    return found


def has_magic(arg: str) -> bool:
    return any(c in arg for c in "*?[")


def expand(args: list[str | os.PathLike]) -> tuple[list[Path], list[str]]:
    """Paths named by the arguments, in order, without duplicates; and the patterns that
    matched nothing. A file named explicitly is taken whatever its suffix."""
    out: list[Path] = []
    unmatched: list[str] = []
    for arg in map(str, args):
        if has_magic(arg) and not os.path.exists(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                unmatched.append(arg)
            for m in matches:
                p = Path(m)
                out += _below(p) if p.is_dir() else [p] if _is_export(p) else []
        else:
            p = Path(arg)
            out += _below(p) if p.is_dir() else [p]
    seen: set[str] = set()
    unique = []
    for p in out:
        key = os.path.normcase(os.path.abspath(p))
        if key not in seen:
            seen.add(key)
            unique.append(Path(os.path.abspath(p)))
    return unique, unmatched


def skip_reason(path: Path, all_paths: set[Path], have_nsys: bool) -> str | None:
    if not path.name.lower().endswith(REP_SUFFIXES):
        return None
    for suffix in SQLITE_SUFFIXES:
        twin = path.with_name(export_stem(path) + suffix)
        if twin in all_paths:
            return f"its SQLite export {twin.name} is analyzed instead"
    if not have_nsys:
        return ("a report file needs nsys on PATH to be exported to SQLite "
                "(or run `nsys export --type sqlite` on it first)")
    return None


def unique_names(paths: list[Path]) -> list[str]:
    """Shortest trailing path (parents + stem) that no other input shares, case-insensitively."""
    parts: list[tuple[str, ...]] = [()] * len(paths)
    taken_keys: set[tuple[str, ...]] = set()
    # same folder and stem (run.sqlite beside run.nsys-rep): the SQLite export keeps the plain
    # name, the others keep their suffix. [1:] drops the root / drive.
    for i in sorted(range(len(paths)), key=lambda i: paths[i].name.lower().endswith(REP_SUFFIXES)):
        folders = tuple(map(_safe, paths[i].parent.parts[1:]))
        key = (*folders, _safe(export_stem(paths[i])))
        parts[i] = key if key not in taken_keys else (*folders, _safe(paths[i].name))
        taken_keys.add(parts[i])
    depth = [1] * len(paths)

    def name(i: int) -> str:
        return "/".join(parts[i][-depth[i]:])

    while True:
        groups: dict[str, list[int]] = {}
        for i in range(len(paths)):
            groups.setdefault(name(i).lower(), []).append(i)
        clashes = [ids for key, ids in groups.items() if len(ids) > 1 or key in RESERVED_NAMES]
        grown = False
        for ids in clashes:
            for i in ids:
                if depth[i] < len(parts[i]):
                    depth[i] += 1
                    grown = True
        if not grown:
            break
    names = [name(i) for i in range(len(paths))]
    taken: set[str] = set(RESERVED_NAMES)
    for i, n in enumerate(names):  # still the same (a.sqlite, a.SQLITE on a case-blind disk): number them
        candidate, k = n, 2
        while candidate.lower() in taken:
            candidate, k = f"{n}-{k}", k + 1
        taken.add(candidate.lower())
        names[i] = candidate
    return names


def discover(args: list[str | os.PathLike], have_nsys: bool | None = None) -> tuple[list[Found], list[str]]:
    """Every input of the batch, each with its unique name and, for those not analyzed, why."""
    paths, unmatched = expand(args)
    have_nsys = nsys_on_path() if have_nsys is None else have_nsys
    present = set(paths)
    names = unique_names(paths)
    return [Found(p, n, skip_reason(p, present, have_nsys)) for p, n in zip(paths, names)], unmatched
