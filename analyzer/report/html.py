"""The HTML report: one self-contained file (inline CSS, SVG and a little script; nothing loaded
from the network) that tells the story in order: the steady state and its time budget (the
verdict, the step time, the slices of the window), the findings (each with a link that zooms the
timeline to its gap, range or window), the timeline (html_timeline.py), three charts and the
Markdown report's tables.

The charts, findings and tables come from the report itself, formatted by the Markdown reporter's
cell functions so that both reports print the same numbers with the same units. Every string from
the export is escaped (html_text.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nsys_diagnose.engine.model import Finding, Report, RuleResult
from nsys_diagnose.kernel_labels import labels as kernel_labels
from nsys_diagnose.report import markdown
from nsys_diagnose.report.html_assets import CSS, JS
from nsys_diagnose.report.html_budget import budget_section
from nsys_diagnose.report.html_text import (
    NAME_CHARS,
    clipped,
    esc,
    is_number,
    num,
    plain,
    script_json,
)
from nsys_diagnose.report.html_timeline import finding_span, timeline_section
from nsys_diagnose.units import duration, pct, size

__all__ = ["clipped", "esc", "num", "page", "plain", "render", "script_json"]

CHART_ROWS = 10


def cell(column: str, value: Any) -> tuple[str, str]:
    """(html, css class) of a table cell: the Markdown report's units and number formats; strings whole."""
    if isinstance(value, str) and markdown.cell_format(column) is None:
        return clipped(value), "text"
    text = markdown.cell(column, value)
    cls = "num" if is_number(value) else "text"
    return esc(text), cls


def table(columns: list[str], rows: list[dict[str, Any]], titles: list[str] | None = None) -> str:
    head = "".join(f"<th>{esc(t)}</th>" for t in (titles or [markdown.header(c) for c in columns]))
    body = []
    for row in rows:
        cells = (cell(c, row.get(c)) for c in columns)
        body.append("<tr>" + "".join(f'<td class="{cls}">{html}</td>' for html, cls in cells) + "</tr>")
    return f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


# --- charts --------------------------------------------------------------------------------------

def bar_chart(title: str, result: RuleResult | None, label_col: str, share_col: str, values, wide: bool = False,
              label=None) -> str:
    """Horizontal bars of a rule's rows: bar length = the row's share (%), largest first. `label`:
    row -> the text of its bar, where the label column alone does not tell rows apart."""
    head = f'<div class="card{" wide" if wide else ""}"><h3>{esc(title)}</h3>'
    if result is None:
        return head + '<p class="note">Rule not run.</p></div>'
    if result.status in ("skipped", "error"):
        return head + f'<p class="note">{esc(result.status)}: {esc(result.reason or "")}</p></div>'
    rows = sorted((r for r in result.rows if is_number(r.get("total_ns"))), key=lambda r: -r["total_ns"])[:CHART_ROWS]
    if not rows:
        return head + '<p class="note">Nothing recorded.</p></div>'
    out = []
    for r in rows:
        text = label(r) if label else str(r.get(label_col) or r.get("name") or "")
        share = r.get(share_col) if is_number(r.get(share_col)) else 0.0
        cls = f' class="{esc(r["category"])}"' if isinstance(r.get("category"), str) else ""
        full = str(r.get("name") or text)
        out.append(f'<div class="name" title="{esc(full)}">{esc(text[:NAME_CHARS])}</div>'
                   f'<div class="bar"><i{cls} style="width:{min(100.0, max(0.0, share)):.2f}%"></i></div>'
                   f'<div class="val">{esc(values(r))}</div>')
    more = result.row_count - len(rows)
    tail = f'<p class="note">{more:,} more in the tables below and the JSON report.</p>' if more > 0 else ""
    return head + f'<div class="bars">{"".join(out)}</div>{tail}</div>'


def kernel_label(result: RuleResult | None):
    """hot-kernels rows -> a label per row that tells kernels of one short name apart by their template."""
    if result is None:
        return None
    pairs = [(r["name"], str(r.get("display_name") or r["name"])) for r in result.rows if isinstance(r.get("name"), str)]
    found = kernel_labels(pairs)
    return lambda r: found.get(r.get("name"), str(r.get("display_name") or r.get("name") or ""))


