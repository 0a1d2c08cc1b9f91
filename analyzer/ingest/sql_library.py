"""The SQL library (ingest/sql/*.sql) read as data: its modules in the order they run, their
statements, and the tables, views and macros they leave for rules, each with the documentation
written above it.

A module is one file, named by its stem (`idle_gaps` is ingest/sql/idle_gaps.sql), and its first
line names the modules whose tables it reads (Perfetto's standard library is the model):

    -- include: normalize, phases

The loader runs a module after those it includes, and after every module that reads a table it
drops (idle_gaps drops phases' nvtx_stack_points once nvtx has read it); otherwise by name. An
include of an unknown module, or modules that include each other round in a cycle, stop it with
ModuleError. `plan(names)` is the modules a set of tables and macros needs, includes first: the
ingest runs only those (ingest/database.py).

The comment block directly above a CREATE documents it, in this shape (Perfetto's standard
library is the model):

    -- One row per kernel launch, with its launch call.       <- what a row is, free text
    -- sources: CUPTI_ACTIVITY_KIND_KERNEL                      <- the nsys tables it is built from
    -- @column pid: process id                                  <- one line per column, in order
    -- @column start_ns: start on the session clock, ns
    CREATE TABLE kernels AS ...

`sources:` decides whether a rule that requires the table reads it as captured: it is when any
of the listed tables is in the export; `sources: always` when it needs none (settings, pattern
tables). A table is private when it is TEMP, or when the library drops it again (intermediates
too big for memory live in the file while in use); only public tables and macros are
documented, and only they may be read by rules.

A statement whose comment block holds `-- @each name: SELECT ...` runs once per row of that
query, with `$name` bound to the row's value (ingest/database.py): 22_idle_gaps.sql fills
gap_states one slice of gaps at a time, so that each statement's hash tables stay within the
ingest's memory limit.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Iterable

import duckdb

_CREATE = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?P<temp>TEMP\s+|TEMPORARY\s+)?"
                     r"(?P<kind>TABLE|VIEW|MACRO)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?P<name>\w+)", re.I)
_DROP = re.compile(r"^\s*DROP\s+(?:TABLE|VIEW|MACRO)\s+(?:IF\s+EXISTS\s+)?(?P<name>\w+)", re.I)
_COLUMN = re.compile(r"^@column\s+(?P<name>\w+)\s*:?\s*(?P<doc>.*)$")
_SOURCES = re.compile(r"^sources\s*:\s*(?P<list>.*)$", re.I)
_INCLUDE = re.compile(r"\A--\s*include:(?P<list>[^\n]*)")
_MAKES = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(?:TABLE|VIEW|MACRO|TYPE)\s+"
                    r"(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I | re.M)
# a column declared with its type (CREATE TABLE t(label VARCHAR, ...)): a name, not a read
_DECLARED = re.compile(r"\b(\w+)\s+(?:VARCHAR|INTEGER|BIGINT|DOUBLE|BOOLEAN|UTINYINT)\b", re.I)
_CTE = re.compile(r"\b(\w+)\s+AS\s*(?:NOT\s+)?(?:MATERIALIZED\s+)?\(", re.I)


class ModuleError(Exception):
    """The SQL library's modules do not fit together: an unknown include, or a cycle."""


@dataclass
class Statement:
    file: str
    line: int           # of the statement's first non-comment line
    sql: str            # the statement, its leading comments included
    comment: list[str]  # the comment lines directly above it, '-- ' stripped


@dataclass
class Entry:
    """A public table, view or macro of the library."""

    name: str
    kind: str                     # table, view or macro
    module: str
    file: str
    line: int
    doc: str                      # the free text of its comment block
    sources: list[str] | None     # None: not declared; [] for `sources: always`
    columns: dict[str, str] = field(default_factory=dict)  # name -> doc, in order


@dataclass
class Module:
    """One file of the library."""

    name: str            # the file's stem
    file: str            # its file name
    text: str
    includes: list[str]  # the modules whose tables it reads, as its include line names them
    makes: set[str]      # the tables, views, macros and types it creates (private ones too)
    drops: set[str]      # the tables it drops
    words: set[str]      # every name its code mentions, beside its CTEs', its declared columns' and strings


@functools.cache
def modules() -> dict[str, Module]:
    """Every module of the library, by name, as read from ingest/sql/."""
    folder = resources.files("nsys_diagnose.ingest").joinpath("sql")
    return {m.name: m for f in sorted(folder.iterdir(), key=lambda f: f.name) if f.name.endswith(".sql")
            for m in [module(f.name, f.read_text())]}


