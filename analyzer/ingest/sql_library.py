"""The SQL library (analyses/sql/*.sql) read as data: its statements in order, and the tables,
views and macros it leaves for rules, each with the documentation written above it.

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

import re
from dataclasses import dataclass, field
from importlib import resources

import duckdb

_CREATE = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?P<temp>TEMP\s+|TEMPORARY\s+)?"
                     r"(?P<kind>TABLE|VIEW|MACRO)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?P<name>\w+)", re.I)
_DROP = re.compile(r"^\s*DROP\s+(?:TABLE|VIEW|MACRO)\s+(?:IF\s+EXISTS\s+)?(?P<name>\w+)", re.I)
_COLUMN = re.compile(r"^@column\s+(?P<name>\w+)\s*:?\s*(?P<doc>.*)$")
_SOURCES = re.compile(r"^sources\s*:\s*(?P<list>.*)$", re.I)


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
    file: str
    line: int
    doc: str                      # the free text of its comment block
    sources: list[str] | None     # None: not declared; [] for `sources: always`
    columns: dict[str, str] = field(default_factory=dict)  # name -> doc, in order


def files() -> list[tuple[str, str]]:
    """The library's files in run order (10_normalize.sql first): (name, text)."""
    folder = resources.files("nsys_diagnose.analyses").joinpath("sql")
    return sorted((f.name, f.read_text()) for f in folder.iterdir() if f.name.endswith(".sql"))


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
    return Entry(name=name, kind=kind, file=st.file, line=st.line, doc=" ".join(d for d in doc if d).strip(),
                 sources=sources, columns=columns)


def public() -> dict[str, Entry]:
    """The library's public tables, views and macros, by name, in the order they are made."""
    made: dict[str, Entry] = {}
    private: set[str] = set()
    for fname, text in files():
        for st in statements(fname, text):
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
           "What the ingest leaves in the cached DuckDB file for rules to read (`analyzer/analyses/sql/`,",
           "run in file order). Generated from the comments above each CREATE by",
           "`python -m nsys_diagnose.ingest.sql_library > docs/tables.md`; a test keeps it current.",
           "A table is *captured* when any of its sources is in the export; a rule that requires a table",
           "that is not captured is skipped with `not captured: <table>`.", ""]
    by_file: dict[str, list[Entry]] = {}
    for e in entries.values():
        by_file.setdefault(e.file, []).append(e)
    out += ["| table | kind | file | sources |", "|---|---|---|---|"]
    out += [f"| [`{e.name}`](#{e.name}) | {e.kind} | {e.file} | {', '.join(e.sources) if e.sources else 'always'} |"
            for es in by_file.values() for e in es if e.kind != "macro"]
    out += ["", "Macros: " + ", ".join(f"[`{e.name}`](#{e.name})" for e in entries.values() if e.kind == "macro"), ""]
    for fname, es in by_file.items():
        out += [f"## {fname}", ""]
        for e in es:
            out += [f"### {e.name}", "", f"*{e.kind}*, `{e.file}:{e.line}`" + (
                f"; sources: {', '.join(e.sources) if e.sources else 'always'}" if e.kind != "macro" else ""), "",
                e.doc or "(undocumented)", ""]
            if e.columns:
                out += ["| column | meaning |", "|---|---|"]
                out += [f"| `{c}` | {_cell(d)} |" for c, d in e.columns.items()]
                out.append("")
    return "\n".join(out).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    print(markdown(), end="")
