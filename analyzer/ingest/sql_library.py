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
query, with `$name` bound to the row's value (ingest/database.py): idle_gaps.sql fills
gap_states one slice of gaps at a time, so that each statement's hash tables stay within the
ingest's memory limit.

The queries Python runs on those tables after the ingest (the metrics, the timeline's bins,
compare, batch) are named queries in ingest/sql/queries/<file>.sql, whose first line names the
modules they read, like a module's. Each statement is one query, documented like a table, its
name prefixed by its file's and its `$parameters` listed:

    -- Busy time of each device in each bin of the window.    <- what a row is
    -- query: timeline_device_bins                            <- its name: <file>_<what>
    -- @param w0: window start, ns                            <- one line per $parameter
    -- @column device_id: CUDA device                         <- one line per result column
    SELECT ...;

Python runs it by name, `con.execute(query("timeline_device_bins"), params)`. The ingest never
runs them. A query file whose query has no name, a name used twice or without its file's prefix,
a parameter not listed or listed and not used, a column undocumented, or a read of a table that
is not public in the modules it includes stops the loader with ModuleError; tests check each
query's result columns against its @column lines.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Iterable, Iterator

if TYPE_CHECKING:  # imported where SQL is parsed: reading the files and their order needs no DuckDB
    import duckdb

_CREATE = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?P<temp>TEMP\s+|TEMPORARY\s+)?"
                     r"(?P<kind>TABLE|VIEW|MACRO)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?P<name>\w+)", re.I)
_DROP = re.compile(r"^\s*DROP\s+(?:TABLE|VIEW|MACRO)\s+(?:IF\s+EXISTS\s+)?(?P<name>\w+)", re.I)
_COLUMN = re.compile(r"^@column\s+(?P<name>\w+)\s*:?\s*(?P<doc>.*)$")
_PARAM = re.compile(r"^@param\s+(?P<name>\w+)\s*:?\s*(?P<doc>.*)$")
_QUERY = re.compile(r"^query\s*:\s*(?P<name>\w+)\s*$")
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


def _folder():
    return resources.files("nsys_diagnose.ingest").joinpath("sql")


@functools.cache
def modules() -> dict[str, Module]:
    """Every module of the library, by name, as read from ingest/sql/."""
    folder = _folder()
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
                  words=_words(code))


def _words(code: str) -> set[str]:
    """Every name the code mentions, beside its CTEs', its declared columns' and strings."""
    return _mentions(code) - set(_CTE.findall(code)) - set(_DECLARED.findall(code))


def _mentions(code: str) -> set[str]:
    """Every word of the code outside its strings."""
    return set(re.findall(r"\w+", re.sub(r"'(?:[^']|'')*'", "''", code)))


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


# what a statement changes: the table, view, macro or type it creates, fills, empties or drops
_WRITES = re.compile(r"^\s*(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(?P<kind>TABLE|VIEW|MACRO|TYPE)"
                     r"|INSERT\s+INTO|DELETE\s+FROM|UPDATE|DROP\s+(?:TABLE|VIEW|MACRO|TYPE))\s+"
                     r"(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(?P<name>\w+)", re.I)
_TEMP = re.compile(r"^(\s*CREATE\s+(?:OR\s+REPLACE\s+)?)(?:TEMP|TEMPORARY)\s+", re.I | re.M)


@dataclass
class Access:
    """The names one ingest step writes and reads, for running steps side by side
    (dependencies(); ingest/schedule.py)."""

    writes: str | None  # the one name it changes, None for a query
    reads: set[str]     # every name it mentions, `writes` included
    defines: bool = False  # a view or macro: whoever mentions it reads what it reads


def access(sql: str, also: str = "") -> Access:
    """What a library statement writes and reads; `also`: SQL that runs with it (its @each query)."""
    code = _code(sql)
    m = _WRITES.match(code)
    # every word, a CTE's and a column's too: a name too many only costs a wait, while a CTE that
    # reads the table it is named after (WITH t AS (SELECT ... FROM t)) still reads it; in lower
    # case, as DuckDB matches names
    return Access(m["name"].lower() if m else None, {w.lower() for w in _mentions(code) | _mentions(also)},
                  bool(m and (m["kind"] or "").upper() in ("VIEW", "MACRO")))


def dependencies(steps: list[Access]) -> list[set[int]]:
    """For each step, the earlier steps it must wait for: the last writer of every name it
    reads, and when it writes a name, every step that read it since (a DROP or INSERT must not
    pull a table from under a reader). A view's or macro's reads count wherever it is mentioned
    (DROP TABLE t waits for a query through a view over t)."""
    last: dict[str, int] = {}
    readers: dict[str, list[int]] = {}
    through: dict[str, set[str]] = {}
    out = []
    for i, step in enumerate(steps):
        reads = step.reads.union(*(through.get(n, ()) for n in step.reads))
        after = {last[n] for n in reads if n in last}
        if step.writes:
            after.update(readers.get(step.writes, ()))
        out.append(after)
        for n in reads:
            readers.setdefault(n, []).append(i)
        if step.writes:
            last[step.writes], readers[step.writes] = i, []
            through.pop(step.writes, None)
            if step.defines:
                through[step.writes] = reads - {step.writes}
    return out