def module(file: str, text: str) -> Module:
    """The module in `file`, from its text."""
    head = _INCLUDE.match(text)
    if head is None:
        raise ModuleError(f"ingest/sql/{file}: its first line must name the modules it reads: '-- include: a, b'")
    code = _code(text)
    return Module(name=file.removesuffix(".sql"), file=file, text=text, includes=re.findall(r"\w+", head["list"]),
                  makes=set(_MAKES.findall(code)),
                  drops={m["name"] for part in code.split(";") if (m := _DROP.match(part))},
                  words=set(re.findall(r"\w+", re.sub(r"'(?:[^']|'')*'", "''", code)))
                  - set(_CTE.findall(code)) - set(_DECLARED.findall(code)))


def _closure(names: Iterable[str], mods: dict[str, Module]) -> set[str]:
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in mods:
            raise ModuleError(f"no SQL module named {name!r} (modules: {', '.join(sorted(mods))})")
        seen.add(name)
        for inc in mods[name].includes:
            if inc not in mods:
                raise ModuleError(f"ingest/sql/{mods[name].file}: includes {inc!r}, which is no module "
                                  f"(modules: {', '.join(sorted(mods))})")
            todo.append(inc)
    return seen


def order(names: Iterable[str] | None = None, mods: dict[str, Module] | None = None) -> list[Module]:
    """The modules `names` (all when None) with those they include, in the order they run: each
    after the modules it includes and after every chosen module that reads a table it drops, else
    by name."""
    mods = modules() if mods is None else mods
    chosen = _closure(mods if names is None else names, mods)
    after = {n: set(mods[n].includes) for n in chosen}
    for n in chosen:
        for table in mods[n].drops - mods[n].makes:  # another module's table, dropped once read
            after[n] |= {r for r in chosen if r != n and table in mods[r].words and table not in mods[r].makes}
    out: list[Module] = []
    ready = sorted(n for n in chosen if not after[n])
    while ready:
        name = ready.pop(0)
        out.append(mods[name])
        for n in sorted(chosen):
            if name in after[n]:
                after[n].discard(name)
                if not after[n] and n not in ready and mods[n] not in out:
                    ready.append(n)
        ready.sort()
    if len(out) < len(chosen):
        stuck = sorted(chosen - {m.name for m in out})
        raise ModuleError("SQL modules that include each other round in a cycle: " + ", ".join(
            f"{n} (after {', '.join(sorted(after[n]))})" for n in stuck))
    return out


def plan(names: Iterable[str] | None) -> list[str]:
    """The modules, in run order, that make the public tables and macros in `names` (None: all
    modules); a name the library does not make is left to whoever made it (ingest_info, ...)."""
    if names is None:
        return [m.name for m in order()]
    maker = {e.name: e.module for e in public().values()}
    return [m.name for m in order({maker[n] for n in names if n in maker})]


def mentioned(texts: Iterable[str]) -> set[str]:
    """The public tables and macros the texts name (SQL, comments included: a name too many only
    runs a module too many)."""
    words = set()
    for text in texts:
        words |= set(re.findall(r"\w+", text))
    return words & set(public())


@functools.cache
def data_rows(table: str) -> list[dict]:
    """The rows of a data table of the library (one a module fills with literals, such as
    budget_causes), without an export: its module, which must include nothing, run in memory."""
    maker = next((m for m in modules().values() if table in m.makes), None)
    if maker is None or maker.includes:
        raise ModuleError(f"{table} is no table of a module that includes nothing")
    con = duckdb.connect()
    try:
        for st in statements(maker.file, maker.text):
            con.execute(st.sql)
        cur = con.execute(f'SELECT * FROM "{table}"')
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
    finally:
        con.close()


def files(names: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """The modules `names` (all when None) and those they include, in run order: (file, text)."""
    return [(m.file, m.text) for m in order(names)]


def _leading_comment(sql: str) -> tuple[list[str], int]:
    """The comment lines directly above the statement's first code line, and that line's
    offset in lines. A blank line ends a block: the one above it documents something else."""
    lines = sql.split("\n")
    first = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("--")), len(lines))
    block: list[str] = []
    for ln in reversed(lines[:first]):
        s = ln.strip()
        if not s.startswith("--"):
            break
        block.append(s[2:].strip())
    return block[::-1], first


