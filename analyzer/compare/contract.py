"""The compare JSON (`compare --format json`, schema_version 4) as pydantic models: the published
contract. render.to_dict() builds the document; a test validates real documents against these
models and the JSON Schema generated from them (analyzer/schemas/compare.schema.json), so the
two cannot drift apart. Times are ns, shares and changes %."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["improved", "regressed", "no-change", "not-comparable", "inconclusive"]


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Distribution(Closed):
    """One run's step periods: quantiles, the mean, and a note when a few long steps dominate."""

    steps: int
    mean_ns: float
    p10_ns: float
    p50_ns: float
    p90_ns: float
    max_ns: float
    long_steps: int = Field(description="steps much longer than the median")
    long_share_pct: float = Field(description="their share of the total time, %")
    note: str | None


class StepEffect(Closed):
    """BEFORE's and AFTER's step periods of one process pair (pids differ between runs)."""

    before_pid: int
    after_pid: int
    step_name: str
    metric: str = Field(description="what change_pct is the change of (mean_step_period_ns)")
    timeline: str = Field(description="gpu (first GPU operations of the steps) or host (host step starts)")
    before_steps: int = Field(description="timed steps")
    after_steps: int
    before_mean_ns: float
    after_mean_ns: float
    change_pct: float | None = Field(description="relative change of the mean step period")
    ci_low_pct: float | None = Field(description="block-bootstrap interval of change_pct, low end")
    ci_high_pct: float | None
    throughput_ratio: float | None = Field(description="AFTER's steps per second over BEFORE's")
    before_median_ns: float
    after_median_ns: float
    median_change_pct: float
    before_mad_ns: float = Field(description="median absolute deviation of the step periods")
    after_mad_ns: float
    before_host_mean_ns: float = Field(description="the same steps between the host's step starts")
    after_host_mean_ns: float
    before_distribution: Distribution
    after_distribution: Distribution
    p_value: float | None = Field(description="two-sided Mann-Whitney rank test")
    test: str | None
    prob_after_faster: float | None = Field(description="P(a random AFTER step is shorter than a BEFORE one)")
    verdict: Literal["improved", "regressed", "no-change", "inconclusive"]
    reason: str


class Effect(StepEffect):
    """The effect the verdict rests on."""


class StepsFound(Closed):
    pid: int
    name: str
    source: str = Field(description="how the steps were found: nvtx, repeated, ...")
    steps: int
    timed: int
    first_timed_step: int | None
    timeline: str = Field(description="gpu or host: the timeline the step periods are measured on")


class Run(Closed):
    path: str
    nsys_version: str | None
    headline: str
    coverage: Literal["complete", "partial", "could-not-look"] = Field(
        description="the report's coverage: whether its rules could look (docs/coverage.md)")
    gaps: list[str] = Field(description="what its rules could not look at")
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
    large_effect_pct: float = Field(description="a change of the mean this large whose interval holds 0 is "
                                                "inconclusive, not no-change, %")


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
    status: Literal["new", "gone", "faster", "slower", "uncertain", "same", "hidden"] = Field(
        description="hidden: a kernel missing on a side whose CUDA graph replays are traced as a whole "
                    "(it may run inside them)")
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
    hidden: list[FindingChange] = Field(description="kernel findings only one side has, where the other side's "
                                                    "graph replays hide their kernels: neither resolved nor new")


class Comparison(Closed):
    """`nsys-diagnose compare BEFORE AFTER --format json`."""

    schema_version: Literal[4]
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
