"""The library: open an export, read its tables, analyze it; polars frames throughout.

    import nsys_diagnose

    with nsys_diagnose.open("run.sqlite") as t:       # the cached DuckDB trace, read-only
        t.tables()                                     # what it holds: name, rows, columns
        kernels = t.table("kernels")                   # one table as a polars DataFrame
        t.sql("SELECT name, sum(duration_ns) AS ns FROM kernels GROUP BY name ORDER BY ns DESC")
        r = t.analyze(select=["gpu", "launch"], params={"gpu-idle-gaps.min_gap_ns": 500_000})
        r.report                                       # the pydantic Report (what --format json writes)
        r.findings_df()                                # one row per finding, ranked
        r.rule_rows("gpu-idle-gaps")                   # every row of a rule (the report keeps 50)
        r.budget_df()                                  # the step-time budget, where the report has one

Times are ns on the session clock, sizes bytes, shares %, as in the JSON report. Frames convert
to pandas with `.to_pandas()` once pandas is installed (`pip install "nsys-diagnose[pandas]"`).
"""

from __future__ import annotations

import json
import os
import typing
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping

import polars as pl
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.model import Report, Rule
from nsys_diagnose.engine.params import checked_settings
from nsys_diagnose.engine.selection import overrides_from, resolve, with_severities
from nsys_diagnose.engine.tables import rule_table
from nsys_diagnose.errors import UsageError
from nsys_diagnose.ingest.database import open_trace, with_memory_retry
from nsys_diagnose.ingest.environment import default_cache_dir
from nsys_diagnose.ingest.sql_library import query
from nsys_diagnose.trace_report import report_from_trace
from pydantic import BaseModel

__all__ = ["Analysis", "Trace", "open", "to_pandas"]

# JSON Schema types of a model's fields -> polars dtypes; objects and lists become JSON text
_DTYPES = {"integer": pl.Int64, "number": pl.Float64, "string": pl.String, "boolean": pl.Boolean}


def open(path: str | os.PathLike, *, use_cache: bool = True, cache_dir: str | os.PathLike | None = None,
         reader: str = "auto", settings: Mapping[str, Any] | None = None) -> Trace:
    """Open an export (.sqlite, or .nsys-rep with nsys on PATH) as a Trace.

    The first open ingests it into the DuckDB cache (as the command line does, under
    ~/.cache/nsys-diagnose or `cache_dir`); later opens of the unchanged file reuse that.
    `use_cache=False` ingests into a temporary file that close() removes. The connection is
    read-only: nothing here can change the cache or the export. `settings`: the analysis's
    settings to change, {name: value} (`nsys-diagnose explain settings`), checked as --set checks
    them; the tables and every analyze() of the trace use them.
    """
    return Trace(path, use_cache=use_cache, cache_dir=cache_dir, reader=reader, settings=settings)