def statements(name: str, text: str) -> list[Statement]:
    """The file's statements as DuckDB's parser splits them, with where each begins."""
    out, pos = [], 0
    for st in duckdb.extract_statements(text):
        at = text.find(st.query, pos)
        start_line = text.count("\n", 0, max(at, 0)) + 1
        pos = at + len(st.query) if at >= 0 else pos
        comment, offset = _leading_comment(st.query)
        out.append(Statement(file=name, line=start_line + offset, sql=st.query.strip(), comment=comment))
    return out


def _entry(st: Statement, kind: str, name: str) -> Entry:
    doc, sources, columns = [], None, {}
    for ln in st.comment:
        if (m := _COLUMN.match(ln)):
            columns[m["name"]] = m["doc"].strip()
        elif (m := _SOURCES.match(ln)):
            listed = [s.strip() for s in m["list"].split(",") if s.strip()]
            sources = [] if listed == ["always"] else listed
        elif columns and ln and not ln.startswith("@"):  # a column doc's continuation line
            last = next(reversed(columns))
            columns[last] = f"{columns[last]} {ln}"
        else:
            doc.append(ln)
    return Entry(name=name, kind=kind, module=st.file.removesuffix(".sql"), file=st.file, line=st.line, doc=" ".join(d for d in doc if d).strip(),
                 sources=sources, columns=columns)


@functools.cache
def public() -> dict[str, Entry]:
    """The library's public tables, views and macros, by name, in the order they are made."""
    made: dict[str, Entry] = {}
    private: set[str] = set()
    for mod in order():
        for st in statements(mod.file, mod.text):
            if (m := _CREATE.match(_code(st.sql))):
                name = m["name"]
                if m["temp"]:
                    private.add(name)
                else:
                    made[name] = _entry(st, m["kind"].lower(), name)
            elif (m := _DROP.match(_code(st.sql))):
                private.add(m["name"])
    return {n: e for n, e in made.items() if n not in private}


def _code(sql: str) -> str:
    return "\n".join(ln for ln in sql.split("\n") if not ln.lstrip().startswith("--"))


def markdown() -> str:
    """docs/tables.md: every public table, view and macro with its documentation."""
    entries = public()
    out = ["# The SQL library's tables", "",
           "What the ingest leaves in the cached DuckDB file for rules to read (`analyzer/ingest/sql/`, one",
           "module per file, run in the order their include lines give: docs/architecture.md). Generated",
           "from the comments above each CREATE by",
           "`python -m nsys_diagnose.ingest.sql_library > docs/tables.md`; a test keeps it current.",
           "A table is *captured* when any of its sources is in the export; a rule that requires a table",
           "that is not captured is skipped with `not captured: <table>`.", ""]
    by_file: dict[str, list[Entry]] = {}
    for e in entries.values():
        by_file.setdefault(e.file, []).append(e)
    out += ["| table | kind | module | sources |", "|---|---|---|---|"]
    out += [f"| [`{e.name}`](#{e.name}) | {e.kind} | {e.module} | {', '.join(e.sources) if e.sources else 'always'} |"
            for es in by_file.values() for e in es if e.kind != "macro"]
    out += ["", "Macros: " + ", ".join(f"[`{e.name}`](#{e.name})" for e in entries.values() if e.kind == "macro"), ""]
    for fname, es in by_file.items():
        out += [f"## {fname.removesuffix('.sql')}", ""]
        for e in es:
            out += [f"### {e.name}", "", f"*{e.kind}*, `{e.file}:{e.line}`" + (
                f"; sources: {', '.join(e.sources) if e.sources else 'always'}" if e.kind != "macro" else ""), "",
                e.doc or "(undocumented)", ""]
            if e.columns:
                out += ["| column | meaning |", "|---|---|"]
                out += [f"| `{c}` | {_cell(d)} |" for c, d in e.columns.items()]
                out.append("")
    return "\n".join(out).rstrip() + "\n"


def module_table() -> str:
    """The modules in the order they run, each with its includes and public tables: the table in
    docs/architecture.md (a test keeps it current)."""
    made: dict[str, list[str]] = {}
    for e in public().values():
        made.setdefault(e.module, []).append(e.name)
    out = ["| module | runs | includes | public tables and macros |", "|---|---|---|---|"]
    out += [f"| `{m.name}` | {i} | {', '.join(m.includes) or '-'} | {', '.join(made.get(m.name, []))} |"
            for i, m in enumerate(order(), 1)]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    import sys
    print(module_table() if sys.argv[1:] == ["--modules"] else markdown(), end="")
