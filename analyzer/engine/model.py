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
    # the allowed range of an int or float; by default the unit's (engine/params.py)
    min: float | None = None
    max: float | None = None


# What a piece of advice recommends, so that the engine can check it against the trace before it is
# shown (engine/fixes.py, the fix_facts table of ingest/sql/budget.sql): a fix the trace shows done already
# (graphs replayed, copies pinned, math on tensor cores, fused kernels) or that a busy GPU makes moot
# (launch and sync fixes) is never advised.
FixTag = Literal["cuda-graphs", "fewer-launches", "fewer-syncs", "pinned-memory", "async-copies",
                 "mixed-precision", "fused-optimizer", "kernel-fusion"]


class Docs(Strict):
    what: str
    why: str
    fix: str
    fixes: list[FixTag] = Field(default_factory=list, description="what `fix` recommends (checked against "
                                "the trace: docs/recoverable.md)")
    references: list[str] = []


class AdvicePart(Strict):
    text: str
    when: str | None = Field(None, description="SQL boolean expression over the result columns; "
                                                "the part is given only where it holds")
    headline: str | None = Field(None, description="this part's fix in a few imperative words, for the "
                                 "report's headline (template over result columns)")
    fixes: list[FixTag] = Field(default_factory=list, description="what the part recommends; the part is "
                                "left out where the trace shows it done or a busy GPU makes it moot")


class HeadlineSpec(Strict):
    """A finding's words in the report's headline, each a few words (checked at load): the composer
    (headline.py) adds the verdict, the cost per step and the gain, and orders and joins them."""
    cause: str = Field(description="what holds the step back: 'launch overhead' (template)")
    where: str | None = Field(None, description="where it sits: 'in \"{top_place}\"' (template; left out "
                              "where a column it names is null)")
    cost: str | None = Field(None, description="result column: the time the cause takes, ns (default: "
                             "the finding's impact_ns)")
    fix: str | None = Field(None, description="the fix in a few imperative words, where no advice part "
                            "that holds gives one (template)")


class Claim(Strict):
    """The slice of the step-time budget (ingest/sql/budget.sql) a rule's findings draw their time from."""
    kind: Literal["gpu", "idle"]
    causes: list[str] = Field(default_factory=list, description="budget causes (GPU classes or idle "
                              "causes); '*' for every cause of the kind")
    cause_column: str | None = Field(None, description="result column holding one more budget cause")
    host_waits: bool = Field(False, description="the host blocks until this GPU work ends (a synchronous "
                             "copy), so it is on the critical path even when the step is host-bound")
    place: str | None = Field(None, description="result column naming the NVTX range the slice is in")
    state_only: bool = Field(False, description="the finding names what the host was doing, not why: a "
                             "finding on the same slice that names a mechanism speaks for it first")


class FindingSpec(Strict):
    when: str = Field(description="SQL boolean expression over the rule's result columns")
    message: str = Field(description="template over result columns, e.g. {total_ns:dur}")
    severity: Severity | None = None
    impact_ns: str | None = Field(None, description="result column: time at stake, ranks findings")
    recoverable_ns: str | None = Field(None, description="result column: the time the finding's fix could "
                                       "plausibly win, bounded by evidence in the trace (docs/recoverable.md); "
                                       "needs `claims`. Without it an idle claim recovers its impact_ns and a "
                                       "GPU claim recovers null: the trace does not bound what faster GPU work wins")
    fix: str | None = None
    fixes: list[FixTag] = Field(default_factory=list, description="what `fix` recommends (as advice parts' `fixes`)")
    limit: int = 10
    claims: Claim | None = None
    headline: HeadlineSpec | None = Field(None, description="the finding's words in the report's headline; "
                                          "by default the rule's title and the claim's place")


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
    advice: list[AdvicePart] = Field(default_factory=list, description="the fix, in parts conditioned "
                                     "on the finding's row; replaces docs.fix in findings when given")
    # filled by the catalog, not by YAML authors
    sql: str = ""
    source: str = ""


class HeadlineParts(BaseModel):
    """A finding's headline words, rendered from its row (HeadlineSpec); not part of the JSON."""
    cause: str
    where: str | None = None
    cost_ns: int | None = None
    # every fix the headline could name, with what it recommends, first first: engine/fixes.py
    # drops those the trace rules out
    fix_options: list[tuple[str, tuple[str, ...]]] = []

    @property
    def fix(self) -> str | None:
        """The fix the headline names: the first option left."""
        return self.fix_options[0][0] if self.fix_options else None


class Related(BaseModel):
    """A finding merged into another because both draw on the same slice of the budget."""
    rule_id: str
    message: str
    impact_ns: int | None = None


class Finding(BaseModel):
    rule_id: str
    severity: Severity
    message: str
    impact_ns: int | None = None       # the rule's own estimate of the time at stake
    # the time the fix named in the finding could plausibly win, bounded by evidence in the trace
    # and by its budget slice (docs/recoverable.md); None where the trace cannot bound it
    recoverable_ns: int | None = None
    claim: str | None = None           # the budget slice drawn on, in words
    note: str | None = None            # why the severity was lowered, or what the estimate assumes
    fix: str
    evidence: dict[str, Any] = {}
    related: list[Related] = []
    claims: Claim | None = Field(default=None, exclude=True)  # its spec's, for engine/claims.py
    # the time of its budget slice in the steady state (engine/claims.py), which its cost in the headline cannot pass
    claimed_ns: int | None = Field(default=None, exclude=True)
    headline: HeadlineParts | None = Field(default=None, exclude=True)  # for the report's headline
    # the rule's own bound on what its fix wins (its spec's recoverable_ns column), for engine/claims.py
    estimate_ns: int | None = Field(default=None, exclude=True)
    # the fix in parts, each with what it recommends, for engine/fixes.py to check against the trace
    fix_parts: list[tuple[str, tuple[str, ...]]] = Field(default_factory=list, exclude=True)


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