def to_pandas(frame: pl.DataFrame):
    """frame.to_pandas(), with an error that says how to get pandas when it is missing."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise UsageError('pandas is not installed: pip install "nsys-diagnose[pandas]"') from None
    return frame.to_pandas()


class Trace:
    """An opened export: its normalized tables (kernels, memcpys, api_calls, nvtx_ranges, steps,
    steady_state, idle_gaps, ...) on a read-only DuckDB connection. Close it, or use `with`."""

    def __init__(self, path: str | os.PathLike, *, use_cache: bool = True,
                 cache_dir: str | os.PathLike | None = None, reader: str = "auto",
                 settings: Mapping[str, Any] | None = None):
        self.path = Path(path)
        self._settings = checked_settings(settings, origin="settings=")
        self._use_cache = use_cache
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._reader_option = reader
        self._trace = open_trace(self.path, use_cache=use_cache, cache_dir=self._cache_dir, reader=reader,
                                 settings=self._settings)
        self.reader: str = self._trace.reader          # the reader that ingested it: scanner or sqlite3
        self.from_cache: bool = self._trace.from_cache  # True when the ingest cache already held it
        self.captured: dict[str, bool] = dict(self._trace.captured)  # table -> did the export capture it

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (and remove the temporary database of use_cache=False). Idempotent."""
        if self._trace is not None:
            self._trace.close()
            self._trace = None

    @property
    def closed(self) -> bool:
        return self._trace is None

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<nsys_diagnose.Trace {str(self.path)!r}{' (closed)' if self.closed else ''}>"

    @property
    def con(self):
        """The DuckDB connection itself (read-only), for what the methods here do not cover."""
        if self._trace is None:
            raise UsageError(f"{self.path}: the trace is closed")
        return self._trace.con

    # -- reading ----------------------------------------------------------------------------
    def tables(self) -> pl.DataFrame:
        """The tables and views of the trace: name, kind, rows (null for views), columns and
        captured (whether the export held the data it comes from; null for bookkeeping tables)."""
        rows = self.con.execute(query("trace_tables")).fetchall()
        return pl.DataFrame(
            [(n, k, r, c, self.captured.get(n)) for n, k, r, c in rows], orient="row",
            schema={"name": pl.String, "kind": pl.String, "rows": pl.Int64, "columns": pl.Int64,
                    "captured": pl.Boolean})

    def table(self, name: str) -> pl.DataFrame:
        """One table (or view) of the trace, every row, as a polars DataFrame."""
        names = set(self.tables()["name"])
        if name not in names:
            raise UsageError(f"{self.path}: no table {name!r} (see Trace.tables())")
        return _strings(self.con.table(name).pl())

    def sql(self, query: str, params: Mapping[str, Any] | list | None = None) -> pl.DataFrame:
        """A read-only DuckDB query over the trace's tables; `params` binds `$name` (a mapping)
        or `?` (a list) placeholders."""
        con = self.con
        return with_memory_retry(con, lambda: _strings(con.execute(query, params).pl()))

    # -- analysis ---------------------------------------------------------------------------
    def analyze(self, select: Iterable[str] | None = None, *, ignore: Iterable[str] | None = None,
                params: Mapping[str, Any] | None = None, severity: Mapping[str, str] | None = None,
                rule_dirs: Iterable[str | os.PathLike] = ()) -> Analysis:
        """Run the rules over this trace, as `nsys-diagnose` does.

        select / ignore: rule ids or categories (`nsys-diagnose rules` lists both).
        params: {"rule.param": value} or {"rule": {"param": value}}; values are checked
            against the parameter's declared type.
        severity: {"rule or category": "info" | "warning" | "error"}: every finding of those rules.
        rule_dirs: extra folders of rules (YAML + SQL), after the built-in ones.
        The report is cached as the command line caches it: a repeat call costs no query.
        """
        rules = load_rules([Path(d) for d in rule_dirs])
        overrides = overrides_from(params, rules)
        chosen = resolve(rules, select, ignore, origin="select", ignore_origin="ignore")
        rules = with_severities(rules, dict(severity or {}), origin="severity")
        report = self._report(rules, overrides, chosen)
        return Analysis(self, report, rules, overrides)

    def _report(self, rules: dict[str, Rule], overrides, select, *, timeline: bool = False) -> Report:
        from nsys_diagnose.report_cache import ReportCache, report_key

        if self._trace is None:
            raise UsageError(f"{self.path}: the trace is closed")
        trace = self._trace
        cache = key = None
        if self._use_cache and self.path.is_file():
            cache = ReportCache(self._cache_dir or default_cache_dir())
            key = report_key(self.path, rules, overrides, select, self._reader_option, timeline, self._cache_dir,
                             self._settings)
            if (cached := cache.get(key)) is not None:
                return cached
        report = with_memory_retry(trace.con, lambda: report_from_trace(trace, rules, overrides, select,
                                                                        timeline=timeline, settings=self._settings))
        if cache is not None:
            cache.put(key, report)
        return report


