"""What changed between the runs: metrics, kernels, CUDA APIs, transfers, NVTX ranges, findings.

With steps on both sides, everything is measured over the timed steady-state steps and
expressed per step (the runs may have different step counts); each item's per-step series
is then compared with the rank test, so "faster"/"slower" means outside the step-to-step
noise. Without steps, the whole runs are compared (per run) and changes are untested.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import median
from typing import Any

import duckdb
from nsys_diagnose.compare.stats import fmean, mann_whitney
from nsys_diagnose.compare.steps import StepSeries
from nsys_diagnose.engine.model import Finding, Report, Rule
from nsys_diagnose.ingest.sql_library import query

KIND_LABEL = {"kernel": "kernel", "memcpy": "transfer", "memset": "transfer", "graph": "graph", "api": "api",
              "nvtx": "nvtx"}


@dataclass
class Usage:
    """One item (a kernel, a copy kind, an API, an NVTX range) in one run."""

    ns: float = 0.0            # time per step (or per run)
    count: float = 0.0         # instances per step (or per run)
    series: list[float] = field(default_factory=list)  # time in each timed step
    gpu_ns: float | None = None  # NVTX ranges: GPU time of the work launched inside them


def usage_by_step(con: duckdb.DuckDBPyConnection, series: list[StepSeries]) -> dict[tuple[str, str], Usage]:
    """Per-item time per timed step, summed over the processes that have steps; the j-th
    timed step of each process is added into step j."""
    timed = {s.pid: {step: j for j, step in enumerate(s.steps)} for s in series if s.timed}
    if not timed:
        return {}
    width = min(len(v) for v in timed.values())
    out: dict[tuple[str, str], Usage] = {}
    for part in ("compare_gpu_by_step", "compare_host_by_step"):  # ingest/sql/queries/compare.sql
        for pid, step, kind, name, n, ns, gpu in con.execute(query(part)).fetchall():
            index = timed.get(pid, {}).get(step)
            if index is None:
                continue
            u = out.setdefault((KIND_LABEL[kind], name), Usage(series=[0.0] * width))
            u.ns += ns / len(timed[pid])  # each process's mean per step, summed over processes
            u.count += n / len(timed[pid])
            if gpu is not None:
                u.gpu_ns = (u.gpu_ns or 0.0) + gpu / len(timed[pid])
            if index < width:
                u.series[index] += ns
    return out


def usage_whole_run(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], Usage]:
    out: dict[tuple[str, str], Usage] = {}
    for kind, name, n, ns, gpu in con.execute(query("compare_whole_run")).fetchall():
        u = out.setdefault((KIND_LABEL[kind], name), Usage())
        u.ns += ns
        u.count += n
        if gpu is not None:
            u.gpu_ns = (u.gpu_ns or 0.0) + gpu
    return out


@dataclass
class ItemDelta:
    kind: str
    name: str
    display: str
    status: str                # new, gone, faster, slower, uncertain (within noise), same
    before_ns: float
    after_ns: float
    delta_ns: float
    change_pct: float | None
    before_count: float
    after_count: float
    p_value: float | None      # rank test over the per-step series; None when untested
    before_gpu_ns: float | None = None  # NVTX ranges: GPU time launched inside them
    after_gpu_ns: float | None = None


def opaque_graphs(usage: dict) -> bool:
    """The run replays CUDA graphs traced as a whole: the kernels inside are not traced."""
    return any(kind == "graph" for kind, _ in usage)


def item_deltas(before: dict, after: dict, *, min_effect_pct: float,
                alpha: float, min_steps: int) -> list[ItemDelta]:
    out = []
    hidden_before, hidden_after = opaque_graphs(before), opaque_graphs(after)
    for key in before.keys() | after.keys():
        a, b = before.get(key, Usage()), after.get(key, Usage())
        if not a.ns and not b.ns and not a.count and not b.count:
            continue
        kind, name = key
        change = (b.ns / a.ns - 1) * 100 if a.ns else None
        p = None
        # a kernel missing on a side whose graph replays hide their kernels may run inside them
        if kind == "kernel" and ((not a.count and hidden_before) or (not b.count and hidden_after)):
            status = "hidden"
        elif not a.count:
            status = "new"
        elif not b.count:
            status = "gone"
        else:
            if len(a.series) >= min_steps and len(b.series) >= min_steps:
                p = mann_whitney(a.series, b.series).p_value
            moved = change is not None and abs(change) >= min_effect_pct
            if not moved:
                status = "same"
            elif p is None or p < alpha:
                status = "slower" if change > 0 else "faster"
            else:
                status = "uncertain"  # moved, but not beyond the step-to-step noise
        out.append(ItemDelta(kind, name, display_name(kind, name), status, a.ns, b.ns, b.ns - a.ns,
                             change, a.count, b.count, p, a.gpu_ns, b.gpu_ns))
    return sorted(out, key=lambda d: (-abs(d.delta_ns), d.kind, d.name))


def display_name(kind: str, name: str, limit: int = 90) -> str:
    """A kernel name without the noise of its namespaces and casts, cut at `limit` characters."""
    if kind == "kernel":
        name = compact_kernel_name(name)
    return name if len(name) <= limit else name[: limit - 3] + "..."


def compact_kernel_name(name: str) -> str:
    """'void at::native::vectorized_elementwise_kernel<(int)4, at::native::GeluCUDAKernelImpl(...'
    -> 'vectorized_elementwise_kernel<4, GeluCUDAKernelImpl(...': what tells two kernels apart
    (the template and functor) survives, the namespaces do not."""
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"\((?:int|unsigned int|bool|long|char)\)", "", name)
    namespaces = r"\b(?:at::native::|at::|c10::|std::|cub::|cutlass::|(?:\(anonymous namespace\)|<unnamed>)::)"
    name = re.sub(namespaces, "", name)
    return name
@dataclass
class MetricDelta:
    id: str
    label: str
    unit: str              # ns, pct, count
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def change_pct(self) -> float | None:
        if self.before in (None, 0) or self.after is None or self.unit == "pct":
            return None
        return (self.after / self.before - 1) * 100


def _share(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def run_metrics(report: Report) -> dict[str, tuple[str, str, float | None]]:
    m = report.metrics
    return {
        "span_ns": ("trace window", "ns", m.span_ns),
        "gpu_busy_ns": ("GPU busy", "ns", m.gpu_busy_ns),
        "gpu_utilization_pct": ("GPU utilization", "pct", m.gpu_utilization_pct),
        "kernel_ns": ("kernel time", "ns", m.kernel_ns),
        "kernel_count": ("kernels", "count", m.kernel_count),
        "transfer_ns": ("memcpy + memset time", "ns", m.memcpy_ns + m.memset_ns),
        "transfer_share_pct": ("transfer share of GPU busy", "pct", _share(m.memcpy_ns + m.memset_ns, m.gpu_busy_ns)),
        "api_ns": ("CUDA API host time", "ns", m.api_ns),
        "api_count": ("CUDA API calls", "count", m.api_count),
        "api_share_pct": ("CUDA API time / window", "pct", _share(m.api_ns, m.span_ns)),
    }


def steady_metrics(con: duckdb.DuckDBPyConnection, series: list[StepSeries],
                   usage: dict[tuple[str, str], Usage]) -> dict[str, tuple[str, str, float | None]]:
    timed = [s for s in series if s.timed]
    if not timed:
        return {}
    busy = {s.pid: steady_busy_ns(con, s) for s in timed}
    window = sum(s.window_end_ns - s.window_start_ns for s in timed)
    per_step_busy = sum(busy[s.pid] / s.timed for s in timed)

    def total(kind: str, field_: str = "ns") -> float:
        return sum(getattr(u, field_) for (k, _), u in usage.items() if k == kind)

    transfer = total("transfer")
    return {
        "step_ns": ("mean step time", "ns", fmean(timed[0].periods_ns) if len(timed) == 1 else None),
        "step_median_ns": ("median step time", "ns", median(timed[0].periods_ns) if len(timed) == 1 else None),
        "steps_timed": ("timed steps", "count", sum(s.timed for s in timed)),
        "step_busy_ns": ("GPU busy per step", "ns", per_step_busy),
        "step_utilization_pct": ("GPU utilization (steady state)", "pct", _share(sum(busy.values()), window)),
        "step_kernel_ns": ("kernel time per step", "ns", total("kernel")),
        "step_kernel_count": ("kernels per step", "count", total("kernel", "count")),
        "step_graph_count": ("CUDA graph replays per step", "count", total("graph", "count")),
        "step_transfer_ns": ("transfer time per step", "ns", transfer),
        "step_transfer_share_pct": ("transfer share of GPU busy (steady state)", "pct",
                                    _share(transfer, per_step_busy)),
        "step_api_ns": ("CUDA API host time per step", "ns", total("api")),
        "step_api_count": ("CUDA API calls per step", "count", total("api", "count")),
    }


def steady_busy_ns(con: duckdb.DuckDBPyConnection, s: StepSeries) -> int:
    """The process's GPU busy time (union over its operations) inside its timed window."""
    return con.execute(query("compare_steady_busy"),
                       {"pid": s.pid, "s": s.window_start_ns, "e": s.window_end_ns}).fetchone()[0]


