"""Data shapes: a rule as written in YAML, and the report as written to JSON."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["info", "warning", "error"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Param(Strict):
    type: Literal["int", "float", "str", "bool", "list"]
    default: Any
    unit: str = Field(description="ns, %, bytes, count, ratio, ... ('-' when unitless)")
    why: str = Field(min_length=10, description="why this default")


class Docs(Strict):
    what: str
    why: str
    fix: str
    references: list[str] = []


class FindingSpec(Strict):
    when: str = Field(description="SQL boolean expression over the rule's result columns")
    message: str = Field(description="template over result columns, e.g. {total_ns:dur}")
    severity: Severity | None = None
    impact_ns: str | None = Field(None, description="result column: time at stake, ranks findings")
    fix: str | None = None
    limit: int = 10


class Rule(Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    category: str
    severity: Severity
    summary: str
    status: Literal["stable", "preview"] = "stable"
    docs: Docs
    requires: list[str] = []
    requires_any: list[str] = []
    params: dict[str, Param] = {}
    columns: dict[str, str] = Field(default_factory=dict, description="result column -> meaning with unit")
    findings: list[FindingSpec] = []
    display: list[str] = Field(default_factory=list, description="columns shown in Markdown tables")
    rows_limit: int = 50
    # filled by the catalog, not by YAML authors
    sql: str = ""
    source: str = ""


class Finding(BaseModel):
    rule_id: str
    severity: Severity
    message: str
    impact_ns: int | None = None
    fix: str
    evidence: dict[str, Any] = {}


class RuleResult(BaseModel):
    id: str
    title: str
    category: str
    status: Literal["fired", "passed", "skipped", "error"]
    reason: str | None = None
    findings: list[Finding] = []
    rows: list[dict[str, Any]] = []
    row_count: int = 0
    display: list[str] = Field(default_factory=list, exclude=True)
    seconds: float = 0.0


class DeviceMetrics(BaseModel):
    device_id: int
    name: str | None = None
    busy_ns: int
    utilization_pct: float


class ProcessMetrics(BaseModel):
    pid: int
    name: str | None = None
    device_id: int
    busy_ns: int
    utilization_pct: float


class Metrics(BaseModel):
    span_ns: int
    window_start_ns: int | None = None
    window_end_ns: int | None = None
    gpu_busy_ns: int
    gpu_utilization_pct: float
    kernel_ns: int
    memcpy_ns: int
    memset_ns: int
    kernel_count: int
    memcpy_count: int = 0
    memset_count: int = 0
    api_ns: int = 0
    api_count: int = 0
    devices: list[DeviceMetrics] = []
    processes: list[ProcessMetrics] = []


class InputInfo(BaseModel):
    path: str
    nsys_version: str | None
    export_schema_version: str | None
    size_bytes: int
    reader: str
    from_cache: bool  # the normalized tables came from the ingest cache
    report_from_cache: bool = False  # the whole report came from the report cache (a repeat run)
    # where the export came from (docs/support-matrix.md): decided by the columns present
    export_meta_table: str | None = None  # META_DATA_EXPORT, EXPORT_META_DATA, or None (pre-2021.4)
    schema_flavour: str | None = None
    features: list[str] = []
    derived: dict[str, Any] | None = None  # a time-window slice of another export: origin, window
    sqlite_path: str | None = None  # the cached SQLite export, when `path` is a .nsys-rep


# The binned timeline the HTML report draws (analyses/timeline.py computes it).
class UtilTrack(BaseModel):
    device_id: int
    pid: int | None = None          # None: the whole device
    label: str
    busy_ns: int
    util: list[int]                 # per bin: busy share of the bin, per mille (0..1000)


class Segment(BaseModel):
    start_ns: int
    end_ns: int
    name: str
    coverage: float                 # share of the segment covered by ranges (0..1; 1 for a single range)
    ranges: int = 1                 # ranges merged into the segment (those starting in it)


class NvtxLane(BaseModel):
    pid: int
    tid: int
    thread: str | None = None
    depth: int
    segments: list[Segment]


class SteadyWindow(BaseModel):
    pid: int
    start_ns: int
    end_ns: int
    startup_ns: int | None = None
    method: str | None = None


class Timeline(BaseModel):
    start_ns: int
    end_ns: int
    bin_ns: int
    bins: int
    devices: list[UtilTrack] = []
    lanes: list[NvtxLane] = []
    hidden_threads: int = 0         # threads with NVTX ranges beyond MAX_THREADS, not drawn
    steady: list[SteadyWindow] = []
    seconds: float = 0.0            # time taken to compute it


class Report(BaseModel):
    schema_version: int = 1
    tool: dict[str, str]
    input: InputInfo
    headline: str
    metrics: Metrics
    findings: list[Finding]
    rules: list[RuleResult]
    # binned timeline for the HTML report (analyze(..., timeline=True)); not part of the JSON
    timeline: Timeline | None = Field(default=None, exclude=True)
