"""compare(BEFORE, AFTER): preflight, step statistics, deltas and findings, then the verdict."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsys_diagnose import __version__
from nsys_diagnose.analyze import analyze
from nsys_diagnose.compare import deltas, preflight, steps
from nsys_diagnose.compare.verdict import (
    Settings,
    StepComparison,
    compare_steps,
    overall,
)
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.model import Gap, Report, Rule
from nsys_diagnose.engine.params import checked_settings
from nsys_diagnose.ingest.cache_files import private_tempdir
from nsys_diagnose.ingest.database import with_trace
from nsys_diagnose.ingest.settings import SettingValues
from nsys_diagnose.ingest.settings import value as setting
from nsys_diagnose.units import duration

VERDICTS = ("improved", "regressed", "no-change", "not-comparable", "inconclusive")


@dataclass
class RunInfo:
    path: str
    nsys_version: str | None
    headline: str
    coverage: str              # the report's coverage: complete, partial or could-not-look
    gaps: list[str]            # what the report could not look at (its coverage's gaps)
    step_processes: int        # processes whose steps were found
    steps: list[dict] = field(default_factory=list)


@dataclass
class Comparison:
    before: RunInfo
    after: RunInfo
    settings: Settings
    preflight: preflight.Preflight
    verdict: str
    summary: str
    effect: StepComparison | None
    processes: list[StepComparison]
    scope: str                                   # "per step" (steady state) or "per run"
    metrics: list[deltas.MetricDelta]            # whole run
    steady: list[deltas.MetricDelta]             # steady state, per step
    devices: list[dict]
    process_metrics: list[dict]
    items: list[deltas.ItemDelta]
    drivers: list[deltas.ItemDelta]              # what moved the step time, in the verdict's direction
    offsets: list[deltas.ItemDelta]              # the largest moves the other way
    findings: dict[str, list[deltas.FindingChange]]
    notes: list[str]
    tool: dict[str, str] = field(default_factory=lambda: {"name": "nsys-diagnose", "version": __version__})

    def regression_beyond(self, pct: float) -> bool:
        """True when some process regressed significantly by more than `pct` percent."""
        return self.verdict == "regressed" and any(
            p.verdict == "regressed" and p.change_pct > pct for p in self.processes)


def compare(before: str | os.PathLike, after: str | os.PathLike, *, settings: Settings = Settings(),
            rules: dict[str, Rule] | None = None, overrides: dict[str, dict[str, Any]] | None = None,
            use_cache: bool = True, cache_dir: Path | None = None, reader: str = "auto",
            analysis_settings: Mapping[str, Any] | None = None) -> Comparison:
    """`settings`: the comparison's statistics; `analysis_settings`: the analysis's settings
    (`nsys-diagnose explain settings`) this run changes, both exports analyzed with them."""
    rules = rules if rules is not None else load_rules()
    values = checked_settings(analysis_settings)
    if use_cache:
        return _compare(Path(before), Path(after), settings, rules, overrides, cache_dir, reader, values)
    with private_tempdir() as tmp:  # ingest each once, then drop (a killed run's: the next run's sweep)
        return _compare(Path(before), Path(after), settings, rules, overrides, tmp, reader, values)


@dataclass
class _Side:
    """Everything measured on one export."""

    report: Report
    facts: preflight.RunFacts
    series: list[steps.StepSeries]
    usage_steps: dict
    usage_run: dict
    steady: dict


def _measure(path: Path, rules, overrides, cache_dir, reader, values) -> _Side:
    report = analyze(path, rules=rules, overrides=overrides, cache_dir=cache_dir, reader=reader, settings=values)

    def measure(trace) -> _Side:
        con = trace.con
        series = steps.step_series(con)
        usage = deltas.usage_by_step(con, series)
        return _Side(report, preflight.collect(con), series, usage, deltas.usage_whole_run(con),
                     deltas.steady_metrics(con, series, usage))
    return with_trace(path, measure, cache_dir=cache_dir, reader=reader, settings=values)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _compare(pa: Path, pb: Path, settings: Settings, rules, overrides, cache_dir, reader, values) -> Comparison:
    side_a = _measure(pa, rules, overrides, cache_dir, reader, values)
    side_b = side_a if _same_file(pa, pb) else _measure(pb, rules, overrides, cache_dir, reader, values)
    ra, rb = side_a.report, side_b.report
    facts = [side_a.facts, side_b.facts]
    series = [side_a.series, side_b.series]
    usage_steps = [side_a.usage_steps, side_b.usage_steps]
    usage_run = [side_a.usage_run, side_b.usage_run]
    steadies = [side_a.steady, side_b.steady]
    check = preflight.check(*facts)
    notes: list[str] = []
    if settings.assume_comparable and check.blockers:
        notes.append("--assume-comparable: compared despite: " + "; ".join(c.message for c in check.blockers))

    blocked = not check.comparable and not settings.assume_comparable
    timed = [[x for x in s if x.timed] for s in series]
    # different programs: their steps, kernels and findings have nothing to say about each other
    pairs = [] if blocked else [compare_steps(a, b, settings) for a, b in steps.match(*timed)]
    _unseen(pairs, ra, rb)
    if len(timed[0]) != len(timed[1]) and pairs:
        notes.append(f"steps found in {len(timed[0])} process(es) before and {len(timed[1])} after: "
                     f"only {len(pairs)} matched pair(s) are compared")
    scope = "per step" if pairs else "per run"
    usage = usage_steps if pairs else usage_run
    untested = 10**9  # without steps there are no per-step series to test
    items = [] if blocked else deltas.item_deltas(usage[0], usage[1], min_effect_pct=settings.min_effect_pct,
                                                  alpha=settings.alpha,
                                                  min_steps=settings.min_steps if pairs else untested)
    opaque = (deltas.opaque_graphs(usage[0]), deltas.opaque_graphs(usage[1]))
    for side, hides in (("BEFORE", opaque[0]), ("AFTER", opaque[1])):
        if hides:
            notes.append(f"{side} runs its work as CUDA graph replays traced as a whole: the kernels inside them "
                         "are not traced one by one, so '[CUDA graph]' stands for them in the kernel deltas")
    notes += _timeline_notes(timed, values)
    if not pairs and not blocked:
        notes.append("no per-step times on both sides: kernel, API and NVTX deltas are whole-run totals, "
                     "and untested against noise")

    if blocked:
        verdict, effect = "not-comparable", None
    elif not pairs:
        verdict, effect = "inconclusive", None
    else:
        verdict, effect = overall(pairs)
    drivers, offsets = _drivers(items, verdict, effect, values)
    summary = _summary(verdict, effect, check, series, drivers, offsets, settings)

    pid_maps = _process_ranks(ra, rb, pairs)
    return Comparison(
        before=_run_info(pa, ra, series[0]), after=_run_info(pb, rb, series[1]), settings=settings, preflight=check,
        verdict=verdict, summary=summary, effect=effect, processes=pairs, scope=scope,
        metrics=deltas.metric_deltas(deltas.run_metrics(ra), deltas.run_metrics(rb)),
        steady=deltas.metric_deltas(*steadies) if pairs else [],
        devices=_devices(ra, rb), process_metrics=_processes(ra, rb, pid_maps),
        items=items, drivers=drivers, offsets=offsets,
        findings=({"resolved": [], "new": [], "persisting": [], "hidden": []} if blocked
                  else deltas.findings_diff(ra, rb, *pid_maps, rules=rules, opaque=opaque)),
        notes=notes)


def _unseen(pairs: list[StepComparison], ra: Report, rb: Report) -> None:
    """A side the rules could not fully look at (its report's coverage: no GPU activity, a capture
    cut before its steady state, timestamps that run backwards, too few steps) cannot show that
    nothing changed: a no-change becomes inconclusive, saying what is missing. Graph replays
    traced whole hide kernels, not step times: they leave a no-change standing."""
    def gaps(r: Report) -> list[Gap]:
        return [g for g in r.coverage.gaps if g.id != "graph-kernels-untraced"]
    blind = [f"{side} was looked at {'in part' if r.coverage.status == 'partial' else 'not at all'} "
             f"({'; '.join(g.message.rstrip('.') for g in gaps(r))})"
             for side, r in (("BEFORE", ra), ("AFTER", rb)) if gaps(r)]
    if not blind:
        return
    for p in pairs:
        if p.verdict == "no-change":
            p.verdict = "inconclusive"
            p.reason = f"no change is seen, but {' and '.join(blind)}, so none can be ruled out"


def _timeline_notes(timed: list[list[steps.StepSeries]], values: SettingValues) -> list[str]:
    """Say which timeline timed the steps where the choice matters."""
    out = []
    for side, series in zip(("BEFORE", "AFTER"), timed):
        for x in series:
            gpu, host = sum(x.periods_ns), sum(x.host_periods_ns)
            if x.timeline == "host":
                out.append(f"{side} (pid {x.pid}): a step launched no GPU work, so its steps are timed between "
                           "the host's step starts")
            elif gpu and host < (1 - setting("host_ahead", values)) * gpu:  # the host runs ahead
                out.append(f"{side} (pid {x.pid}): the host starts a step every {duration(host / x.timed)} on "
                           f"average, the GPU every {duration(gpu / x.timed)}: the host runs ahead of the GPU "
                           "(it queues steps), so the steps are timed between their first GPU operations")
    return out


def _run_info(path: Path, report: Report, series: list[steps.StepSeries]) -> RunInfo:
    timed = [s for s in series if s.timed]
    return RunInfo(path=str(path), nsys_version=report.input.nsys_version, headline=report.headline,
                   coverage=report.coverage.status, gaps=[g.message for g in report.coverage.gaps],
                   step_processes=len(timed),
                   steps=[{"pid": s.pid, "name": s.name, "source": s.source, "steps": s.total_steps,
                           "timed": s.timed, "first_timed_step": s.first_step, "timeline": s.timeline}
                          for s in series])


def _drivers(items: list[deltas.ItemDelta], verdict: str, effect: StepComparison | None, values: SettingValues):
    """The kernels, APIs, copies and graph replays that moved most in the verdict's direction
    (and the largest moves against it), each at least 5 % of the mean step time's change."""
    # a kernel hidden in graph replays did not move: the replays that hold it did
    movers = [d for d in items if d.kind != "nvtx" and d.status not in ("same", "uncertain", "hidden") and d.delta_ns]
    if verdict not in ("improved", "regressed") or effect is None:
        return movers[:3], []
    floor = setting("driver_min_share", values) * abs(effect.delta_ns)  # a driver moved at least this
    sign = -1 if verdict == "improved" else 1
    drivers = [d for d in movers if d.delta_ns * sign > 0 and abs(d.delta_ns) >= floor][:3]
    offsets = [d for d in movers if d.delta_ns * sign < 0 and abs(d.delta_ns) >= floor][:2]
    return drivers, offsets