def without_temp(sql: str) -> tuple[str, tuple[str, str] | None]:
    """The statement with TEMP taken out of its CREATE, and (kind, name) of what it then makes in
    the database instead (None when it made nothing temporary): temporary objects are the
    connection's own, and side by side each statement runs on a cursor of its own."""
    code = _code(sql)
    if not _TEMP.match(code):
        return sql, None
    m = _CREATE.match(code)
    assert m is not None
    return _TEMP.sub(r"\1", sql, count=1), (m["kind"].upper(), m["name"])


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
    # on a cursor of the parser's empty database, in a transaction rolled back after: a
    # connection of its own would cost a new database (~10 ms) each time
    con = parser().cursor()
    try:
        con.begin()
        for st in statements(maker.file, maker.text):
            con.execute(st.sql)
        rel = con.table(table)
        return [dict(zip(rel.columns, row)) for row in rel.fetchall()]
    finally:
        con.rollback()
        con.close()


_local = threading.local()


def parser() -> duckdb.DuckDBPyConnection:
    """A connection to an empty in-memory database, one per thread (a connection is not
    thread-safe), for what only parses SQL or runs the library's data modules: the splitting
    of files into statements, their parse trees, the rules' checks (engine/rule_checks.py).
    One database serves them all: opening one costs ~10 ms."""
    con = getattr(_local, "con", None)
    if con is None:
        import duckdb

        con = _local.con = duckdb.connect(":memory:", config={"enable_external_access": False})
    return con


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
    return [Statement(file=name, line=line, sql=sql, comment=list(comment)) for line, sql, comment in _split(text)]


@functools.lru_cache(maxsize=64)  # a run splits each module twice (the catalog of tables, the ingest)
def _split(text: str) -> tuple[tuple[int, str, tuple[str, ...]], ...]:
    out, pos = [], 0
    for st in parser().extract_statements(text):
        at = text.find(st.query, pos)
        start_line = text.count("\n", 0, max(at, 0)) + 1
        pos = at + len(st.query) if at >= 0 else pos
        comment, offset = _leading_comment(st.query)
        out.append((start_line + offset, st.query.strip(), tuple(comment)))
    return tuple(out)


@dataclass
class Query:
    """A named query of ingest/sql/queries/: Python runs it by name on the ingested tables."""

    name: str
    file: str                  # queries/<stem>.sql
    line: int
    sql: str
    doc: str                   # what a row is
    params: dict[str, str]     # $parameter -> doc
    columns: dict[str, str]    # result column -> doc, in order
    reads: set[str]            # the library's public tables and macros it reads
    includes: list[str]        # its file's include line


@functools.cache
def queries() -> dict[str, Query]:
    """Every named query, by name, as read from ingest/sql/queries/ (checked: query_file)."""
    out: dict[str, Query] = {}
    for name, text in _query_files():
        for q in query_file(name, text):
            if q.name in out:
                raise ModuleError(f"ingest/sql/{q.file}:{q.line}: query {q.name} is named in {out[q.name].file} too")
            out[q.name] = q
    return out


def _query_files() -> Iterator[tuple[str, str]]:
    """(queries/NAME.sql, its text) for each file of ingest/sql/queries/, by name."""
    folder = _folder().joinpath("queries")
    for f in sorted(folder.iterdir(), key=lambda f: f.name):
        if f.name.endswith(".sql"):
            yield f"queries/{f.name}", f.read_text()


def query(name: str) -> str:
    """The SQL of the named query, to run with its $parameters bound. Looked up by name alone:
    the checks of queries() (a parse tree per query, a tenth of a small export's first run) are
    the tests' and the documentation's (tests/test_sql_library.py), on files that ship with the
    package and that no user edits."""
    found = _named().get(name)
    if found is None:
        raise ModuleError(f"no named query {name!r} in ingest/sql/queries/")
    return found


@functools.cache
def _named() -> dict[str, str]:
    """Every named query's SQL by its name, as its `-- query:` line names it."""
    out: dict[str, str] = {}
    for file, text in _query_files():
        for st in statements(file, text):
            name = next((m["name"] for ln in st.comment if (m := _QUERY.match(ln))), None)
            if name:
                out.setdefault(name, st.sql)
    return out


def query_file(file: str, text: str) -> list[Query]:
    """The named queries of a query file, each checked against its documentation and against
    the public tables of the modules the file includes."""
    head = _INCLUDE.match(text)
    if head is None:
        raise ModuleError(f"ingest/sql/{file}: its first line must name the modules it reads: '-- include: a, b'")
    includes = re.findall(r"\w+", head["list"])
    reach = {m.name for m in order(includes)} if includes else set()
    entries = public()
    made = set(entries).union(*(m.makes for m in modules().values()))
    prefix = file.removeprefix("queries/").removesuffix(".sql") + "_"
    import duckdb

    try:
        found = statements(file, text)
    except duckdb.Error as e:
        raise ModuleError(f"ingest/sql/{file}: does not parse: {str(e).splitlines()[0]}") from None
    out, read_modules = [], set()
    for st in found:
        q = _query(st, file, includes)
        where = f"ingest/sql/{file}:{st.line}: query {q.name or '(unnamed)'}"
        problem = _problem(q, prefix, {w for w in q.reads & made if w not in entries or entries[w].module not in reach})
        if problem:
            raise ModuleError(f"{where} {problem}")
        q.reads &= made
        read_modules |= {entries[w].module for w in q.reads}
        out.append(q)
    if set(includes) - read_modules:
        raise ModuleError(f"ingest/sql/{file}: includes {', '.join(sorted(set(includes) - read_modules))} "
                          "but reads none of its tables")
    return out


