"""The HTML report: timeline bins, escaping, self-containment, the batch index, and a real browser.

The browser check opens a report in headless Chromium (Debian's `chromium`; skipped when it is not
installed), asserts that the page's script ran and logged nothing to the console, and saves a
screenshot. NSYS_DIAGNOSE_SHOTS=DIR keeps the screenshots in DIR and adds the H200 exports
dataloader_bound and launch_bound (whole trace and steady state).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from nsys_diagnose.analyses import timeline
from nsys_diagnose.analyze import analyze
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.ingest.database import open_trace
from nsys_diagnose.report import html, html_index
from nsys_diagnose.report import json as json_report

from .conftest import FIXTURES, H200, ROOT, needs_shared
from .synth import write_export

RULES = load_rules()
PID, TID = 100, 100
G_TID = (1 << 48) | (PID << 24) | TID      # globalTid: bits 24-47 pid, 0-23 tid
G_TID2 = G_TID + 1                          # a second thread of the process
G_PID = (1 << 48) | (PID << 24)
W0 = 1_000_000                              # the window: 1 ms to 101 ms on the session clock
HOSTILE_KERNEL = 'void k<float, "q">(int&)</script><img src=x onerror=alert(1)>\nline2'
HOSTILE_NVTX = "outer <b>&\"'"


def run_cli(*args, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nsys_diagnose", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def kernel(start: int, end: int, corr: int, name_id: int = 2) -> dict:
    return {"start": start, "end": end, "deviceId": 0, "contextId": 1, "streamId": 7, "correlationId": corr,
            "globalPid": G_PID, "demangledName": name_id, "shortName": name_id,
            "gridX": 1, "gridY": 1, "gridZ": 1, "blockX": 128, "blockY": 1, "blockZ": 1}


def launch(start: int, corr: int) -> dict:
    return {"start": start, "end": start + 5_000, "eventClass": 0, "globalTid": G_TID, "correlationId": corr,
            "nameId": 1, "returnValue": 0}


def nvtx(start: int, end: int, text: str, tid: int = G_TID) -> dict:
    return {"start": start, "end": end, "eventType": 59, "text": text, "globalTid": tid}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """Kernels at known places: K1 fills bins 200-399 of 2,000 (50 us each), K2 half of bin 400,
    K3 bins 1,600-1,799; a 60 ms idle gap between K2 and K3. Names that need escaping."""
    tables = {
        "StringIds": [{"id": 1, "value": "cudaLaunchKernel_v7000"}, {"id": 2, "value": HOSTILE_KERNEL},
                      {"id": 3, "value": "small_kernel"}],
        "NVTX_EVENTS": [nvtx(W0, 101_000_000, HOSTILE_NVTX), nvtx(11_000_000, 21_000_000, "inner</script>"),
                        nvtx(W0, 26_000_000, "a", G_TID2), nvtx(26_000_000, 29_000_000, "b", G_TID2),
                        nvtx(29_000_000, 51_000_000, "a", G_TID2)],
        "CUPTI_ACTIVITY_KIND_RUNTIME": [launch(10_000_000, 1), launch(10_100_000, 2), launch(80_000_000, 3)],
        "CUPTI_ACTIVITY_KIND_KERNEL": [kernel(11_000_000, 21_000_000, 1), kernel(21_025_000, 21_050_000, 2, 3),
                                       kernel(81_000_000, 91_000_000, 3)],
        "ThreadNames": [{"globalTid": G_TID, "nameId": 3, "priority": 1}],
    }
    return write_export(tables, tmp_path_factory.mktemp("html") / "synthetic.sqlite")


@pytest.fixture(scope="module")
def synthetic_report(synthetic):
    return analyze(synthetic, rules=RULES, timeline=True)


def test_busy_share_per_bin_is_the_busy_time_clipped_to_the_bin(synthetic_report):
    tl = synthetic_report.timeline
    assert (tl.start_ns, tl.end_ns, tl.bins, tl.bin_ns) == (W0, 101_000_000, 2000, 50_000)
    (dev,) = tl.devices
    u = dev.util
    assert u[199] == 0 and set(u[200:400]) == {1000} and u[400] == 500 and u[401] == 0
    assert set(u[1600:1800]) == {1000} and u[1800] == 0
    assert sum(u) * tl.bin_ns // 1000 == dev.busy_ns == 20_025_000


def test_nvtx_lanes_exact_then_binned(synthetic, monkeypatch):
    trace = open_trace(synthetic)
    try:
        exact = timeline.compute(trace.con)
        monkeypatch.setattr(timeline, "EXACT_RANGES", 0)  # every lane binned
        binned = timeline.compute(trace.con, bins=10)     # 10 ms bins
    finally:
        trace.close()
    lanes = {(ln.tid, ln.depth): [(s.name, s.start_ns, s.end_ns, s.ranges) for s in ln.segments] for ln in exact.lanes}
    assert list(lanes) == [(TID, 0), (TID, 1), (TID + 1, 0)]  # threads by top-level NVTX time
    assert lanes[(TID, 0)] == [(HOSTILE_NVTX, W0, 101_000_000, 1)]
    assert lanes[(TID, 1)] == [("inner</script>", 11_000_000, 21_000_000, 1)]
    assert lanes[(TID + 1, 0)] == [("a", W0, 26_000_000, 1), ("b", 26_000_000, 29_000_000, 1),
                                   ("a", 29_000_000, 51_000_000, 1)]
    # binned: the bin 21-31 ms is 7 ms "a" and 3 ms "b", so "a" runs on; its two ranges merge into one segment
    got = {(ln.tid, ln.depth): [(s.name, s.start_ns, s.end_ns, s.ranges, s.coverage) for s in ln.segments]
           for ln in binned.lanes}
    assert got[(TID + 1, 0)] == [("a", W0, 51_000_000, 2, 1.0)]
    assert got[(TID, 1)] == [("inner</script>", 11_000_000, 21_000_000, 1, 1.0)]


class Balance(HTMLParser):
    """Every non-void element closed in order; the tags seen."""
    VOID = {"meta", "br", "hr", "img", "input", "link", "path", "rect", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.tags: set[str] = set()
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def check_page(text: str) -> Balance:
    """Self-contained (nothing to fetch), well nested, two scripts at most (data + code)."""
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:[a-z]+:)?//""", text, re.I)
    assert "@import" not in text and "url(" not in text
    parser = Balance()
    parser.feed(text)
    assert not parser.errors and parser.stack == [], (parser.errors, parser.stack)
    assert not parser.tags & {"img", "link", "iframe", "object", "embed", "base", "form"}
    assert text.count("<script") == text.count("</script>") <= 2
    return parser