class Analysis:
    """The result of Trace.analyze(): the Report and frames over it. Rule rows are read from the
    trace, so rule_rows() needs it open; the rest works after the trace is closed."""

    def __init__(self, trace: Trace, report: Report, rules: dict[str, Rule], overrides: dict[str, dict]):
        self.trace = trace
        self.report = report
        self.rules = rules          # the rules as run (severity overrides applied)
        self.overrides = overrides  # {rule id: {param: value}} as run
        self._rows: dict[str, pl.DataFrame] = {}

    def __repr__(self) -> str:
        return f"<nsys_diagnose.Analysis {len(self.report.findings)} finding(s): {self.report.headline}>"

    @property
    def headline(self) -> str:
        return self.report.headline

    def findings_df(self) -> pl.DataFrame:
        """One row per finding, most severe first then by the time at stake: rank, rule_id,
        severity, message, impact_ns, fix, ...; evidence (and any other nested field) as JSON
        text in `evidence_json`."""
        frame = _frame(self.report.findings, _item_model(Report, "findings"))
        return frame.with_row_index("rank", offset=1)

    def rules_df(self) -> pl.DataFrame:
        """One row per rule run: id, title, category, status (fired, passed, skipped, error),
        reason, findings (count), row_count, seconds."""
        rows = [{"id": r.id, "title": r.title, "category": r.category, "status": r.status, "reason": r.reason,
                 "findings": len(r.findings), "row_count": r.row_count, "seconds": r.seconds}
                for r in self.report.rules]
        return pl.DataFrame(rows, schema={"id": pl.String, "title": pl.String, "category": pl.String,
                                          "status": pl.String, "reason": pl.String, "findings": pl.Int64,
                                          "row_count": pl.Int64, "seconds": pl.Float64})

    def rule_rows(self, rule_id: str) -> pl.DataFrame:
        """Every result row of one rule (the report keeps only `rows_limit` of them, 50 by
        default), in DuckDB's types, read again from the open trace with the same parameters."""
        if rule_id in self._rows:
            return self._rows[rule_id]
        result = next((r for r in self.report.rules if r.id == rule_id), None)
        if result is None:
            ran = ", ".join(r.id for r in self.report.rules)
            raise UsageError(f"rule {rule_id!r} was not run in this analysis (ran: {ran})")
        if result.status == "error":
            raise UsageError(f"rule {rule_id!r} failed, so it has no rows: {result.reason}")
        if self.trace.closed:
            raise UsageError(f"{self.trace.path}: the trace is closed; rule_rows() reads the rows from it")
        if result.status == "skipped":
            warnings.warn(f"rule {rule_id!r} was skipped ({result.reason}): its rows are empty", stacklevel=2)
        frame = pl.from_arrow(rule_table(self.trace.con, self.rules[rule_id], self.overrides.get(rule_id)))
        assert isinstance(frame, pl.DataFrame)  # (a Table becomes a DataFrame; an Array would be a Series)
        self._rows[rule_id] = frame
        return frame

    def budget_df(self) -> pl.DataFrame:
        """The step-time budget: one row per slice of each (device, process)'s steady state
        (`Report.budget`). An empty frame, with a warning, where the Report has no budget."""
        return self._list_df("budget", "step-time budget")

    def steady_df(self) -> pl.DataFrame:
        """The steady state of each (device, process) in figures (`Report.steady`), where the
        Report has it; an empty frame with a warning otherwise."""
        return self._list_df("steady", "steady-state figures")

    def _list_df(self, name: str, what: str) -> pl.DataFrame:
        if name not in type(self.report).model_fields:
            warnings.warn(f"this version's Report has no {what} (Report.{name}): the frame is empty", stacklevel=3)
            return pl.DataFrame()
        return _frame(getattr(self.report, name), _item_model(type(self.report), name))


def _item_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The item model of a list field (list[Finding] -> Finding)."""
    args = typing.get_args(model.model_fields[name].annotation)
    return args[0] if args and isinstance(args[0], type) and issubclass(args[0], BaseModel) else None


def _frame(items: typing.Sequence[BaseModel], model: type[BaseModel] | None) -> pl.DataFrame:
    """Models as a flat frame with the columns their JSON Schema declares, typed from it even
    when there are no rows; nested values (objects, lists) become JSON text in `<name>_json`."""
    if model is None:
        return pl.DataFrame([m.model_dump(mode="json") for m in items])
    props = model.model_json_schema(mode="serialization").get("properties", {})
    columns: dict[str, tuple[str, Any]] = {}  # column -> (field, dtype); dtype None: JSON text
    for field, spec in props.items():
        types = ["object"] if "$ref" in spec else [s.get("type") for s in spec.get("anyOf", [spec])]
        kinds = [t for t in types if t and t != "null"]
        if len(kinds) == 1 and kinds[0] in _DTYPES:
            columns[field] = (field, _DTYPES[kinds[0]])
        else:
            columns[f"{field}_json"] = (field, None)
    rows = []
    for item in items:
        data = item.model_dump(mode="json")
        rows.append({col: data.get(field) if dtype is not None
                     else json.dumps(data.get(field), ensure_ascii=False, default=str)
                     for col, (field, dtype) in columns.items()})
    schema = {col: dtype or pl.String for col, (_, dtype) in columns.items()}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def _strings(frame: pl.DataFrame) -> pl.DataFrame:
    """Names arrive as polars Enum columns (the ingest stores them as a DuckDB ENUM, `label`);
    a notebook gets plain strings, which join and compare across traces."""
    return frame.with_columns(pl.col(pl.Enum, pl.Categorical).cast(pl.String))