class HostLane(BaseModel):
    """A thread's CUDA API time per bin, by kind (launch, sync, copy, allocation, other)."""
    pid: int
    tid: int
    thread: str | None = None
    api_ns: int                     # the thread's API time over the whole window (queries left out)
    kinds: dict[str, list[int]]     # kind -> per bin: share of the bin in calls of that kind, per mille


class StepTicks(BaseModel):
    """Where a process's steps start (every `stride`-th where there are more than can be drawn)."""
    pid: int
    count: int                      # steps of the process
    stride: int = 1
    starts_ns: list[int]


class Timeline(BaseModel):
    start_ns: int
    end_ns: int
    bin_ns: int
    bins: int
    devices: list[UtilTrack] = []
    lanes: list[NvtxLane] = []
    host: list[HostLane] = []
    hidden_threads: int = 0         # threads with NVTX ranges beyond MAX_THREADS, not drawn
    hidden_host_threads: int = 0    # threads with CUDA API calls beyond MAX_HOST_THREADS, not drawn
    steady: list[SteadyWindow] = []
    steps: list[StepTicks] = []
    # the same tracks binned over the focus window only (the leading steady state), where that
    # window is a small part of the whole: zoomed in on it, the drawing keeps its resolution
    focus: Timeline | None = None
    seconds: float = 0.0            # time taken to compute it


class BudgetRow(BaseModel):
    """One slice of a (device, process)'s steady state; a (device, pid)'s rows add up to window_ns."""
    device_id: int
    pid: int
    kind: Literal["gpu", "idle"]
    cause: str                          # GPU class, or the host cause of idle time
    place: str | None = None            # the NVTX range the host was in (idle rows)
    ns: int
    pct: float                          # of the steady-state window


class SteadyState(BaseModel):
    """A (device, process)'s steady state in figures and its verdict."""
    device_id: int
    pid: int
    start_ns: int
    end_ns: int
    window_ns: int
    steps: int | None = None
    step_median_ns: int | None = None   # median host-side step in the window
    step_mean_ns: int | None = None     # the window over its steps
    busy_ns: int
    busy_pct: float
    idle_ns: int
    bound: Literal["gpu-bound", "host-bound", "mixed"]
    method: str | None = None           # how the window was found (steps, after-module-loading, ...)
    # what fills the step (docs/verdict.md), from the budget: the class, the slice that decides it
    # (a GPU class, a copy direction, a host cause), its detail (copies' host memory, the cause's
    # NVTX range) and its share of the window; `verdict` says it in words, as every renderer shows it
    verdict_class: Literal["kernel-bound", "copy-bound", "host-bound", "mixed"] | None = None
    verdict_cause: str | None = None
    verdict_detail: str | None = None
    verdict_pct: float | None = None
    verdict: str | None = None
    summary: str                        # the budget in one line


class Gap(BaseModel):
    """Something the rules could not look at (analyses/coverage.py): what, and how to capture it."""
    id: Literal["no-gpu-activity", "startup-only", "timestamps-backwards", "too-few-steps", "graph-kernels-untraced"]
    pid: int | None = None              # the process it concerns; None: the whole export
    message: str                        # what is missing, with its figures
    capture: str                        # how to capture what is missing
    evidence: dict[str, Any] = {}


class Coverage(BaseModel):
    """Whether the rules could look: complete; partial (they looked at less than a full capture);
    could-not-look (no GPU activity, or every process stops before its steady state). Only a
    complete report says "No bottleneck found"."""
    status: Literal["complete", "partial", "could-not-look"]
    gaps: list[Gap] = []


class Report(BaseModel):
    # 3: `coverage` added; the headline says "No bottleneck found" only with coverage complete,
    # and a report that could not look at GPU activity withholds its findings
    # 4: recoverable_ns is the time the fix a finding names could plausibly win (null where the
    # trace does not bound it); steady[].verdict names what fills the step
    # 5: coverage gap `graph-kernels-untraced` (most of a steady state in CUDA graph replays whose
    # kernels were not traced): such a report is partial and never says "No bottleneck found"
    schema_version: int = 5
    tool: dict[str, str]
    input: InputInfo
    headline: str
    metrics: Metrics
    # the steady state of the busiest (device, process): its GPU busy share and median step
    steady_utilization_pct: float | None = None
    step_median_ns: int | None = None
    steady: list[SteadyState] = []
    budget: list[BudgetRow] = []
    coverage: Coverage = Coverage(status="complete")
    findings: list[Finding]
    rules: list[RuleResult]
    # binned timeline for the HTML report (analyze(..., timeline=True)); not part of the JSON
    timeline: Timeline | None = Field(default=None, exclude=True)


def as_subquery(sql: str, columns: str = "", tail: str = "") -> str:
    """A rule's SQL as the engine reads it: a subquery named rule_rows, with `columns` added and
    `tail` (a LIMIT) after it. The SQL keeps lines of its own, so that a last line that is a
    comment cannot swallow the closing parenthesis."""
    return f"SELECT *{columns} FROM (\n{sql.strip().rstrip(';')}\n) AS rule_rows{tail}"