def charts_section(report: Report) -> str:
    by_id = {r.id: r for r in report.rules}
    hot = by_id.get("hot-kernels")
    kernels = bar_chart("Top kernels (share of kernel time)", hot, "display_name", "share_pct",
                        lambda r: f"{duration(r['total_ns'])} · {pct(r.get('share_pct'))} · {r.get('instances', 0):,}x",
                        wide=True, label=kernel_label(hot))
    api = bar_chart("CUDA API host time (share of API time)", by_id.get("cuda-api-overhead"), "api", "share_pct",
                    lambda r: f"{duration(r['total_ns'])} · {pct(r.get('share_pct'))} · {r.get('calls', 0):,} calls")
    transfers = bar_chart("Transfers (share of GPU busy time)", by_id.get("transfer-share"), "kind", "busy_share_pct",
                          lambda r: f"{duration(r['total_ns'])} · {size(r.get('bytes'))} · {r.get('count', 0):,} ops"
                          + (f" · {markdown.cell('bytes_per_s', r['bytes_per_s'])}" if r.get("bytes_per_s") else ""))
    return (f'<section id="charts"><h2>Where the time goes</h2><div class="charts">{kernels}{api}{transfers}</div>'
            "</section>")


# --- findings and tables ---------------------------------------------------------------------------

def finding_item(f: Finding, report: Report, fixes: dict[str, int], number: int) -> str:
    if f.recoverable_ns is not None:
        stake = f'<span class="stake">recoverable: <b>{esc(duration(f.recoverable_ns))}</b></span>'
    else:
        stake = f'<span class="stake">at stake: {esc(duration(f.impact_ns))}</span>' if f.impact_ns is not None else ""
    span = finding_span(f, report)
    link = (f'<a class="show" href="#t={span[0] / 1e9:.9f},{span[1] / 1e9:.9f}">show on timeline</a>'
            if span is not None else "")
    lines = []
    if f.claim:
        lines.append(f'<p class="claim"><b>Budget:</b> {esc(f.claim)}</p>')
    if f.note:
        lines.append(f'<p class="note">{esc(f.note)}</p>')
    lines += [f'<p class="note">Same time, seen by <code>{esc(r.rule_id)}</code>: {esc(r.message)}</p>' for r in f.related]
    fix = f.fix.strip()
    lines.append(f'<p class="fix"><b>Fix:</b> {esc(fix)}</p>' if fix not in fixes else
                 f'<p class="fix"><b>Fix:</b> as for finding {fixes[fix]}.</p>')
    fixes.setdefault(fix, number)
    evidence = ""
    if f.evidence:
        rows = "".join(f'<tr><th>{esc(k)}</th><td class="{c}">{h}</td></tr>'
                       for k, v in f.evidence.items() for h, c in [evidence_cell(k, v)])
        evidence = f"<details><summary>Evidence</summary><table>{rows}</table></details>"
    return (f'<li class="finding"><div><span class="badge {esc(f.severity)}">{esc(f.severity)}</span>'
            f"<code>{esc(f.rule_id)}</code>{stake}{link}</div><p>{esc(f.message)}</p>{''.join(lines)}{evidence}</li>")


def evidence_cell(key: str, value: Any) -> tuple[str, str]:
    if isinstance(value, (dict, list)):
        return esc(json.dumps(value, ensure_ascii=False, default=str)), "text"
    return cell(key, value)


def findings_section(report: Report) -> str:
    if not report.findings:
        none = ("None: the rules could not look (coverage above)." if report.coverage.status == "could-not-look"
                else "None: no rule fired.")
        return f'<section id="findings"><h2>Findings</h2><p>{none}</p></section>'
    fixes: dict[str, int] = {}
    items = "".join(finding_item(f, report, fixes, i) for i, f in enumerate(report.findings, 1))
    return f'<section id="findings"><h2>Findings</h2><ol class="findings">{items}</ol></section>'


