"""The HTML report: timeline bins, escaping, self-containment, the batch index, and a real browser.

The browser check opens a report in headless Chromium (Debian's `chromium`; skipped when it is not
installed), asserts that the page's script ran and logged nothing to the console, and saves a
screenshot. NSYS_DIAGNOSE_SHOTS=DIR keeps the screenshots in DIR and adds the H200 exports
dataloader_bound and launch_bound (the page as it opens; its timeline as it opens, on the steady
state, and over the whole window).
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
from nsys_diagnose.kernel_labels import labels as kernel_labels
from nsys_diagnose.report import html, html_index, html_timeline
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
    assert json.loads(data)["res"][0]["bins"] == 2000 and HOSTILE_NVTX in json.loads(data)["names"]


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
    # the warning first (dataloader_bound's input stall), then compute_fp32, the failed input last
    assert re.findall(r'<a href="([^"]+)">', index) == ["dataloader_bound.html", "compute_fp32.html"]
    assert index.index("dataloader_bound.html") < index.index("compute_fp32.html") < index.index("broken")
    assert re.search(r'<span class="bound host-bound" title="[^"]+">host-bound</span>', index) and "error" in index
    for name in ("compute_fp32", "dataloader_bound"):
        assert 'id="timeline-data"' in (out / f"{name}.html").read_text(encoding="utf-8")


def test_index_renders_records_without_a_batch():
    records = [{"name": "a<b", "path": "/x/a<b.sqlite", "status": "ok", "report_file": "a<b.html", "json_file": "a<b.json",
                "gpu_utilization_pct": 42.0, "top_finding_message": "msg & more", "top_finding_impact_ns": 10**9,
                "top_finding_severity": "warning", "top_kernel": "k<T>", "top_kernel_share_pct": 50.0, "cached": False}]
    text = html_index.render_index(records, [], seconds=1.5)
    check_page(text)
    assert '<a href="a%3Cb.html">a&lt;b</a>' in text and "msg &amp; more" in text and "k&lt;T&gt;" in text


def test_host_lanes_split_api_time_by_kind(synthetic_report):
    tl = synthetic_report.timeline
    (lane,) = tl.host
    assert (lane.pid, lane.tid, lane.api_ns) == (PID, TID, 15_000)
    launch = lane.kinds["launch"]  # three 5 us launches: a tenth of their 50 us bins
    assert [b for b, v in enumerate(launch) if v] == [180, 182, 1580] and launch[180] == 100
    assert set(lane.kinds) == {"launch"}


@pytest.fixture(scope="module")
def fixture_report():
    return analyze(FIXTURES / "exports" / "dataloader_bound.sqlite", rules=RULES, timeline=True)


def test_step_ticks_and_the_focus_window(fixture_report):
    tl, lead = fixture_report.timeline, fixture_report.steady[0]
    trace = open_trace(FIXTURES / "exports" / "dataloader_bound.sqlite")
    try:
        starts = [r[0] for r in trace.con.execute("SELECT start_ns FROM steps WHERE pid = ? ORDER BY start_ns",
                                                  [lead.pid]).fetchall()]
        wide = timeline.compute(trace.con, focus=(tl.start_ns, tl.end_ns))  # the whole trace: no second binning
    finally:
        trace.close()
    (ticks,) = tl.steps
    assert (ticks.pid, ticks.count, ticks.stride, ticks.starts_ns) == (lead.pid, len(starts), 1, starts)
    f = tl.focus  # the steady state is 42 % of the trace: binned again on its own
    assert (f.start_ns, f.end_ns, f.bins) == (lead.start_ns, lead.end_ns, 2000) and f.bin_ns < tl.bin_ns / 2
    assert [t.device_id for t in f.devices] == [t.device_id for t in tl.devices]
    assert f.steps[0].starts_ns == [t for t in starts if lead.start_ns <= t < lead.end_ns]
    assert wide.focus is None and wide.bins == tl.bins


def test_page_opens_on_the_steady_state_budget_and_findings_first(fixture_report):
    text = html.render(fixture_report)
    check_page(text)
    w = fixture_report.timeline.steady[0]
    data = json.loads(re.search(r'id="timeline-data">(.*?)</script>', text, re.S).group(1))
    assert data["view"] == [w.start_ns, w.end_ns] and data["first"] == 1 and len(data["res"]) == 2
    assert f'<div class="tl" data-r="1" data-view="{w.start_ns},{w.end_ns}">' in text
    # the focus drawings are shown, the whole-window ones hidden until the view leaves the steady state
    assert text.count('<svg class="track" data-r="1" viewBox="0 0 2000 1"') == text.count('data-r="1" viewBox')
    assert all('style="display:none"' in m for m in re.findall(r'<svg class="track" data-r="0"[^>]*>', text))
    order = [text.index(f'<section id="{s}">') for s in ("budget", "findings", "timeline", "charts", "tables")]
    assert order == sorted(order)
    budget = text[order[0]:order[1]]
    assert '<span class="bound host-bound">host-bound</span>' in budget and ">Data Loading<" in budget
    widths = [float(x) for x in re.findall(r'<i class="b-[a-z0-9]+(?: idle)?" style="width:([0-9.]+)%"', budget)]
    drawn = [b.pct for b in fixture_report.budget if b.pct >= 0.3]
    assert widths == pytest.approx(drawn, abs=0.01) and sum(widths) <= 100.01
    assert "CUDA API</b> pid 1397 · tid 1397" in text and 'class="k-launch"' in text and 'class="tick"' in text


def test_findings_link_to_their_gap_range_or_steady_state(fixture_report):
    text = html.render(fixture_report)
    findings = text[text.index('<section id="findings">'):text.index('<section id="timeline">')]
    links = re.findall(r'<a class="show" href="#t=([0-9.]+),([0-9.]+)">show on timeline</a>', findings)
    spans = [html_timeline.finding_span(f, fixture_report) for f in fixture_report.findings]
    assert [(float(a), float(b)) for a, b in links] == [pytest.approx((s[0] / 1e9, s[1] / 1e9), abs=1e-9)
                                                        for s in spans if s is not None]
    w = fixture_report.timeline.steady[0]
    by_rule = dict(zip((f.rule_id for f in fixture_report.findings), spans))
    assert by_rule["input-pipeline-stall"] == (w.start_ns, w.end_ns)  # its budget slice: the steady state
    gap = next(f for f in fixture_report.findings if f.rule_id == "gpu-idle-gaps").evidence
    pad = (gap["end_ns"] - gap["start_ns"]) // 10
    assert by_rule["gpu-idle-gaps"] == (gap["start_ns"] - pad, gap["end_ns"] + pad)  # its gap, with some context


# the nine `vectorized_elementwise_kernel` rows of the H200 launch_bound export, and reduce kernels
# alike in their op
EW = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::{}, std::array<char *, (unsigned long)2>>(int, T2, T3)"
KERNELS = [EW.format("addcdiv_cuda_kernel(at::TensorIteratorBase &, const c10::Scalar &)::[lambda() (instance 2)]"
                     "::operator ()() const::[lambda(float, float, float) (instance 1)]"),
           EW.format("CUDAFunctorOnSelf_add<float>"), EW.format("CUDAFunctor_add<float>"),
           EW.format("BUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>"),
           EW.format("AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>"),
           EW.format("<unnamed>::lerp_scalar_kernel(at::TensorIteratorBase &, const c10::Scalar &)::[lambda() "
                     "(instance 2)]::operator ()() const::[lambda(float, float) (instance 1)]"),
           EW.format("FillFunctor<float>")]
REDUCE = ("void at::native::reduce_kernel<(int){}, (int){}, at::native::ReduceOp<float, at::native::func_wrapper_t<"
          "float, at::native::sum_functor<float, float, float>::operator ()(at::TensorIterator &)::[lambda(float, "
          "float) (instance 1)]>, unsigned int, float, (int)4, (int)4>>(T3)")


def test_kernels_of_one_short_name_are_told_apart_by_their_template():
    rows = [(k, "vectorized_elementwise_kernel") for k in KERNELS]
    rows += [(REDUCE.format(512, 1), "reduce_kernel"), (REDUCE.format(128, 4), "reduce_kernel"),
             ("sm80_xmma_gemm_f32f32_nn", "sm80_xmma_gemm_f32f32_nn")]
    got = kernel_labels(rows)
    assert [got[k] for k in KERNELS] == [
        "vectorized_elementwise_kernel<addcdiv_cuda_kernel>", "vectorized_elementwise_kernel<CUDAFunctorOnSelf_add>",
        "vectorized_elementwise_kernel<CUDAFunctor_add>", "vectorized_elementwise_kernel<BUnaryFunctor<MulFunctor>>",
        "vectorized_elementwise_kernel<AUnaryFunctor<MulFunctor>>", "vectorized_elementwise_kernel<lerp_scalar_kernel>",
        "vectorized_elementwise_kernel<FillFunctor>"]
    assert got[REDUCE.format(512, 1)] == "reduce_kernel<sum_functor, 512, 1, 4, 4>"  # the op alike: the numbers
    assert got[REDUCE.format(128, 4)] == "reduce_kernel<sum_functor, 128, 4, 4, 4>"
    assert got["sm80_xmma_gemm_f32f32_nn"] == "sm80_xmma_gemm_f32f32_nn"            # unique: its short name
    same = kernel_labels([("void k<(int)1>(int)", "k"), ("void k<(int)1>(long)", "k")])
    assert sorted(same.values()) == ["k<1> #1", "k<1> #2"]                        # nothing tells them apart


def test_kernel_chart_uses_the_labels(tmp_path):
    tables = {"StringIds": [{"id": 1, "value": "cudaLaunchKernel_v7000"}, {"id": 4, "value": "vectorized_elementwise_kernel"}]
              + [{"id": 10 + i, "value": k} for i, k in enumerate(KERNELS[:3])],
              "CUPTI_ACTIVITY_KIND_RUNTIME": [launch(2_000_000 + i * 1_000_000, i + 1) for i in range(3)],
              "CUPTI_ACTIVITY_KIND_KERNEL": [dict(kernel(2_100_000 + i * 1_000_000, 2_600_000 + i * 1_000_000, i + 1),
                                                  demangledName=10 + i, shortName=4) for i in range(3)]}
    report = analyze(write_export(tables, tmp_path / "ew.sqlite"), rules=RULES, timeline=True)
    charts = html.render(report).split('<section id="charts">')[1].split("</section>")[0]
    for label in ("addcdiv_cuda_kernel", "CUDAFunctorOnSelf_add", "CUDAFunctor_add"):
        assert f"vectorized_elementwise_kernel&lt;{label}&gt;</div>" in charts


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


# Test-only: after the page's script, record the view it opened on, press "whole window", drag across
# the track from 25 % to 50 % of its width, press "steady state", then follow the first finding's
# "show on timeline" link; record the view (data-view), the drawing shown (data-r) and labels after each.
USER = """<script>(function () {
  var tl = document.querySelector(".tl"), seen = [];
  function state() { return [tl.getAttribute("data-view"), tl.getAttribute("data-r")]; }
  function mouse(svg, type, f) {
    var r = svg.getBoundingClientRect();
    svg.dispatchEvent(new MouseEvent(type, {bubbles: true, clientX: r.left + f * r.width, clientY: r.top + 2}));
  }
  seen.push(state(), document.querySelector("[data-dev]").textContent, document.querySelector("[data-host]").textContent,
            document.querySelector("[data-steps]").textContent, document.querySelectorAll(".names span").length);
  document.querySelector('button[data-zoom="reset"]').click();
  seen.push(state());
  var svg = document.querySelector('.tl svg.track:not([style*="none"])');
  mouse(svg, "mousedown", 0.25); mouse(svg, "mousemove", 0.5); mouse(svg, "mouseup", 0.5);
  seen.push(state(), document.querySelector(".readout").textContent);
  document.querySelector('button[data-zoom="0"]').click();
  seen.push(state(), document.querySelector(".range").textContent);
  var link = document.querySelector("a.show");
  link.click();
  seen.push(state(), link.getAttribute("href"));
  document.documentElement.setAttribute("data-user", JSON.stringify(seen));
})();</script>"""


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_and_zooms_in_chromium(tmp_path, fixture_report):
    report = fixture_report
    page = tmp_path / "dataloader_bound.html"
    page.write_text(html.render(report).replace("</body>", USER + "</body>"), encoding="utf-8")
    dom = open_in_browser(page, shots_dir(tmp_path) / "fixture-dataloader_bound.png", tmp_path)
    assert 'data-timeline="ready"' in dom           # the page's script ran to its end
    assert re.search(r'<div class="axis"><span style="left:[0-9.]+%">', dom)  # and drew the axis
    raw = re.search(r"data-user=\"([^\"]*)\"", dom).group(1)
    opened, busy, host, steps, names, whole, dragged, readout, steady, shown, linked, href = json.loads(unescape(raw))
    tl, w = report.timeline, report.timeline.steady[0]
    view = lambda s: [int(v) for v in s[0].split(",")]  # noqa: E731
    assert opened == [f"{w.start_ns},{w.end_ns}", "1"]  # opens on the steady state, in its own finer drawing
    assert re.fullmatch(r"busy [0-9.]+ % of the view", busy)
    assert float(busy.split()[1]) == pytest.approx(report.steady[0].busy_pct, abs=0.3)
    assert "copy" in host and re.fullmatch(r"\d+ in the view · median [0-9.]+ ms", steps) and names > 0
    assert whole == [f"{tl.start_ns},{tl.end_ns}", "0"]
    span = tl.end_ns - tl.start_ns
    assert view(dragged) == pytest.approx([tl.start_ns + span / 4, tl.start_ns + span / 2], abs=2 * tl.bin_ns)
    assert dragged[1] == "0" and "GPU 0 · NVIDIA H200:" in readout and "% busy" in readout
    assert steady == [f"{w.start_ns},{w.end_ns}", "1"]
    assert shown.startswith(f"showing {w.start_ns / 1e9:.3f} s to {w.end_ns / 1e9:.3f} s")
    a, b = (float(x) * 1e9 for x in href.removeprefix("#t=").split(","))
    assert view(linked) == pytest.approx([a, b], abs=2)


@needs_shared
@pytest.mark.skipif(not os.environ.get("NSYS_DIAGNOSE_SHOTS") or chromium() is None,
                    reason="set NSYS_DIAGNOSE_SHOTS=DIR (and install chromium) for the H200 screenshots")
@pytest.mark.parametrize("name", ["dataloader_bound", "launch_bound"])
def test_h200_screenshots(name, tmp_path):
    report = analyze(H200 / f"{name}.sqlite", rules=RULES, timeline=True)
    folder = shots_dir(tmp_path)
    page = folder / f"{name}.html"
    page.write_text(html.render(report), encoding="utf-8")
    assert len(page.read_bytes()) < 1_000_000  # two binnings of 2,000 bins, whatever the trace's size
    # the page as it opens, then the timeline alone (the sections above it hidden) as it opens and as
    # "whole window" shows it
    lone = folder / f"{name}-timeline.html"
    lone.write_text(page.read_text(encoding="utf-8").replace(
        "</head>", "<style>header, #budget, #findings { display: none; }</style></head>"), encoding="utf-8")
    for shown, fragment, suffix in ((page, "", ""), (lone, "", "-timeline"), (lone, "#whole", "-whole")):
        dom = open_in_browser(shown, folder / f"{name}{suffix}.png", tmp_path / f"run{suffix}", fragment)
        assert 'data-timeline="ready"' in dom
        w = next(w for w in report.timeline.steady if w.pid == report.steady[0].pid)
        expected = f"{report.timeline.start_ns},{report.timeline.end_ns}" if fragment else f"{w.start_ns},{w.end_ns}"
        assert f'data-view="{expected}"' in dom
