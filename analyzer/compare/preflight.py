"""Comparability preflight: can BEFORE and AFTER be compared at all, and with what caveats?

Each check ends `ok`, `caution` (comparable, but part of any difference may come from this) or
`blocker` (not comparable). Two kinds of check:

- Environment: the GPUs (model and count), the driver, the nsys version, what was traced. A
  different GPU or a run without CUDA tracing makes the numbers incomparable; a different
  driver or nsys version is only a caution (its effect is usually small, and upgrading the
  driver may be the very change under test).
- Program identity: the same program before and after a change, or two different programs?
  Kernel sets change for legitimate reasons (bf16 instead of fp32 GEMMs, CUDA graph replays,
  fusion), so a disjoint kernel set alone never blocks. The program's own NVTX annotations
  are the strongest signal; the kernel mix weighted by GPU time is the second; the command
  line is used only when neither run has NVTX ranges.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import duckdb
from nsys_diagnose.ingest.sql_library import query

# Thresholds of the identity check (documented in README "Compare").
NVTX_SAME_MIN = 0.5     # NVTX name-set similarity (Jaccard) above which the structure matches
KERNEL_SAME_MIN = 0.5   # kernel GPU-time overlap at or above which the kernel mix matches


@dataclass
class RunFacts:
    """What one export says about its environment and its program."""

    gpus: list[str]                      # names of the GPUs that ran work, one per device
    driver: str | None                   # NvDriverVersion
    cuda_driver: str | None              # CudaDriverVersion (e.g. 13000)
    nsys_version: str | None
    traced: list[str] | None             # CAPTURE_EVENT_TYPE values; None when not recorded
    graph_trace_mode: str | None         # CUDA_GRAPH_TRACE_OPTIONS:MODE (Graph or Node)
    commands: list[str]                  # one command line per launched process
    nvtx_names: Counter = field(default_factory=Counter)    # normalized name -> ranges
    kernel_ns: dict[str, int] = field(default_factory=dict)  # kernel name -> GPU time
    graph_replays: int = 0


def normalize_range_name(name: str) -> str:
    """'ProfilerStep#12' and 'ProfilerStep#13' are one range of the structure."""
    return re.sub(r"\d+", "N", name.strip())


def collect(con: duckdb.DuckDBPyConnection) -> RunFacts:
    meta = con.execute(query("report_capture_meta")).fetchall()
    env = dict(con.execute(query("report_system_env")).fetchall())
    export = dict(con.execute(query("report_export_meta")).fetchall())
    gpus = [r[0] or f"GPU {r[1]}" for r in con.execute(query("compare_gpus")).fetchall()]
    traced = sorted({v for k, v in meta if k == "CAPTURE_EVENT_TYPE"}) or None
    modes = sorted({v for k, v in meta if k.endswith("CUDA_GRAPH_TRACE_OPTIONS:MODE")})
    return RunFacts(
        gpus=gpus, driver=env.get("NvDriverVersion"), cuda_driver=env.get("CudaDriverVersion"),
        nsys_version=export.get("EXPORT_PRODUCT_VERSION"), traced=traced,
        graph_trace_mode="/".join(modes) or None, commands=_commands(meta),
        nvtx_names=Counter({normalize_range_name(n): c for n, c in con.execute(query("compare_nvtx_names")).fetchall()}),
        kernel_ns=dict(con.execute(query("compare_kernel_ns")).fetchall()),
        graph_replays=con.execute(query("report_graph_launches")).fetchone()[0],
    )


def _commands(meta: list[tuple[str, str]]) -> list[str]:
    """PROCESS_<k>:COMMAND plus its PROCESS_<k>:ARGUMENT_<i>, per launched process."""
    procs: dict[int, dict] = {}
    for key, value in meta:
        m = re.match(r"PROCESS_(\d+):(COMMAND|ARGUMENT_(\d+))$", key)
        if m:
            p = procs.setdefault(int(m.group(1)), {"cmd": "", "args": {}})
            if m.group(2) == "COMMAND":
                p["cmd"] = value
            else:
                p["args"][int(m.group(3))] = value
    return [" ".join([p["cmd"], *(p["args"][i] for i in sorted(p["args"]))]).strip()
            for _, p in sorted(procs.items())]


@dataclass
class Check:
    id: str
    status: str          # ok, caution, blocker, unknown
    before: object
    after: object
    message: str


@dataclass
class Preflight:
    comparable: bool
    checks: list[Check]
    similarity: dict[str, float | None]

    @property
    def blockers(self) -> list[Check]:
        return [c for c in self.checks if c.status == "blocker"]

    @property
    def cautions(self) -> list[Check]:
        return [c for c in self.checks if c.status == "caution"]


def jaccard(a: set, b: set) -> float | None:
    return len(a & b) / len(a | b) if a or b else None


def kernel_overlap(a: dict[str, int], b: dict[str, int]) -> float | None:
    """Share of GPU kernel time the two runs have in common: the sum over kernel names of the
    smaller of the two time shares (1 = the same mix, 0 = no kernel in common)."""
    ta, tb = sum(a.values()), sum(b.values())
    if not ta or not tb:
        return None
    return sum(min(a[k] / ta, b[k] / tb) for k in a.keys() & b.keys())


def _fmt_gpus(gpus: list[str]) -> str:
    if not gpus:
        return "no GPU activity"
    return ", ".join(f"{n}x {name}" for name, n in sorted(Counter(gpus).items()))


def check(a: RunFacts, b: RunFacts) -> Preflight:
    checks = [_gpus(a, b), _driver(a, b), _nsys(a, b), _traced(a, b), _graph_mode(a, b)]
    identity, sim = _identity(a, b)
    checks += identity
    return Preflight(comparable=not any(c.status == "blocker" for c in checks), checks=checks, similarity=sim)


def _gpus(a: RunFacts, b: RunFacts) -> Check:
    fa, fb = _fmt_gpus(a.gpus), _fmt_gpus(b.gpus)
    if not a.gpus and not b.gpus:
        return Check("gpu", "unknown", fa, fb, "neither run did GPU work: only host-side times are compared")
    if not a.gpus or not b.gpus:
        side = "BEFORE" if not a.gpus else "AFTER"
        return Check("gpu", "blocker", fa, fb, f"{side} did no GPU work: there is nothing to compare on the GPU")
    if Counter(a.gpus) != Counter(b.gpus):
        what = "GPU count" if set(a.gpus) == set(b.gpus) else "GPUs"
        return Check("gpu", "blocker", fa, fb, f"different {what} ({fa} vs {fb}): a hardware comparison, "
                     "not a before/after of one program")
    return Check("gpu", "ok", fa, fb, f"same GPUs ({fa})")


def _driver(a: RunFacts, b: RunFacts) -> Check:
    va = f"{a.driver or '?'} (CUDA {a.cuda_driver or '?'})"
    vb = f"{b.driver or '?'} (CUDA {b.cuda_driver or '?'})"
    if a.driver is None and b.driver is None:
        return Check("driver", "unknown", None, None, "driver version not recorded in either export")
    if (a.driver, a.cuda_driver) != (b.driver, b.cuda_driver):
        return Check("driver", "caution", va, vb, f"different drivers ({va} vs {vb}): part of any difference "
                     "may come from the driver")
    return Check("driver", "ok", va, vb, f"same driver {va}")


def _nsys(a: RunFacts, b: RunFacts) -> Check:
    if a.nsys_version != b.nsys_version:
        return Check("nsys", "caution", a.nsys_version, b.nsys_version,
                     f"different Nsight Systems versions ({a.nsys_version or 'unknown'} vs "
                     f"{b.nsys_version or 'unknown'}): tracing overhead and exported fields may differ")
    return Check("nsys", "ok", a.nsys_version, b.nsys_version, f"same Nsight Systems {a.nsys_version}")


def _traced(a: RunFacts, b: RunFacts) -> Check:
    if a.traced is None or b.traced is None:
        return Check("traced", "unknown", a.traced, b.traced,
                     "the traced APIs are not recorded (no CAPTURE_EVENT_TYPE in META_DATA_CAPTURE)")
    if a.traced == b.traced:
        return Check("traced", "ok", a.traced, b.traced, "same traced APIs: " + ", ".join(a.traced))
    cuda_a, cuda_b = "Cuda" in a.traced, "Cuda" in b.traced
    only_a = sorted(set(a.traced) - set(b.traced))
    only_b = sorted(set(b.traced) - set(a.traced))
    diff = "; ".join(x for x in (f"only BEFORE traced {', '.join(only_a)}" if only_a else "",
                                 f"only AFTER traced {', '.join(only_b)}" if only_b else "") if x)
    if cuda_a != cuda_b:
        return Check("traced", "blocker", a.traced, b.traced, f"CUDA was traced in one run only ({diff})")
    return Check("traced", "caution", a.traced, b.traced,
                 f"different traced APIs ({diff}): tracing overhead differs between the runs")


def _graph_mode(a: RunFacts, b: RunFacts) -> Check:
    if a.graph_trace_mode == b.graph_trace_mode or not (a.graph_replays or b.graph_replays):
        return Check("graph-trace", "ok", a.graph_trace_mode, b.graph_trace_mode,
                     f"same CUDA graph trace mode ({a.graph_trace_mode or 'not recorded'})")
    return Check("graph-trace", "caution", a.graph_trace_mode, b.graph_trace_mode,
                 "different CUDA graph trace modes: kernels inside graphs are traced one by one in one run "
                 "and as whole replays in the other, so per-kernel deltas are not like for like")


def _identity(a: RunFacts, b: RunFacts) -> tuple[list[Check], dict[str, float | None]]:
    names_a, names_b = set(a.nvtx_names), set(b.nvtx_names)
    nvtx = jaccard(names_a, names_b) if names_a and names_b else None
    kern = kernel_overlap(a.kernel_ns, b.kernel_ns)
    sim = {"nvtx_names": nvtx, "kernel_time": kern}
    checks: list[Check] = []

    if nvtx is not None:
        shared = sorted(names_a & names_b)
        only = [f"only {side}: {', '.join(sorted(x)[:3])}" + (", ..." if len(x) > 3 else "")
                for side, x in (("BEFORE", names_a - names_b), ("AFTER", names_b - names_a)) if x]
        checks.append(Check("nvtx-structure", "ok" if nvtx > NVTX_SAME_MIN else "caution",
                            len(names_a), len(names_b),
                            f"NVTX range names {_pct(nvtx)} shared ({len(shared)} of {len(names_a | names_b)}"
                            + (f": {', '.join(shared[:5])}" + (", ..." if len(shared) > 5 else "") if shared else "")
                            + ")" + (f"; {'; '.join(only)}" if only else "")))
    elif names_a or names_b:
        side = "BEFORE" if names_a else "AFTER"
        checks.append(Check("nvtx-structure", "caution", len(names_a), len(names_b),
                            f"only {side} has NVTX ranges: the instrumentation changed"))
    graphs = ""
    if a.graph_replays or b.graph_replays:
        graphs = (f"; CUDA graph replays: {a.graph_replays} before, {b.graph_replays} after (kernels inside "
                  "graphs traced as whole replays are not in the kernel set)")
    if kern is not None:
        shared_k = len(a.kernel_ns.keys() & b.kernel_ns.keys())
        checks.append(Check("kernel-set", "ok" if kern >= KERNEL_SAME_MIN else "caution",
                            len(a.kernel_ns), len(b.kernel_ns),
                            f"{_pct(kern)} of kernel time is in kernels both runs share ({shared_k} of "
                            f"{len(a.kernel_ns.keys() | b.kernel_ns.keys())} kernel names){graphs}"))

    same_cmd = bool(a.commands) and a.commands == b.commands
    if nvtx is not None:
        same = nvtx > NVTX_SAME_MIN or (kern is not None and kern >= KERNEL_SAME_MIN)
        why = (f"NVTX structure {_pct(nvtx)} shared and kernel time {_pct(kern)} shared: "
               "these look like different programs")
    elif kern is not None and kern >= KERNEL_SAME_MIN:
        same, why = True, ""
    elif a.commands and b.commands and not same_cmd:
        same = kern is None  # nothing to tell the programs apart but the command line: not enough
        why = (f"no NVTX ranges to match, kernel time {_pct(kern)} shared and different command lines "
               f"('{_short(a.commands[0])}' vs '{_short(b.commands[0])}'): these look like different programs")
    else:
        same, why = True, ""
    if not same:
        checks.append(Check("program", "blocker", a.commands, b.commands, why))
    elif nvtx is None and (kern is None or kern < KERNEL_SAME_MIN):
        checks.append(Check("program", "caution", a.commands, b.commands,
                            "could not confirm that both runs are the same program (no shared NVTX structure, "
                            f"kernel time {_pct(kern)} shared)"
                            + ("; the command lines are identical" if same_cmd else "")))
    else:
        checks.append(Check("program", "ok", a.commands, b.commands,
                            "same command line" if same_cmd else "same program structure"
                            + ("" if not a.commands or same_cmd else " (the command lines differ)")))
    return checks, sim


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.0f} %"


def _short(cmd: str, limit: int = 60) -> str:
    return cmd if len(cmd) <= limit else cmd[: limit - 3] + "..."
