"""index.html of a batch: one row per input, linking its report, with its steady-state verdict and a
utilization bar, in the order it is given (summary.ranked: most severe first, then by recoverable
time); then the failures and, for ranks of one job, the rank table. The same content as summary.md (the batch's
Markdown summary), drawn with the HTML report's stylesheet, self-contained like it.

It reads the batch's report records (analyzer/batch/summary.record) and rank groups
(analyzer/batch/ranks.Job) and knows nothing else of the batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from nsys_diagnose import __version__
from nsys_diagnose.output import write_atomic
from nsys_diagnose.report.html import clipped, esc, page
from nsys_diagnose.units import duration, pct

INDEX_CSS = """
td.util { min-width: 150px; white-space: nowrap; }
td .bound { white-space: nowrap; }
tbody td:first-child { white-space: nowrap; overflow-wrap: normal; }
.ubar { display: inline-block; width: 90px; height: 10px; background: var(--panel); border-radius: 2px;
  vertical-align: -1px; margin-right: 6px; overflow: hidden; }
.ubar i { display: block; height: 100%; background: var(--busy); }
.straggler { color: var(--error); font-weight: 600; }
"""


def _link(rec: dict[str, Any]) -> str:
    target = rec.get("report_file") or rec.get("json_file")
    name = esc(rec["name"])
    return f'<a href="{esc(quote(target))}">{name}</a>' if target else name


def _util(value: float | None) -> str:
    if value is None:
        return ""
    return f'<span class="ubar"><i style="width:{min(100.0, max(0.0, value)):.1f}%"></i></span>{esc(pct(value))}'


def stake_text(r: dict[str, Any]) -> str:
    """A batch record's recoverable time: every finding's, each budget slice counted once (the
    figure the batch ranks by; summary.md shows the same); empty where none is bounded."""
    return duration(r["recoverable_ns"]) if r.get("recoverable_ns") else ""


def status_text(r: dict[str, Any]) -> str:
    """ok, with the report's coverage where the rules could not fully look (summary.md the same)."""
    coverage = r.get("coverage")
    if r["status"] != "ok" or coverage in (None, "complete"):
        return r["status"]
    return f"ok · {coverage} ({', '.join(r.get('coverage_gaps') or [])})"


def finding_text(r: dict[str, Any]) -> str:
    """The report's headline (at most 30 words; it says what is missing where the rules could not
    fully look), else the top finding's message (records written before headlines were short)."""
    return r.get("headline") or r.get("top_finding_message") or ""


def place_text(r: dict[str, Any], pid_label: str = "pid ") -> str:
    """Where a batch record's top finding is: its process and device, else the steady state's."""
    pid, dev = r.get("top_finding_pid"), r.get("top_finding_device_id")
    if pid is None and dev is None:
        pid, dev = r.get("steady_pid"), r.get("steady_device_id")
    return " · ".join(x for x in (f"{pid_label}{pid}" if pid is not None else "",
                                  f"GPU {dev}" if dev is not None else "") if x)


def _report_row(r: dict[str, Any]) -> str:
    if r["status"] != "ok":
        return (f'<tr><td class="text">{esc(r["name"])}</td><td class="status-{esc(r["status"])}">{esc(r["status"])}'
                f'</td><td></td><td></td><td></td><td class="text">{esc(r.get("error") or "")}</td><td></td><td></td>'
                "<td></td></tr>")
    finding = finding_text(r)
    kernel = r.get("_top_kernel_short") or r.get("top_kernel")
    kernel_html = f'{clipped(kernel, 60)} ({esc(pct(r.get("top_kernel_share_pct")))})' if kernel else ""
    sev = r.get("top_finding_severity")
    badge = f'<span class="badge {esc(sev)}">{esc(sev)}</span>' if sev else ""
    bound = r.get("verdict_class") or r.get("bound")
    said = (r.get("verdict") or "").split(": ", 1)[-1]
    bound_html = (f'<span class="bound {esc(bound)}" title="{esc(said)}">{esc(bound)}</span> {esc(said)}'
                  if bound else "")
    steady = r.get("steady_utilization_pct")
    busy = _util(steady) if steady is not None else (
        _util(r.get("gpu_utilization_pct")) + " (window)" if r.get("gpu_utilization_pct") is not None else "")
    step = duration(r["steady_step_median_ns"]) if r.get("steady_step_median_ns") else ""
    return (f'<tr><td class="text">{_link(r)}</td><td>{esc(status_text(r))}</td><td>{bound_html}</td><td class="util">{busy}</td>'
            f'<td class="num">{esc(step)}</td><td class="text">{badge}{esc(finding)}</td>'
            f'<td class="num">{esc(stake_text(r))}</td><td>{esc(place_text(r))}</td><td class="text">{kernel_html}</td></tr>')


