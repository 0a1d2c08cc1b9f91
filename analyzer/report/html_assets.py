"""The stylesheet and script inlined into every HTML report: no file, font or library is loaded
from anywhere, so a report opens offline, attached to a ticket or mailed. The page reads fully
without the script; the script adds zooming and a readout of the utilization under the cursor."""

CSS = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --bg: #ffffff; --panel: #f6f7f9;
  --busy: #2f7d4f; --gap: #d1495b; --steady: #e4f2e8; --startup: #eceef2; --accent: #2857a4;
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
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; font-size: 13px; }
.controls { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin: 6px 0 8px; }
button { font: inherit; font-size: 12.5px; padding: 2px 10px; border: 1px solid var(--line); background: var(--panel);
  border-radius: 4px; cursor: pointer; }
button:hover { border-color: var(--accent); }
.range, .readout { font-size: 12.5px; color: var(--muted); font-variant-numeric: tabular-nums; }
.readout { min-height: 1.45em; }
.tl { display: grid; grid-template-columns: 230px minmax(0, 1fr); column-gap: 10px; row-gap: 3px;
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
.tl .layer { pointer-events: none; position: absolute; top: 0; bottom: 0; left: 240px; right: 0; }
.layer .sel { position: absolute; top: 0; bottom: 0; background: rgba(40, 87, 164, .15); border: 1px solid var(--accent);
  display: none; }
.layer .cursor { position: absolute; top: 0; bottom: 0; border-left: 1px solid rgba(29, 35, 48, .45); display: none; }
.util { fill: var(--busy); }
.gap { fill: var(--gap); fill-opacity: .16; stroke: var(--gap); stroke-width: 1px; stroke-opacity: .35;
  vector-effect: non-scaling-stroke; }
.steady-bg { fill: var(--steady); }
.steady { fill: #7fbf95; }
.startup { fill: #c3c8d2; }
/* NVTX names: ten colours; a range under a pixel wide stays visible through its stroke */
.n0 { --c: #4e79a7; } .n1 { --c: #f28e2b; } .n2 { --c: #59a14f; } .n3 { --c: #b07aa1; } .n4 { --c: #edc948; }
.n5 { --c: #76b7b2; } .n6 { --c: #ff9da7; } .n7 { --c: #9c755f; } .n8 { --c: #e15759; } .n9 { --c: #bab0ac; }
.lane rect { fill: var(--c); stroke: var(--c); stroke-width: 1px; vector-effect: non-scaling-stroke; }
.sw[class*=" n"] { background: var(--c); }
.sw { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; border-radius: 2px; }
.legend { font-size: 12px; color: var(--muted); margin: 6px 0 0 240px; }
.legend span { margin-right: 12px; white-space: nowrap; }
.sw.gapsw { background: rgba(209, 73, 91, .35); border: 1px solid var(--gap); } .sw.steadysw { background: #7fbf95; }
.sw.startupsw { background: #c3c8d2; } .sw.busysw { background: var(--busy); }
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

# Zoom: every track is an SVG whose x axis is bin numbers, so zooming only rewrites viewBoxes;
# the axis ticks are redrawn for the visible range. Drag across the tracks to zoom in.
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
  var view = [0, d.bins];
  var drag = null;

  function ns(bin) { return d.start + bin * d.bin; }
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
  function frac(ev) {
    var r = tracks[0].getBoundingClientRect();
    return Math.min(1, Math.max(0, (ev.clientX - r.left) / r.width));
  }
  function binAt(f) { return view[0] + f * (view[1] - view[0]); }

  function drawAxis() {
    var t0 = ns(view[0]), t1 = Math.min(ns(view[1]), d.end), span = t1 - t0;
    var raw = span / 8, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 5, 10].some(function (m) { step = m * mag; return step >= raw; });
    var digits = Math.max(0, Math.min(9, -Math.floor(Math.log10(step / 1e9))));
    var html = [];
    for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      var left = 100 * (t - t0) / span;
      html.push('<span style="left:' + left.toFixed(3) + '%">' + (t / 1e9).toFixed(digits) + " s</span>");
    }
    axis.innerHTML = html.join("");
  }
  function apply() {
    var vb = view[0] + " 0 " + (view[1] - view[0]) + " 1";
    tracks.forEach(function (s) { s.setAttribute("viewBox", vb); });
    drawAxis();
    var a = ns(view[0]), b = Math.min(ns(view[1]), d.end);
    range.textContent = "showing " + ts(a) + " to " + ts(b) + " (" + dur(b - a) + ")";
  }
  function zoomTo(a, b) {
    var min = Math.min(d.bins, 4);
    if (b - a < min) { var c = (a + b) / 2; a = c - min / 2; b = c + min / 2; }
    a = Math.max(0, a); b = Math.min(d.bins, b);
    view = [a, b];
    apply();
  }
  function place(el, f0, f1) {
    el.style.left = (100 * Math.min(f0, f1)) + "%";
    el.style.width = (100 * Math.abs(f1 - f0)) + "%";
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
    var width = Math.abs(f - f0) * tracks[0].getBoundingClientRect().width;
    if (width >= 4) { zoomTo(binAt(Math.min(f, f0)), binAt(Math.max(f, f0))); }
  });
  grid.addEventListener("mousemove", function (ev) {
    var f = frac(ev);
    if (drag !== null) { place(sel, drag, f); }
    var bin = Math.floor(binAt(f));
    if (bin < 0 || bin >= d.bins) { return; }
    cursor.style.display = "block";
    cursor.style.left = (100 * f) + "%";
    var parts = [ts(ns(binAt(f)))];
    d.tracks.forEach(function (t) { parts.push(t.label + ": " + (t.util[bin] / 10).toFixed(1) + " % busy"); });
    readout.textContent = parts.join("  \\u00b7  ") + "  (bin of " + dur(d.bin) + ")";
  });
  grid.addEventListener("mouseleave", function () { cursor.style.display = "none"; });
  root.querySelectorAll("button[data-zoom]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var how = btn.getAttribute("data-zoom");
      if (how === "reset") { zoomTo(0, d.bins); }
      else if (how === "out") {
        var c = (view[0] + view[1]) / 2, w = view[1] - view[0];
        zoomTo(c - w, c + w);
      } else if (how === "in") {
        var m = (view[0] + view[1]) / 2, h = (view[1] - view[0]) / 4;
        zoomTo(m - h, m + h);
      } else {
        var w2 = d.windows[Number(how)];
        if (w2) { zoomTo((w2[0] - d.start) / d.bin, (w2[1] - d.start) / d.bin); }
      }
    });
  });
  // a link may say where to look: #steady (the first steady-state window) or #t=START,END (seconds)
  var hash = decodeURIComponent(location.hash || "");
  var m = /^#t=([0-9.]+),([0-9.]+)$/.exec(hash);
  if (m) { zoomTo((Number(m[1]) * 1e9 - d.start) / d.bin, (Number(m[2]) * 1e9 - d.start) / d.bin); }
  else if (hash === "#steady" && d.windows.length) {
    zoomTo((d.windows[0][0] - d.start) / d.bin, (d.windows[0][1] - d.start) / d.bin);
  } else { apply(); }
  document.documentElement.setAttribute("data-timeline", "ready");
})();
"""