def _describe(d: deltas.ItemDelta, unit: str) -> str:
    what = {"kernel": "kernel ", "api": "", "transfer": "", "graph": "", "nvtx": "NVTX range "}[d.kind]
    name = "CUDA graph replays" if d.kind == "graph" else d.display
    sign = "+" if d.delta_ns > 0 else "-"
    extra = f"{d.status}" if d.status in ("new", "gone") else f"{d.change_pct:+.0f} %"
    calls = ""
    if d.kind == "api" and max(d.before_count, d.after_count) >= 0.5:
        calls = f", {d.before_count:,.0f} -> {d.after_count:,.0f} calls {unit}"
    return f"{what}{name} {sign}{duration(abs(d.delta_ns))} {unit} ({extra}{calls})"


def _summary(verdict, effect, check, series, drivers, offsets, s: Settings) -> str:
    if verdict == "not-comparable":
        return "Not comparable: " + "; ".join(c.message for c in check.blockers) + "."
    if effect is None:
        missing = [side for side, ss in (("BEFORE", series[0]), ("AFTER", series[1])) if not any(x.timed for x in ss)]
        why = (f"no repeating steps were found in {' and '.join(missing)}" if missing
               else "the steps of the two runs could not be paired")
        return (f"Inconclusive: {why}, so there is no per-step time distribution to tell a change from noise "
                "(one run each gives no estimate of the noise).")
    e = effect
    unit = "per step"
    head = {"improved": "Improved", "regressed": "Regressed", "no-change": "No significant change",
            "inconclusive": "Inconclusive"}[verdict]
    text = (f"{head}: mean step time {duration(e.before_mean_ns)} -> {duration(e.after_mean_ns)} "
            f"({e.change_pct:+.1f} %")
    if e.ci_low_pct is not None:
        text += f", {s.confidence * 100:.0f} % CI {e.ci_low_pct:+.1f} % to {e.ci_high_pct:+.1f} %"
    if e.throughput_ratio is not None and verdict in ("improved", "regressed"):
        text += f"; {e.throughput_ratio:.3g}x the steps per second"
    text += (f"; {e.before_steps} vs {e.after_steps} steps, {TIMELINE_WORDS.get(e.timeline, e.timeline)}); "
             f"median {duration(e.before_median_ns)} -> {duration(e.after_median_ns)} ({e.median_change_pct:+.1f} %)")
    text += f": {e.reason}." if verdict in ("inconclusive", "no-change") else "."
    for side, dist in (("BEFORE", e.before_distribution), ("AFTER", e.after_distribution)):
        if dist.note:
            text += f" {side}: {dist.note}."
    if verdict in ("inconclusive", "no-change"):
        return text
    if drivers:
        text += " Most of the change: " + "; ".join(_describe(d, unit) for d in drivers) + "."
    if offsets:
        text += " In exchange: " + "; ".join(_describe(d, unit) for d in offsets) + "."
    return text


