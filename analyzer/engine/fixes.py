"""Every fix checked against the trace before it is shown (docs/recoverable.md, "Fixes checked
against the trace").

A rule's advice parts say what they recommend (`fixes:` in the YAML: cuda-graphs, pinned-memory,
mixed-precision, ...). The ingest's fix_facts table (ingest/sql/budget.sql) lists, per (device,
process), the fixes the trace shows done already and those a busy GPU makes moot. A part that
recommends one of those for the finding's process is left out; where nothing is left, the fix says
what the trace shows instead of advising it. One mechanism for every rule: no rule tests these
facts itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
from nsys_diagnose.engine.model import Finding, SteadyState


@dataclass(frozen=True)
class FixFact:
    device_id: int
    pid: int
    fix: str
    state: str   # done | moot
    reason: str


def read(con: duckdb.DuckDBPyConnection) -> list[FixFact]:
    return [FixFact(*r) for r in sorted(con.table("fix_facts").select("device_id, pid, fix, state, reason").fetchall())]


def _mine(f: Finding, facts: list[FixFact], lead: SteadyState | None) -> dict[str, str]:
    """fix -> why it is ruled out, for the finding's (device, process): its evidence's pid (and
    device where it names one), else the report's leading steady state."""
    pid, device = f.evidence.get("pid"), f.evidence.get("device_id")
    if pid is None and lead is not None:
        pid, device = lead.pid, lead.device_id
    out: dict[str, str] = {}
    for x in facts:
        if x.pid == pid and (device is None or x.device_id == device):
            out.setdefault(x.fix, x.reason)
    return out


def apply(findings: list[Finding], facts: list[FixFact], lead: SteadyState | None) -> None:
    """Each finding's fix without the parts the trace rules out."""
    for f in findings:
        if not any(tags for _, tags in f.fix_parts):
            continue
        ruled_out = _mine(f, facts, lead)
        if f.headline is not None:  # the headline names the first fix the trace leaves
            f.headline.fix_options = [(text, tags) for text, tags in f.headline.fix_options
                                      if not any(t in ruled_out for t in tags)]
        kept = [text for text, tags in f.fix_parts if not any(t in ruled_out for t in tags)]
        if len(kept) == len(f.fix_parts):
            continue
        if kept:
            f.fix = " ".join(kept)
        else:
            reasons = sorted({ruled_out[t] for _, tags in f.fix_parts for t in tags if t in ruled_out})
            f.fix = ("The usual fixes for this do not apply here: " + "; ".join(reasons)
                     + ". Look at what fills the step instead (the verdict at the top).")