def _problem(q: Query, prefix: str, unseen: set[str]) -> str | None:
    """What is wrong with a named query, or None. `unseen`: the library's tables it reads that
    are not public in the modules its file includes."""
    if not q.name:
        return "has no name: '-- query: <file>_<what>' in its comment"
    if not q.name.startswith(prefix):
        return f"must be named {prefix}<what>"
    import duckdb

    parsed = parser().extract_statements(q.sql)
    if len(parsed) != 1 or parsed[0].type != duckdb.StatementType.SELECT:
        return "must be one SELECT"
    if not q.doc:
        return "has no comment saying what a row is"
    if not q.columns:
        return "documents no result column ('-- @column name: meaning')"
    if (empty := [c for c, doc in q.columns.items() if not doc]):
        return f"documents column {empty[0]} with nothing"
    if set(q.params) != set(parsed[0].named_parameters):
        return f"lists parameters {sorted(q.params)}, its SQL uses {sorted(parsed[0].named_parameters)}"
    if unseen:
        return f"reads {', '.join(sorted(unseen))}: not public in the modules it includes ({', '.join(q.includes)})"
    return None


def _query(st: Statement, file: str, includes: list[str]) -> Query:
    name, doc = "", []
    params: dict[str, str] = {}
    columns: dict[str, str] = {}
    last: dict[str, str] | None = None
    for ln in st.comment:
        if (m := _QUERY.match(ln)):
            name = m["name"]
        elif (m := _PARAM.match(ln)) or (m := _COLUMN.match(ln)):
            last = params if ln.startswith("@param") else columns
            last[m["name"]] = m["doc"].strip()
        elif last and ln and not ln.startswith("@"):  # a doc's continuation line
            key = next(reversed(last))
            last[key] = f"{last[key]} {ln}"
        else:
            doc.append(ln)
    return Query(name=name, file=file, line=st.line, sql=st.sql, doc=" ".join(d for d in doc if d).strip(),
                 params=params, columns=columns, reads=_tables_read(st.sql), includes=includes)


def _tables_read(sql: str) -> set[str]:
    """The tables and views a query names in FROM and JOIN clauses, its own CTEs left out, from
    DuckDB's parse tree (a column named like a table is not a read)."""
    # a literal, not a parameter: a parameterized execute costs DuckDB a retried `import pandas`
    literal = "'" + sql.replace("'", "''") + "'"
    tree = json.loads(parser().execute(f"SELECT json_serialize_sql({literal})").fetchone()[0])
    tables, ctes = set(), set()
    todo: list = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                tables.add(node["table_name"])
            ctes |= {c["key"] for c in (node.get("cte_map") or {}).get("map") or []}
            todo += node.values()
        elif isinstance(node, list):
            todo += node
    return tables - ctes


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
    out += ["## Named queries", "",
            "What Python runs on these tables after the ingest, by name (`ingest/sql/queries/`; the",
            "loader checks each against its comment, a test its result columns).", ""]
    for q in queries().values():
        out += [f"### {q.name}", "", f"*query*, `{q.file}:{q.line}`; reads {', '.join(sorted(q.reads)) or 'no library table'}",
                "", q.doc, ""]
        if q.params:
            out += ["| parameter | meaning |", "|---|---|"] + [f"| `${p}` | {_cell(d)} |" for p, d in q.params.items()] + [""]
        out += ["| column | meaning |", "|---|---|"] + [f"| `{c}` | {_cell(d)} |" for c, d in q.columns.items()] + [""]
    return "\n".join(out).rstrip() + "\n"


def module_table() -> str:
    """The modules in the order they run, each with its includes and public tables, then the
    query files: the table in docs/architecture.md (a test keeps it current)."""
    made: dict[str, list[str]] = {}
    for e in public().values():
        made.setdefault(e.module, []).append(e.name)
    out = ["| module | runs | includes | public tables and macros; named queries |", "|---|---|---|---|"]
    out += [f"| `{m.name}` | {i} | {', '.join(m.includes) or '-'} | {', '.join(made.get(m.name, []))} |"
            for i, m in enumerate(order(), 1)]
    files: dict[str, list[Query]] = {}
    for q in queries().values():
        files.setdefault(q.file, []).append(q)
    out += [f"| `{f.removesuffix('.sql')}` | by name | {', '.join(qs[0].includes) or '-'} | {', '.join(q.name for q in qs)} |"
            for f, qs in files.items()]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    import sys
    print(module_table() if sys.argv[1:] == ["--modules"] else markdown(), end="")