def metric_deltas(before: dict, after: dict) -> list[MetricDelta]:
    out = []
    for key in list(before) + [k for k in after if k not in before]:
        label, unit, va = before.get(key, (None, None, None))
        label_b, unit_b, vb = after.get(key, (label, unit, None))
        if va is None and vb is None:
            continue
        out.append(MetricDelta(key, label or label_b, unit or unit_b, va, vb))
    return out


# ---- findings -------------------------------------------------------------------------------

IDENTITY_NUMBERS = ("device_id",)


def finding_key(f: Finding, pid_rank: dict[int, int]) -> tuple:
    """What a finding is about, independent of its numbers: the rule, the text fields of its
    evidence (kernel, API, copy kind), the device and which process (by rank, as pids differ)."""
    parts: list[Any] = [f.rule_id]
    for k, v in sorted(f.evidence.items()):
        if isinstance(v, str) and len(v) <= 500:
            parts.append((k, v))
        elif k in IDENTITY_NUMBERS:
            parts.append((k, v))
        elif k == "pid" and v in pid_rank:
            parts.append(("process", pid_rank[v]))
    return tuple(parts)


@dataclass
class FindingChange:
    rule_id: str
    severity: str
    message: str
    impact_ns: int | None
    other_message: str | None = None   # for persisting findings: the AFTER message