TIMELINE_WORDS = {"gpu": "on the GPU's timeline", "host": "between the host's step starts"}


def _process_ranks(ra: Report, rb: Report, pairs: list[StepComparison]) -> tuple[dict[int, int], dict[int, int]]:
    """Process identities across runs: matched step processes first, the rest by GPU busy time."""
    ranks_a = {p.before_pid: i for i, p in enumerate(pairs)}
    ranks_b = {p.after_pid: i for i, p in enumerate(pairs)}
    for ranks, report in ((ranks_a, ra), (ranks_b, rb)):
        busy: dict[int, int] = {}
        for p in report.metrics.processes:
            busy[p.pid] = busy.get(p.pid, 0) + p.busy_ns
        for pid in sorted(busy, key=lambda x: -busy[x]):
            ranks.setdefault(pid, len(ranks))
    return ranks_a, ranks_b


def _devices(ra: Report, rb: Report) -> list[dict]:
    a = {d.device_id: d for d in ra.metrics.devices}
    b = {d.device_id: d for d in rb.metrics.devices}
    out = []
    for dev in sorted(a.keys() | b.keys()):
        da, db = a.get(dev), b.get(dev)
        out.append({"device_id": dev, "name": (da or db).name,
                    "before_busy_ns": da.busy_ns if da else None, "after_busy_ns": db.busy_ns if db else None,
                    "before_utilization_pct": da.utilization_pct if da else None,
                    "after_utilization_pct": db.utilization_pct if db else None})
    return out


def _processes(ra: Report, rb: Report, maps: tuple[dict[int, int], dict[int, int]]) -> list[dict]:
    ranks_a, ranks_b = maps
    rows: dict[tuple[int, int], dict] = {}
    for side, report, ranks in (("before", ra, ranks_a), ("after", rb, ranks_b)):
        for p in report.metrics.processes:
            row = rows.setdefault((ranks.get(p.pid, 10**6), p.device_id),
                                  {"process": ranks.get(p.pid), "device_id": p.device_id})
            row[f"{side}_pid"] = p.pid
            row[f"{side}_busy_ns"] = p.busy_ns
            row[f"{side}_utilization_pct"] = p.utilization_pct
    return [rows[k] for k in sorted(rows)]