def tables_section(report: Report) -> str:
    m = report.metrics
    out = ['<section id="tables"><h2>Tables</h2>']
    if m.devices:
        out.append("<h3>Devices</h3>" + table(
            ["device_id", "name", "busy_ns", "utilization_pct"],
            [{"device_id": d.device_id, "name": d.name or "unknown", "busy_ns": d.busy_ns,
              "utilization_pct": d.utilization_pct} for d in m.devices],
            ["device", "name", "busy", "utilization"]))
    if len(m.processes) > 1:
        out.append("<h3>Processes</h3>" + table(
            ["pid", "name", "device_id", "busy_ns", "utilization_pct"], [p.model_dump() for p in m.processes],
            ["pid", "name", "device", "busy", "utilization"]))
    status = "".join(f'<tr><td><code>{esc(r.id)}</code></td><td class="status-{esc(r.status)}">{esc(r.status)}</td>'
                     f'<td class="num">{len(r.findings)}</td><td class="text">{esc(r.reason or "")}</td></tr>'
                     for r in report.rules)
    out.append("<h3>Rules</h3><div class=\"tablewrap\"><table><thead><tr><th>rule</th><th>status</th><th>findings</th>"
               f"<th>note</th></tr></thead><tbody>{status}</tbody></table></div>")
    for r in report.rules:
        if not r.rows:
            continue
        cols = r.display or list(r.rows[0])[:8]
        shown = r.rows[:markdown.TABLE_ROWS]
        more = r.row_count - len(shown)
        tail = (f'<p class="note">{more:,} more rows in the JSON report (<code>--format json</code>).</p>'
                if more > 0 else "")
        opened = " open" if r.status == "fired" else ""
        out.append(f"<details{opened}><summary>{esc(r.title)} (<code>{esc(r.id)}</code>): {r.row_count:,} row(s)"
                   f"</summary>{table(cols, shown)}{tail}</details>")
    out.append("</section>")
    return "".join(out)


def coverage_section(report: Report) -> str:
    """What the rules could not look at, and how to capture it (analyses/coverage.py)."""
    c = report.coverage
    if c.status == "complete":
        return ""
    items = "".join(f"<li><code>{esc(g.id)}</code>: {'' if g.message in report.headline else esc(g.message) + ' '}"
                    f"<em>To capture it:</em> {esc(g.capture)}</li>" for g in c.gaps)
    return (f'<div class="coverage coverage-{esc(c.status)}"><p><strong>Coverage: {esc(c.status)}.</strong> '
            f"{esc(markdown.COVERAGE_WORDS[c.status])}:</p><ul>{items}</ul></div>")


def header_section(report: Report) -> str:
    m, inp = report.metrics, report.input
    version = (f"nsys {inp.nsys_version} (export schema {inp.export_schema_version or 'n/a'})" if inp.nsys_version
               else "nsys version unknown")
    meta = (f"{version} · trace window {duration(m.span_ns)} · GPU busy {duration(m.gpu_busy_ns)} "
            f"({pct(m.gpu_utilization_pct)} of {len(m.devices)} device(s) x window) · {m.kernel_count:,} kernels · "
            f"{m.memcpy_count:,} memcpys · {m.memset_count:,} memsets · {m.api_count:,} CUDA API calls")
    derived = f'<p class="meta">{esc(markdown.derived_note(inp.derived))}</p>' if inp.derived else ""
    return (f"<header><h1>nsys-diagnose: {esc(Path(inp.path).name)}</h1>"
            f'<p class="headline">{esc(report.headline)}</p>{coverage_section(report)}'
            f'<p class="meta">{esc(meta)}</p>{derived}'
            '<nav><a href="#budget">Steady state</a><a href="#findings">Findings</a><a href="#timeline">Timeline</a>'
            '<a href="#charts">Charts</a><a href="#tables">Tables</a></nav></header>')


def page(title: str, body: str, script: str = "", css: str = "") -> str:
    """A whole document: the stylesheet (plus `css`) and the script inline, nothing to fetch."""
    js = f"<script>{script}</script>" if script else ""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}{css}</style></head><body><main>{body}</main>{js}</body></html>\n")


def render(report: Report) -> str:
    body = (header_section(report) + budget_section(report) + findings_section(report) + timeline_section(report)
            + charts_section(report) + tables_section(report)
            + f'<footer>{esc(report.tool.get("name", "nsys-diagnose"))} {esc(report.tool.get("version", ""))} · '
              f'{esc(report.input.path)}</footer>')
    return page(f"nsys-diagnose: {Path(report.input.path).name}", body, JS)
