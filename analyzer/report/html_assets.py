"""The stylesheet and script inlined into every HTML report: no file, font or library is loaded
from anywhere, so a report opens offline, attached to a ticket or mailed. The page reads fully
without the script; the script adds zooming, labels for the visible range and a readout of the utilization under the
cursor."""

CSS = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --bg: #ffffff; --panel: #f6f7f9;
  --busy: #1b8a4a; --gap: #d1495b; --steady: #edf6f0; --startup: #eceef2; --accent: #2857a4;
  --error: #b3261e; --warning: #a35f00; --info: #3d6ea8; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1400px; margin: 0 auto; padding: 20px 28px 40px; }
h1 { font-size: 20px; margin: 0 0 6px; font-weight: 600; }
h2 { font-size: 17px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 0 0 8px; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.headline { font-size: 16px; font-weight: 600; margin: 8px 0; padding: 10px 14px; border-left: 4px solid var(--accent);
  background: var(--panel); }
.meta, .note { color: var(--muted); font-size: 13px; }
.coverage { margin: 8px 0; padding: 6px 14px; border-left: 4px solid var(--warning); font-size: 13.5px; }
.coverage-could-not-look { border-left-color: var(--error); } .coverage p { margin: 4px 0; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; font-size: 13px; }
.controls { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin: 6px 0 8px; }
button { font: inherit; font-size: 12.5px; padding: 2px 10px; border: 1px solid var(--line); background: var(--panel);
  border-radius: 4px; cursor: pointer; }
button:hover { border-color: var(--accent); }
button.on { border-color: var(--accent); background: #e6eefb; color: var(--accent); }
.range, .readout { font-size: 12.5px; color: var(--muted); font-variant-numeric: tabular-nums; }
.readout { min-height: 1.45em; }
.tl { display: grid; grid-template-columns: 250px minmax(0, 1fr); column-gap: 10px; row-gap: 3px;
  user-select: none; position: relative; }
.tl .label { font-size: 12px; color: var(--muted); white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  align-self: center; }
.tl .label b { color: var(--fg); font-weight: 600; }
.tl .sub { padding-left: 14px; }
.tl svg.track { display: block; width: 100%; background: var(--bg); cursor: crosshair; }
.tl .lane svg.track { height: 16px; }
.tl .steadyrow svg.track { height: 12px; }
.tl .device svg.track { height: 80px; border-bottom: 1px solid var(--line); background: #fbfbfc; }
.tl .device.proc svg.track { height: 36px; }
.axis { position: relative; height: 18px; border-bottom: 1px solid var(--line); font-size: 11px; color: var(--muted); }
.axis span { position: absolute; bottom: 2px; transform: translateX(-50%); white-space: nowrap;
  font-variant-numeric: tabular-nums; }
.axis span::after { content: ""; position: absolute; left: 50%; bottom: -3px; height: 4px; border-left: 1px solid var(--muted); }
.tl .layer { pointer-events: none; position: absolute; top: 0; bottom: 0; left: 260px; right: 0; }
.layer .sel { position: absolute; top: 0; bottom: 0; background: rgba(40, 87, 164, .15); border: 1px solid var(--accent);
  display: none; }
.layer .cursor { position: absolute; top: 0; bottom: 0; border-left: 1px solid rgba(29, 35, 48, .45); display: none; }
.util { fill: var(--busy); }
.gap { fill: #fbe7ea; }  /* opaque: over the steady state it reads as a gap, not as a grey mix */
.gapmark { fill: var(--gap); }
.steady-bg { fill: var(--steady); }
.steady { fill: #7fbf95; }
.startup { fill: #c3c8d2; }
/* NVTX names: ten light colours, none of them green (green is GPU busy); a range under a pixel
   wide stays visible through its stroke */
.n0 { --c: #9bbbe0; } .n1 { --c: #f6bd7f; } .n2 { --c: #c5aee0; } .n3 { --c: #ecd98a; } .n4 { --c: #f0a9b6; }
.n5 { --c: #b3c0cf; } .n6 { --c: #dcb48c; } .n7 { --c: #9fd3e0; } .n8 { --c: #d0d0d0; } .n9 { --c: #e3a58c; }
.lane rect { fill: var(--c); stroke: var(--c); stroke-width: 1px; vector-effect: non-scaling-stroke; }
.tl .lane { position: relative; }
.lane .names { position: absolute; inset: 0; pointer-events: none; overflow: hidden; }
.lane .names span { position: absolute; top: 0; height: 16px; line-height: 16px; font-size: 10.5px; color: #1d2330;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; padding: 0 3px; }
/* CUDA API kinds, on the host lanes and in the budget */
.k-launch { --c: #d1495b; } .k-sync { --c: #e09f1f; } .k-copy { --c: #1f78b4; } .k-allocation { --c: #7b4fa0; }
.k-module { --c: #8c5a3c; } .k-other { --c: #98a1ad; }
.hostlane path { fill: var(--c); }
.sw[class*=" k-"] { background: var(--c); }
.tl .hostlane svg.track { height: 40px; border-bottom: 1px solid var(--line); background: #fbfbfc; }
.tl .stepsrow svg.track { height: 12px; }
.tick { fill: none; stroke: #39404d; stroke-width: 1px; vector-effect: non-scaling-stroke; }
.tick.faint { stroke: rgba(29, 35, 48, .16); }
.tl .label .v { color: var(--fg); font-variant-numeric: tabular-nums; }
.sw[class*=" n"] { background: var(--c); }
.sw { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; border-radius: 2px; }
.legend { font-size: 12px; color: var(--muted); margin: 6px 0 0 260px; }
.legend span { margin-right: 12px; white-space: nowrap; }
.sw.gapsw { background: rgba(209, 73, 91, .35); border: 1px solid var(--gap); } .sw.steadysw { background: #7fbf95; }
.sw.startupsw { background: #c3c8d2; } .sw.busysw { background: var(--busy); }
.sw.ticksw { width: 2px; background: #39404d; border-radius: 0; }
/* the steady state and its budget */
.steady-card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; margin: 0 0 12px; }
.verdict { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
.bound { font-size: 12px; font-weight: 700; text-transform: uppercase; letter-spacing: .03em; color: #fff;
  padding: 1px 8px; border-radius: 3px; }
.bound.gpu-bound, .bound.kernel-bound { background: var(--busy); } .bound.host-bound { background: var(--error); }
.bound.copy-bound { background: #2f7f8a; }
.bound.mixed { background: var(--warning); }
.figs { display: flex; gap: 22px; flex-wrap: wrap; margin: 8px 0; }
.fig span { display: block; font-size: 11.5px; color: var(--muted); }
.fig b { font-size: 18px; font-weight: 600; font-variant-numeric: tabular-nums; }
.budgetbar { display: flex; height: 24px; border-radius: 3px; overflow: hidden; background: var(--panel);
  border: 1px solid var(--line); }
.budgetbar i { display: block; height: 100%; background: var(--c); min-width: 1px; }
.budgetbar i + i { border-left: 1px solid rgba(255, 255, 255, .7); }
.b-tc { --c: #136b38; } .b-fp32 { --c: #2f9a5a; } .b-fp64 { --c: #4f8a6a; } .b-mm { --c: #3d8f73; } .b-ew { --c: #77c291; } .b-ok { --c: #a9d9b8; }
.b-graph { --c: #4fae86; } .b-comm { --c: #2a8c8c; } .b-copies { --c: #4aa3c7; } .b-memsets { --c: #8cc7d9; }
.b-gpu { --c: #5fb07a; }
.b-launch { --c: #d1495b; } .b-sync { --c: #e09f1f; } .b-copy { --c: #1f78b4; } .b-alloc { --c: #7b4fa0; }
.b-module { --c: #8c5a3c; } .b-api { --c: #98a1ad; } .b-host { --c: #6d7fa8; } .b-untraced { --c: #b9c0cb; } .b-churn { --c: #b07aa1; }
.b-os { --c: #c49a6c; } .b-dispatch { --c: #dcdcdc; } .b-noqueue { --c: #d8cfc0; } .b-procs { --c: #e894a8; }
.b-idle { --c: #c8c8c8; }
.budgetbar i.idle, .sw.idle { background-image: repeating-linear-gradient(135deg, rgba(255, 255, 255, .45) 0 3px,
  transparent 3px 7px); }
.sw[class*=" b-"] { background-color: var(--c); }
table.slices td:first-child { white-space: nowrap; }
table.slices tr.rest td { color: var(--muted); }
a.show { margin-left: 10px; font-size: 12.5px; color: var(--accent); }
.claim { font-size: 13px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 16px; }
.charts .wide { grid-column: 1 / -1; }
.charts .wide .bars { grid-template-columns: minmax(0, 3fr) minmax(160px, 1fr) auto; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; background: var(--bg); }
.bars { display: grid; grid-template-columns: minmax(11em, 1.5fr) minmax(50px, 1fr) auto; gap: 4px 8px; align-items: center;
  font-size: 12.5px; }
.bars .name { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.bars .bar { height: 12px; background: var(--panel); border-radius: 2px; overflow: hidden; }
.bars .bar i { display: block; height: 100%; background: var(--accent); min-width: 1px; }
.bars .val { color: var(--muted); white-space: nowrap; font-variant-numeric: tabular-nums; text-align: right; }
.bars .bar i.launch { background: #d1495b; } .bars .bar i.sync { background: #edae49; } .bars .bar i.memcpy { background: #00798c; }
.bars .bar i.module, .bars .bar i.context { background: #9c755f; } .bars .bar i.alloc, .bars .bar i.free { background: #b07aa1; }
ol.findings { padding-left: 22px; }
ol.findings > li { margin-bottom: 14px; }
.badge { display: inline-block; font-size: 11px; font-weight: 600; text-transform: uppercase; letter-spacing: .03em;
  padding: 0 6px; border-radius: 3px; color: #fff; margin-right: 6px; }
.badge.error { background: var(--error); } .badge.warning { background: var(--warning); } .badge.info { background: var(--info); }
.stake { color: var(--muted); font-size: 13px; margin-left: 6px; }
.finding p { margin: 4px 0; }
.fix { background: #f1f6ff; border-left: 3px solid var(--accent); padding: 4px 10px; }
details { margin: 4px 0; }
summary { cursor: pointer; color: var(--accent); font-size: 13px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0 4px; max-width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
th { font-weight: 600; color: var(--muted); white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.text { overflow-wrap: anywhere; max-width: 60ch; }
.status-fired { color: var(--warning); font-weight: 600; } .status-error { color: var(--error); font-weight: 600; }
.status-skipped { color: var(--muted); }
.tablewrap { overflow-x: auto; }
footer { margin-top: 30px; color: var(--muted); font-size: 12px; }
@media print { .controls, .readout, nav { display: none; } }
"""

# Zoom: every track is an SVG whose x axis is bin numbers of its drawing (the whole window, or the
# focus window binned on its own); the view is a range of session-clock ns, so zooming rewrites
# viewBoxes and shows the drawing that covers the view at the finest resolution. Axis ticks,
# busy and API shares, step counts and NVTX names are recomputed for the visible range.
JS = """
(function () {
  "use strict";
  var root = document.getElementById("timeline");
  var dataEl = document.getElementById("timeline-data");
  if (!root || !dataEl) { return; }
  var d = JSON.parse(dataEl.textContent);
  var grid = root.querySelector(".tl");
  var tracks = Array.prototype.slice.call(root.querySelectorAll("svg.track"));
  var axis = root.querySelector(".axis");
  var sel = root.querySelector(".layer .sel");
  var cursor = root.querySelector(".layer .cursor");
  var readout = root.querySelector(".readout");
  var range = root.querySelector(".range");
  var lanes = Array.prototype.slice.call(root.querySelectorAll(".lane.nvtx"));
  var focus = d.res.length > 1 ? d.res[1] : null;
  var finest = Math.min.apply(null, d.res.map(function (r) { return r.bin; }));
  var view = d.view.slice();
  var cur = d.first;
  var drag = null;

  function ts(t) { return (t / 1e9).toFixed(3) + " s"; }
  function dur(t) {
    var units = [["s", 1e9], ["ms", 1e6], ["us", 1e3]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(t) >= units[i][1]) {
        var v = t / units[i][1];
        return (Math.abs(v) < 100 ? v.toPrecision(3) : Math.round(v).toLocaleString("en-US")) + " " + units[i][0];
      }
    }
    return Math.round(t) + " ns";
  }
  function pct(v) { return (v >= 10 || v === 0 ? v.toFixed(1) : v.toFixed(2)) + " %"; }
  function shown() {
    for (var i = 0; i < tracks.length; i++) {
      if (Number(tracks[i].getAttribute("data-r")) === cur) { return tracks[i]; }
    }
    return tracks[0];
  }
  function frac(ev) {
    var r = shown().getBoundingClientRect();
    return Math.min(1, Math.max(0, (ev.clientX - r.left) / Math.max(1, r.width)));
  }
  function tAt(f) { return view[0] + f * (view[1] - view[0]); }
  // the drawing for a view: the focus one while the view lies inside the focus window
  function pick() { return focus && view[0] >= focus.start && view[1] <= focus.end ? 1 : 0; }

  // mean of a per-mille-per-bin track over the view, partial bins weighted: a share in %
  function share(arr, res) {
    var a = Math.max(0, (view[0] - res.start) / res.bin), b = Math.min(res.bins, (view[1] - res.start) / res.bin);
    if (!arr || b <= a) { return 0; }
    var sum = 0;
    for (var i = Math.floor(a); i < Math.ceil(b); i++) { sum += (arr[i] || 0) * (Math.min(i + 1, b) - Math.max(i, a)); }
    return sum / (b - a) / 10;
  }
  function drawAxis() {
    var t0 = view[0], t1 = view[1], span = t1 - t0;
    var raw = span / 8, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 5, 10].some(function (m) { step = m * mag; return step >= raw; });
    var digits = Math.max(0, Math.min(9, -Math.floor(Math.log10(step / 1e9))));
    var html = [];
    for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      html.push('<span style="left:' + (100 * (t - t0) / span).toFixed(3) + '%">' + (t / 1e9).toFixed(digits) + " s</span>");
    }
    axis.innerHTML = html.join("");
  }
  function labels() {
    var res = d.res[cur];
    root.querySelectorAll("[data-dev]").forEach(function (el) {
      var t = d.devices[Number(el.getAttribute("data-dev"))];
      el.textContent = "busy " + pct(share(t.util[cur], res)) + " of the view";
    });
    root.querySelectorAll("[data-host]").forEach(function (el) {
      var h = d.host[Number(el.getAttribute("data-host"))], parts = [];
      Object.keys(h.kinds).forEach(function (k) {
        var v = share(h.kinds[k][cur], res);
        if (v >= 0.5) { parts.push([v, k + " " + pct(v)]); }
      });
      parts.sort(function (x, y) { return y[0] - x[0]; });
      el.textContent = parts.length ? parts.slice(0, 3).map(function (p) { return p[1]; }).join(" · ")
        : "no CUDA calls in the view";
    });
    root.querySelectorAll("[data-steps]").forEach(function (el) {
      var starts = d.steps[Number(el.getAttribute("data-steps"))].filter(function (t) { return t >= view[0] && t < view[1]; });
      var gaps = [];
      for (var i = 1; i < starts.length; i++) { gaps.push(starts[i] - starts[i - 1]); }
      gaps.sort(function (x, y) { return x - y; });
      var med = gaps.length ? " · median " + dur(gaps[Math.floor(gaps.length / 2)]) : "";
      el.textContent = starts.length + " in the view" + med;
    });
  }
  // NVTX names written on the ranges wide enough to hold them in the visible range
  function names() {
    var res = d.res[cur], span = view[1] - view[0];
    lanes.forEach(function (lane) {
      var box = lane.querySelector(".names"), svg = lane.querySelector('svg[data-r="' + cur + '"]');
      box.textContent = "";
      if (!svg) { return; }
      var width = svg.getBoundingClientRect().width, runs = [], px = span / Math.max(1, width);
      // ranges of one name that touch (consecutive steps) are labelled once, as a run
      svg.querySelectorAll("rect[data-k]").forEach(function (r) {
        var s = res.start + Number(r.getAttribute("x")) * res.bin;
        var e = s + Number(r.getAttribute("width")) * res.bin, k = r.getAttribute("data-k");
        if (e <= view[0] || s >= view[1]) { return; }
        var last = runs[runs.length - 1];
        if (last && last.k === k && s - last.e < 2 * px) { last.e = Math.max(last.e, e); }
        else { runs.push({k: k, s: s, e: e}); }
      });
      runs.forEach(function (run) {
        var a = Math.max(run.s, view[0]), b = Math.min(run.e, view[1]);
        if ((b - a) / px < 44) { return; }
        var el = document.createElement("span");
        el.style.left = (100 * (a - view[0]) / span).toFixed(3) + "%";
        el.style.width = (100 * (b - a) / span).toFixed(3) + "%";
        el.textContent = d.names[Number(run.k)];
        box.appendChild(el);
      });
    });
  }
  function apply() {
    cur = pick();
    grid.setAttribute("data-r", String(cur));
    grid.setAttribute("data-view", Math.round(view[0]) + "," + Math.round(view[1]));
    tracks.forEach(function (s) {
      var r = Number(s.getAttribute("data-r")), res = d.res[r];
      s.style.display = r === cur ? "" : "none";
      if (r === cur) {
        s.setAttribute("viewBox", ((view[0] - res.start) / res.bin) + " 0 " + ((view[1] - view[0]) / res.bin) + " 1");
      }
    });
    drawAxis();
    labels();
    names();
    range.textContent = "showing " + ts(view[0]) + " to " + ts(view[1]) + " (" + dur(view[1] - view[0]) + ")";
    root.querySelectorAll("button[data-zoom]").forEach(function (btn) {
      var w = d.windows[Number(btn.getAttribute("data-zoom"))];
      var on = btn.getAttribute("data-zoom") === "reset" ? view[0] <= d.start && view[1] >= d.end
        : !!w && Math.abs(w[0] - view[0]) < finest && Math.abs(w[1] - view[1]) < finest;
      btn.classList.toggle("on", on);
    });
  }
  function zoomTo(a, b) {
    var min = Math.min(d.end - d.start, 4 * finest);
    if (b - a < min) { var c = (a + b) / 2; a = c - min / 2; b = c + min / 2; }
    if (a < d.start) { b += d.start - a; a = d.start; }
    if (b > d.end) { a -= b - d.end; b = d.end; }
    view = [Math.max(d.start, a), Math.min(d.end, b)];
    apply();
  }
  function place(el, f0, f1) {
    el.style.left = (100 * Math.min(f0, f1)) + "%";
    el.style.width = (100 * Math.abs(f1 - f0)) + "%";
  }
  // a link may say where to look: #t=START,END (seconds), #steady (the leading steady state), #whole
  function go(hash, scroll) {
    var m = /^#t=([0-9.]+),([0-9.]+)$/.exec(decodeURIComponent(hash || ""));
    if (m) { zoomTo(Number(m[1]) * 1e9, Number(m[2]) * 1e9); }
    else if (hash === "#whole") { zoomTo(d.start, d.end); }
    else if (hash === "#steady" && d.windows.length) { var w = d.windows[d.lead || 0]; zoomTo(w[0], w[1]); }
    else { return false; }
    if (scroll) { root.scrollIntoView({block: "start"}); }
    return true;
  }

  if (!tracks.length) {  // nothing drawn over time (no GPU work, NVTX or steady state): the axis only
    apply();
    document.documentElement.setAttribute("data-timeline", "ready");
    return;
  }
  grid.addEventListener("mousedown", function (ev) {
    if (!ev.target.closest || !ev.target.closest("svg.track")) { return; }
    ev.preventDefault();
    drag = frac(ev);
    place(sel, drag, drag);
    sel.style.display = "block";
  });
  window.addEventListener("mouseup", function (ev) {
    if (drag === null) { return; }
    var f = frac(ev), f0 = drag;
    drag = null;
    sel.style.display = "none";
    var width = Math.abs(f - f0) * shown().getBoundingClientRect().width;
    if (width >= 4) { zoomTo(tAt(Math.min(f, f0)), tAt(Math.max(f, f0))); }
  });
  grid.addEventListener("mousemove", function (ev) {
    var f = frac(ev), t = tAt(f), res = d.res[cur];
    if (drag !== null) { place(sel, drag, f); }
    var bin = Math.floor((t - res.start) / res.bin);
    if (bin < 0 || bin >= res.bins) { return; }
    cursor.style.display = "block";
    cursor.style.left = (100 * f) + "%";
    var parts = [ts(t)];
    d.devices.forEach(function (x) { parts.push(x.label + ": " + ((x.util[cur][bin] || 0) / 10).toFixed(1) + " % busy"); });
    d.host.forEach(function (h) {
      var top = null;
      Object.keys(h.kinds).forEach(function (k) {
        var v = h.kinds[k][cur][bin] || 0;
        if (v > 0 && (!top || v > top[1])) { top = [k, v]; }
      });
      if (top) { parts.push(top[0] + " calls " + (top[1] / 10).toFixed(1) + " %"); }
    });
    readout.textContent = parts.join("  \\u00b7  ") + "  (bin of " + dur(res.bin) + ")";
  });
  grid.addEventListener("mouseleave", function () { cursor.style.display = "none"; });
  root.querySelectorAll("button[data-zoom]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var how = btn.getAttribute("data-zoom"), c = (view[0] + view[1]) / 2, w = view[1] - view[0];
      if (how === "reset") { zoomTo(d.start, d.end); }
      else if (how === "out") { zoomTo(c - w, c + w); }
      else if (how === "in") { zoomTo(c - w / 4, c + w / 4); }
      else {
        var win = d.windows[Number(how)];
        if (win) { zoomTo(win[0], win[1]); }
      }
    });
  });
  document.querySelectorAll('a[href^="#t="]').forEach(function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      go(a.getAttribute("href"), true);
      if (history.replaceState) { history.replaceState(null, "", a.getAttribute("href")); }
    });
  });
  window.addEventListener("hashchange", function () { go(location.hash, true); });
  window.addEventListener("resize", names);
  if (!go(location.hash, false)) { apply(); }
  document.documentElement.setAttribute("data-timeline", "ready");
})();
"""
