"""The compare JSON (`compare --format json`, schema_version 1) as pydantic models: the published
contract. render.to_dict() builds the document; a test validates real documents against these
models and the JSON Schema generated from them (analyzer/schemas/compare.schema.json), so the
two cannot drift apart. Times are ns, shares and changes %."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["improved", "regressed", "no-change", "not-comparable", "inconclusive"]


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepEffect(Closed):
    """BEFORE's and AFTER's step times of one process pair (pids differ between runs)."""

    before_pid: int
    after_pid: int
    step_name: str
    before_steps: int = Field(description="timed steps")
    after_steps: int
    before_median_ns: float
    after_median_ns: float
    before_mad_ns: float = Field(description="median absolute deviation of the step times")
    after_mad_ns: float
    change_pct: float | None = Field(description="relative change of the median step time")
    ci_low_pct: float | None = Field(description="bootstrap interval of change_pct, low end")
    ci_high_pct: float | None
    p_value: float | None = Field(description="two-sided Mann-Whitney rank test")
    test: str | None
    prob_after_faster: float | None = Field(description="P(a random AFTER step is shorter than a BEFORE one)")
    verdict: Literal["improved", "regressed", "no-change", "inconclusive"]
    reason: str


class Effect(StepEffect):
    """The effect the verdict rests on."""

    metric: Literal["median_step_ns"]


class StepsFound(Closed):
    pid: int
    name: str
    source: str = Field(description="how the steps were found: nvtx, repeated, ...")
    steps: int
    timed: int
    first_timed_step: int | None


class Run(Closed):
    path: str
    nsys_version: str | None
    headline: str
    step_processes: int = Field(description="processes whose steps were found")
    steps: list[StepsFound]


class Check(Closed):
    id: str
    status: Literal["ok", "caution", "blocker", "unknown"]
    before: Any
    after: Any
    message: str


class Preflight(Closed):
    comparable: bool
    similarity: dict[str, float | None] = Field(description="nvtx_names (Jaccard), kernel_time (shared share), 0..1")
    checks: list[Check]


class Settings(Closed):
    min_effect_pct: float
    alpha: float
    confidence: float
    resamples: int
    min_steps: int
    assume_comparable: bool


class MetricChange(Closed):
    id: str
    label: str
    unit: Literal["ns", "pct", "count"]
    before: float | None
    after: float | None
    delta: float | None
    change_pct: float | None = Field(description="None for shares (unit pct) and from zero")


class Metrics(Closed):
    whole_run: list[MetricChange]
    steady_state: list[MetricChange] = Field(description="per step; empty without paired steps")


class DeviceChange(Closed):
    device_id: int
    name: str | None
    before_busy_ns: int | None
    after_busy_ns: int | None
    before_utilization_pct: float | None
    after_utilization_pct: float | None


class ProcessChange(Closed):
    """A process on a device, matched across the runs by rank; a side without it has no keys."""

    process: int | None
    device_id: int
    before_pid: int | None = None
    before_busy_ns: int | None = None
    before_utilization_pct: float | None = None
    after_pid: int | None = None
    after_busy_ns: int | None = None
    after_utilization_pct: float | None = None


class ItemChange(Closed):
    """A kernel, CUDA graph, copy kind, CUDA API or NVTX range, per step (or per run)."""

    kind: Literal["kernel", "graph", "transfer", "api", "nvtx"]
    name: str
    display: str
    status: Literal["new", "gone", "faster", "slower", "uncertain", "same"]
    before_ns: float
    after_ns: float
    delta_ns: float
    change_pct: float | None
    before_count: float
    after_count: float
    p_value: float | None
    before_gpu_ns: float | None = Field(description="NVTX ranges: GPU time of the work launched inside")
    after_gpu_ns: float | None


class FindingChange(Closed):
    rule_id: str
    severity: Literal["info", "warning", "error"]
    message: str
    impact_ns: int | None
    other_message: str | None = Field(description="persisting findings: the AFTER message")


class Findings(Closed):
    resolved: list[FindingChange]
    new: list[FindingChange]
    persisting: list[FindingChange]


class Comparison(Closed):
    """`nsys-diagnose compare BEFORE AFTER --format json`."""

    schema_version: Literal[1]
    kind: Literal["comparison"]
    tool: dict[str, str]
    verdict: Verdict
    summary: str
    comparable: bool
    effect: Effect | None
    before: Run
    after: Run
    preflight: Preflight
    settings: Settings
    scope: Literal["per step", "per run"]
    processes: list[StepEffect]
    metrics: Metrics
    devices: list[DeviceChange]
    process_metrics: list[ProcessChange]
    drivers: list[ItemChange] = Field(description="what moved the step time, in the verdict's direction")
    offsets: list[ItemChange] = Field(description="the largest moves the other way")
    findings: Findings
    notes: list[str]
    kernels: list[ItemChange] = Field(description="at most 500; kernels_total says how many")
    kernels_total: int
    transfers: list[ItemChange]
    transfers_total: int
    apis: list[ItemChange]
    apis_total: int
    nvtx: list[ItemChange]
    nvtx_total: int