def test_every_export_string_is_escaped(synthetic_report):
    text = html.render(synthetic_report)
    check_page(text)
    assert "</script><img" not in text and "<b>&" not in text and "inner</script>" not in text
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; line2" in text  # the kernel name, as text
    assert "outer &lt;b&gt;&amp;&quot;&#x27;" in text                          # the NVTX name
    data = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', text, re.S).group(1)
    assert json.loads(data)["bins"] == 2000


def test_timeline_marks_gaps_and_stays_out_of_the_json(synthetic_report):
    text = html.render(synthetic_report)
    gaps = next(r for r in synthetic_report.rules if r.id == "gpu-idle-gaps")
    assert [(g["start_ns"], g["end_ns"]) for g in gaps.rows] == [(21_050_000, 81_000_000)]
    assert text.count('class="gap"') == 1 and "idle gap of GPU 0, pid 100: 60 ms at 0.021 s" in text
    assert "timeline" not in json.loads(json_report.render(synthetic_report))


def test_report_without_timeline_says_so(synthetic_report):
    text = html.render(synthetic_report.model_copy(update={"timeline": None}))
    check_page(text)
    assert "No timeline: not computed" in text and "Findings" in text


def test_cli_writes_html(tmp_path):
    out = tmp_path / "r.html"
    r = run_cli(FIXTURES / "exports" / "compute_fp32.sqlite", "--format", "html", "-o", out, "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    check_page(text)
    # compute_fp32 has no MEMCPY table: the transfer chart says why it is empty
    assert "Transfers (share of GPU busy time)" in text and "skipped: not captured" in text
    assert 'class="util"' in text and "sm80_xmma_gemm_f32f32" in text


def test_batch_writes_an_index_linking_each_report(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("dataloader_bound", "compute_fp32"):
        shutil.copy(FIXTURES / "exports" / f"{name}.sqlite", runs / f"{name}.sqlite")
    (runs / "broken.sqlite").write_bytes(b"not an export")
    out = tmp_path / "out"
    r = run_cli(runs, "-o", out, "--format", "html", "-j", "1", "--fail-on", "never")
    assert r.returncode == 2, r.stderr  # one input failed
    index = (out / "index.html").read_text(encoding="utf-8")
    check_page(index)
    assert re.findall(r'<a href="([^"]+)">', index) == ["compute_fp32.html", "dataloader_bound.html"]
    assert "broken" in index and "error" in index
    for name in ("compute_fp32", "dataloader_bound"):
        assert 'id="timeline-data"' in (out / f"{name}.html").read_text(encoding="utf-8")


def test_index_renders_records_without_a_batch():
    records = [{"name": "a<b", "path": "/x/a<b.sqlite", "status": "ok", "report_file": "a<b.html", "json_file": "a<b.json",
                "gpu_utilization_pct": 42.0, "top_finding_message": "msg & more", "top_finding_impact_ns": 10**9,
                "top_finding_severity": "warning", "top_kernel": "k<T>", "top_kernel_share_pct": 50.0, "cached": False}]
    text = html_index.render_index(records, [], seconds=1.5)
    check_page(text)
    assert '<a href="a%3Cb.html">a&lt;b</a>' in text and "msg &amp; more" in text and "k&lt;T&gt;" in text


# --- in a real browser ------------------------------------------------------------------------------

def chromium() -> str | None:
    return os.environ.get("NSYS_DIAGNOSE_CHROMIUM") or next(
        (p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def open_in_browser(page: Path, shot: Path, tmp: Path, fragment: str = "") -> str:
    """Headless Chromium (no network, a fresh profile): the DOM after scripts ran, and a screenshot."""
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0",
            "--window-size=1400,2000", f"--screenshot={shot}", "--dump-dom", page.resolve().as_uri() + fragment]
    r = subprocess.run(args, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr[-2000:]
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert not console, console  # the page logs nothing: no script error, no warning
    assert png_size(shot) == (1400, 2000)
    return r.stdout


def shots_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("NSYS_DIAGNOSE_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# Test-only: after the page's script, drag across the first track from 25 % to 50 % of its width,
# then press "whole trace" and "steady state", and record what the tracks show after each.
USER = """<script>(function () {
  var svg = document.querySelector("svg.track"), r = svg.getBoundingClientRect(), seen = [];
  function mouse(type, f) {
    svg.dispatchEvent(new MouseEvent(type, {bubbles: true, clientX: r.left + f * r.width, clientY: r.top + 2}));
  }
  mouse("mousedown", 0.25); mouse("mousemove", 0.5); mouse("mouseup", 0.5);
  seen.push(svg.getAttribute("viewBox"), document.querySelector(".readout").textContent);
  document.querySelector('button[data-zoom="reset"]').click();
  seen.push(svg.getAttribute("viewBox"));
  document.querySelector('button[data-zoom="0"]').click();
  seen.push(svg.getAttribute("viewBox"), document.querySelector(".range").textContent);
  document.documentElement.setAttribute("data-user", JSON.stringify(seen));
})();</script>"""


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_and_zooms_in_chromium(tmp_path):
    report = analyze(FIXTURES / "exports" / "dataloader_bound.sqlite", rules=RULES, timeline=True)
    page = tmp_path / "dataloader_bound.html"
    page.write_text(html.render(report).replace("</body>", USER + "</body>"), encoding="utf-8")
    dom = open_in_browser(page, shots_dir(tmp_path) / "fixture-dataloader_bound.png", tmp_path)
    assert 'data-timeline="ready"' in dom           # the page's script ran to its end
    assert re.search(r'<div class="axis"><span style="left:[0-9.]+%">', dom)  # and drew the axis
    raw = re.search(r"data-user=\"([^\"]*)\"", dom).group(1)
    dragged, readout, whole, steady, shown = json.loads(unescape(raw))
    tl, w = report.timeline, report.timeline.steady[0]
    assert [float(v) for v in dragged.split()] == pytest.approx([tl.bins / 4, 0, tl.bins / 4, 1], abs=0.5)
    assert "GPU 0 · NVIDIA H200:" in readout and "% busy" in readout
    assert whole == f"0 0 {tl.bins} 1"
    assert float(steady.split()[0]) == pytest.approx((w.start_ns - tl.start_ns) / tl.bin_ns, abs=0.01)
    assert shown.startswith(f"showing {w.start_ns / 1e9:.3f} s to {w.end_ns / 1e9:.3f} s")


@needs_shared
@pytest.mark.skipif(not os.environ.get("NSYS_DIAGNOSE_SHOTS") or chromium() is None,
                    reason="set NSYS_DIAGNOSE_SHOTS=DIR (and install chromium) for the H200 screenshots")
@pytest.mark.parametrize("name", ["dataloader_bound", "launch_bound"])
def test_h200_screenshots(name, tmp_path):
    report = analyze(H200 / f"{name}.sqlite", rules=RULES, timeline=True)
    folder = shots_dir(tmp_path)
    page = folder / f"{name}.html"
    page.write_text(html.render(report), encoding="utf-8")
    for fragment, suffix in (("", ""), ("#steady", "-steady")):
        dom = open_in_browser(page, folder / f"{name}{suffix}.png", tmp_path / f"run{suffix}", fragment)
        assert 'data-timeline="ready"' in dom