def _rank_table(job) -> str:
    basis = ("median step time and GPU busy share" if job.by_steps
             else "GPU busy share (no step times in these exports)")
    rows = []
    for r in job.members:
        gpus = ", ".join(u[:12] for u in r.get("gpu_uuids") or []) or ", ".join(
            (d.get("name") or f"GPU {d['device_id']}") for d in r.get("devices") or [])
        steps = f"{r['step_count']:,}" if r.get("step_count") else "n/a"
        step = duration(r["step_median_ns"]) if r.get("step_median_ns") else "n/a"
        why = job.stragglers.get(r["name"])
        mark = f'<span class="straggler">yes</span>: {esc(why)}' if why else "no"
        rows.append(f'<tr><td class="text">{_link(r)}</td><td class="text">{esc(gpus)}</td>'
                    f'<td>{esc(", ".join(map(str, r.get("pids") or [])))}</td><td class="num">{steps}</td>'
                    f'<td class="num">{esc(step)}</td><td class="util">{_util(r.get("gpu_utilization_pct"))}</td>'
                    f'<td class="text">{mark}</td></tr>')
    return (f"<h2>Ranks of one job ({esc(job.label)}): {len(job.members)} reports of "
            f"<code>{clipped(job.program, 200)}</code></h2><p class=\"note\">Stragglers judged by {esc(basis)}, "
            "against the job's median.</p><div class=\"tablewrap\"><table><thead><tr><th>rank</th><th>GPU</th>"
            "<th>pid</th><th>steps</th><th>step time (median)</th><th>GPU busy</th><th>straggler</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>"
            f"<p>Stragglers: {esc(', '.join(job.stragglers) or 'none')}.</p>")


def render_index(records: list[dict[str, Any]], jobs: list, *, seconds: float, interrupted: int = 0) -> str:
    ok = [r for r in records if r["status"] == "ok"]
    errors = [r for r in records if r["status"] == "error"]
    skipped = [r for r in records if r["status"] == "skipped"]
    cached = sum(1 for r in ok if r.get("cached"))
    body = [f"<header><h1>nsys-diagnose batch: {len(records)} input(s)</h1>"
            f'<p class="meta">{len(ok)} analyzed ({cached} from the result cache) · {len(errors)} failed · '
            f"{len(skipped)} skipped · {esc(duration(seconds * 1e9))} · nsys-diagnose {esc(__version__)}</p></header>"]
    if interrupted:
        body.append(f'<p class="headline">Interrupted: {interrupted} input(s) were not analyzed; this index covers '
                    "the ones that finished.</p>")
    body.append('<div class="tablewrap"><table><thead><tr><th>report</th><th>status</th><th>verdict</th>'
                "<th>steady GPU busy</th><th>step median</th><th>headline</th><th>recoverable (all findings)</th>"
                "<th>where</th><th>top kernel</th></tr></thead><tbody>"
                + "".join(_report_row(r) for r in records) + "</tbody></table></div>")
    for title, rows in (("Failed", errors), ("Skipped", skipped)):
        if rows:
            body.append(f"<h2>{title}</h2><ul>" + "".join(
                f"<li><code>{esc(r['path'])}</code>: {esc(r.get('error') or '')}</li>" for r in rows) + "</ul>")
    body += [_rank_table(job) for job in jobs]
    body.append('<p class="note">Every report\'s metrics: <code>reports.parquet</code>; every finding: '
                "<code>findings.parquet</code>; the same summary as Markdown: <code>summary.md</code>.</p>")
    return page(f"nsys-diagnose batch: {len(records)} input(s)", "".join(body), css=INDEX_CSS)


def write_index(out_dir: Path, records: list[dict[str, Any]], jobs: list, *, seconds: float,
                interrupted: int = 0) -> None:
    write_atomic(Path(out_dir) / "index.html", render_index(records, jobs, seconds=seconds, interrupted=interrupted))
