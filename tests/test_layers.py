"""The layers of docs/architecture.md hold: no module imports from a higher layer, none imports
itself round in a cycle, and every module has its layer. Imports are read from the syntax tree,
so a lazy import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .conftest import ROOT

PACKAGE = "nsys_diagnose"
SOURCE = ROOT / "analyzer"
DOC = ROOT / "docs" / "architecture.md"


def layer_map() -> tuple[list[tuple[int, list[str]]], set[tuple[str, str]]]:
    """([(layer number, [module patterns])], {(importer, imported) allowed upward})."""
    text = DOC.read_text()
    layers = [(int(m[1]), re.findall(r"`([^`]+)`", m[2]))
              for m in re.finditer(r"^\| (\d+) [^|]*\| ([^|]*) \|", text, re.M)]
    allowed = set(re.findall(r"^- `([^`]+)` -> `([^`]+)`:", text, re.M))
    assert layers and len({n for n, _ in layers}) == len(layers), f"{DOC}: no layer table, or a layer twice"
    return layers, allowed


def modules() -> dict[str, Path]:
    """Module name relative to the package ('engine.runner', '__init__' for the root) -> file."""
    out = {}
    for path in SOURCE.rglob("*.py"):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules `path` imports (relative names). `from pkg import name` imports the
    module pkg.name when there is one, else pkg itself (the name is defined in it)."""
    def rel(name: str) -> str | None:
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            return None
        return name.removeprefix(PACKAGE).lstrip(".") or "__init__"

    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and (base := rel(node.module)):
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base != "__init__" else alias.name
                found.add(sub if sub in known else base)
        elif isinstance(node, ast.Import):
            found |= {r for a in node.names if (r := rel(a.name))}
    return found & known


def layer_of(module: str, layers: list[tuple[int, list[str]]]) -> int | None:
    for number, patterns in layers:
        for pattern in patterns:
            if module == pattern or (pattern.endswith(".*") and (module + ".").startswith(pattern[:-1])):
                return number
    return None


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    out = {}
    for name, path in mods.items():
        parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        out[name] = imports(path, known) - {name} - parents  # a package's own __init__ is Python's doing
    return out


def test_every_module_has_a_layer():
    layers, _ = layer_map()
    unplaced = sorted(m for m in modules() if layer_of(m, layers) is None)
    assert not unplaced, f"modules without a layer in {DOC.name}: {unplaced}"


def test_no_import_from_a_higher_layer():
    layers, allowed = layer_map()
    bad = []
    for module, targets in sorted(graph().items()):
        for target in sorted(targets):
            low, high = layer_of(module, layers), layer_of(target, layers)
            if low is not None and high is not None and high > low and (module, target) not in allowed:
                bad.append(f"{module} (layer {low}) imports {target} (layer {high})")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    _, allowed = layer_map()
    edges = {m: t - {b for a, b in allowed if a == m} for m, t in graph().items()}
    state: dict[str, int] = {}  # 1 on the path, 2 done
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt):] + [node, nxt]) if nxt in path else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_walk_sees_imports():
    """The checks above mean something only if the walk finds real edges, lazy ones included."""
    g = graph()
    assert "engine.model" in g["engine.runner"] and "ingest.database" in g["engine.runner"]
    assert "api" in g["__init__"]  # imported inside a function
    assert "batch.command" in g["batch.options"]


# importlib.resources' functions that name the package whose data they read, as their first argument
RESOURCE_CALLS = {"files", "as_file", "read_text", "read_binary", "open_text", "open_binary", "path", "contents",
                  "is_resource"}


def data_reads(path: Path) -> list[tuple[int, str | None]]:
    """(line, package) of each importlib.resources call in the module that names a package
    (resources.files(...), importlib.resources.files(...), or files(...) imported from it; the
    older read_text/open_binary/... too): the package whose data files it reads; None when the
    argument is not a literal (the test cannot place it). A bare `__file__` (a path built from
    the module's own place, which reaches any folder) counts as an unplaced read."""
    tree = ast.parse(path.read_text(), str(path))
    imported = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module in ("importlib.resources", "importlib_resources") for a in node.names
                if a.name in RESOURCE_CALLS}
    found: list[tuple[int, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "__file__":
            found.append((node.lineno, None))
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        via_module = isinstance(f, ast.Attribute) and f.attr in RESOURCE_CALLS and (
            (isinstance(f.value, ast.Name) and f.value.id == "resources")
            or (isinstance(f.value, ast.Attribute) and f.value.attr == "resources"
                and isinstance(f.value.value, ast.Name) and f.value.value.id == "importlib"))
        if via_module or (isinstance(f, ast.Name) and f.id in imported):
            arg = node.args[0] if node.args else None
            literal = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            found.append((node.lineno, arg.value if literal else None))  # type: ignore[union-attr]
    return found


def test_no_data_file_read_from_a_higher_layer():
    """Data files count as much as imports: a module reads the files of its own layer's packages
    or a lower one's (the SQL library is read by the ingest, which runs it)."""
    layers, _ = layer_map()
    bad = []
    for module, path in sorted(modules().items()):
        for line, package in data_reads(path):
            target = None if package is None else package.removeprefix(PACKAGE).lstrip(".") or "__init__"
            low, high = layer_of(module, layers), (layer_of(target, layers) if target else None)
            if package is None or not package.startswith(PACKAGE) or high is None:
                bad.append(f"{path.name}:{line}: resources.files({package!r}) names no package of the layer map")
            elif low is not None and high > low:
                bad.append(f"{module} (layer {low}) reads the data files of {target} (layer {high}), {path.name}:{line}")
    assert not bad, "\n".join(bad)


def test_the_data_walk_sees_reads(tmp_path):
    reads = {m: [p for _, p in data_reads(path)] for m, path in modules().items()}
    assert reads["ingest.sql_library"] == ["nsys_diagnose.ingest"] and "nsys_diagnose.rules" in reads["engine.catalog"]
    # every spelling of a read, a lazy one in a function included
    probe = tmp_path / "probe.py"
    probe.write_text("import importlib.resources\nfrom importlib import resources\n"
                     "from importlib.resources import files as f, read_text\n"
                     "def g():\n    importlib.resources.files('nsys_diagnose.api')\n"
                     "    resources.open_binary('nsys_diagnose.report', 'x')\n    f('nsys_diagnose.cli')\n"
                     "    read_text('nsys_diagnose.batch', 'y')\n    return __file__\n")
    assert sorted(data_reads(probe), key=lambda t: t[0]) == [
        (5, "nsys_diagnose.api"), (6, "nsys_diagnose.report"), (7, "nsys_diagnose.cli"), (8, "nsys_diagnose.batch"),
        (9, None)]