def findings_diff(before: Report, after: Report, ranks_a: dict[int, int], ranks_b: dict[int, int],
                  rules: dict[str, Rule] | None = None, opaque: tuple[bool, bool] = (False, False)) -> dict:
    """Findings resolved, new and in both; `opaque`: whether each side's graph replays hide their
    kernels (opaque_graphs), so that its kernel findings cannot be judged against the other."""
    ka: dict[tuple, Finding] = {}
    for f in before.findings:
        ka.setdefault(finding_key(f, ranks_a), f)
    kb: dict[tuple, Finding] = {}
    for f in after.findings:
        kb.setdefault(finding_key(f, ranks_b), f)
    hidden_before, hidden_after = opaque
    kernel_rules = _kernel_rules(rules or {})
    _on_kernels = lambda f: f.rule_id in kernel_rules  # noqa: E731
    gone = [f for k, f in ka.items() if k not in kb]
    came = [f for k, f in kb.items() if k not in ka]
    change = lambda f: FindingChange(f.rule_id, f.severity, f.message, f.impact_ns)  # noqa: E731
    # a kernel finding cannot be judged against a run whose graph replays hide their kernels
    hidden = [change(f) for f in gone if hidden_after and _on_kernels(f)]
    hidden += [change(f) for f in came if hidden_before and _on_kernels(f)]
    resolved = [change(f) for f in gone if not (hidden_after and _on_kernels(f))]
    new = [change(f) for f in came if not (hidden_before and _on_kernels(f))]
    persisting = [FindingChange(f.rule_id, f.severity, f.message, f.impact_ns, kb[k].message)
                  for k, f in ka.items() if k in kb]
    return {"resolved": resolved, "new": new, "persisting": persisting, "hidden": hidden}


NOT_KERNELS = {"copies", "memsets", "communication", "CUDA graph replays"}


def _kernel_rules(rules: dict[str, Rule]) -> set[str]:
    """Rules whose findings are about kernels themselves (their math, grids, fusion): they
    claim the budget's kernel classes."""
    return {r.id for r in rules.values()
            if any(f.claims is not None and f.claims.kind == "gpu" and not set(f.claims.causes) & NOT_KERNELS
                   for f in r.findings)}

