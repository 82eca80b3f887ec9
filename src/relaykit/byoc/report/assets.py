"""The CSS and JavaScript inlined into the HTML partition report (no network needed).

The script reads the report's data from ``<script id="rk-data">`` and adds pan and
zoom (wheel, drag, buttons, ``f``/``+``/``-``), a tooltip on hover, a details panel on
click (placement, function, why, the answer of every target), highlighting of a
node's region and edges, region rows that zoom to their region, a search box, and
links: ``report.html#op=12`` opens with operator 12 selected, ``#fn=NAME`` with a region.
When it has run, it sets ``data-ready="1"`` on ``<body>``.

>>> "rk-graph" in SCRIPT and "rk-pane" in STYLE
True
"""

from __future__ import annotations

__all__ = ["STYLE", "SCRIPT"]

STYLE = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2228;
background:#ffffff}
header{padding:10px 18px 6px;border-bottom:1px solid #e3e6ea}
h1{font-size:19px;margin:0 0 2px}
h2{font-size:16px;margin:18px 0 6px}h3{font-size:14px;margin:12px 0 4px}
.rk-sub{margin:0;color:#59616b}
.rk-legend{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;gap:14px}
.rk-legend li{display:flex;align-items:center;gap:6px}
.rk-sw{display:inline-block;width:13px;height:13px;border-radius:3px;margin-right:5px;
vertical-align:-2px;border:1px solid rgba(0,0,0,.25)}
main{display:flex;height:calc(100vh - 92px);min-height:420px;border-bottom:1px solid #e3e6ea}
#rk-pane{position:relative;flex:1;overflow:hidden;background:#fbfbfc}
#rk-graph{width:100%;height:100%;display:block;cursor:grab;user-select:none}
#rk-graph.drag{cursor:grabbing}
#rk-bands path{fill:none;stroke-width:12;stroke-opacity:.3;stroke-linecap:round}
#rk-edges path{fill:none;stroke:#a3a8af;stroke-width:1.1;marker-end:url(#rk-arrow)}
#rk-edges path.hot{stroke:#1d2228;stroke-width:2}
.node rect{stroke:rgba(0,0,0,.35);stroke-width:.8}
.node.comp rect{stroke-width:2;stroke-dasharray:4 2}
.node text{font:11px ui-monospace,"DejaVu Sans Mono",Menlo,monospace;text-anchor:middle;
dominant-baseline:central;pointer-events:none}
.node{cursor:pointer}
.node:hover rect{stroke:#000;stroke-width:1.6}
#rk-graph.focus .node{opacity:.28}#rk-graph.focus #rk-edges path{opacity:.25}
#rk-graph.focus #rk-bands{opacity:.35}
#rk-graph.focus .node.on,#rk-graph.focus #rk-edges path.hot{opacity:1}
.node.sel rect{stroke:#000;stroke-width:2.6}
#rk-tools{position:absolute;top:8px;left:8px;display:flex;gap:4px;z-index:2}
#rk-tools button,#rk-tools input{font:13px system-ui,sans-serif;border:1px solid #c9ced4;
background:#fff;border-radius:4px;padding:3px 9px}
#rk-tools input{width:220px}
#rk-tip{position:absolute;z-index:3;max-width:420px;background:#1d2228;color:#fff;
padding:6px 9px;border-radius:5px;font-size:12px;pointer-events:none;white-space:pre-wrap}
aside#rk-details{width:340px;overflow:auto;padding:10px 14px;border-left:1px solid #e3e6ea;
font-size:13px}
#rk-reglist{list-style:none;padding:0;margin:0}#rk-reglist li{cursor:pointer;padding:1px 0}
#rk-reglist li:hover{background:#eef3fa}
aside dl{margin:0}aside dt{font-weight:600;margin-top:6px}aside dd{margin:0 0 0 10px}
section{padding:0 18px}
table{border-collapse:collapse;font-size:13px;margin:4px 0 10px}
th,td{border-bottom:1px solid #e3e6ea;padding:3px 9px;text-align:left;vertical-align:top}
th{background:#f3f5f7}
#rk-regions tbody tr{cursor:pointer}#rk-regions tbody tr:hover{background:#eef3fa}
code{font-size:12px}
details summary{cursor:pointer;font-weight:600;margin:14px 0 6px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rk-data").textContent);
  var svg = document.getElementById("rk-graph");
  var pane = document.getElementById("rk-pane");
  var tip = document.getElementById("rk-tip");
  var panel = document.getElementById("rk-details");
  var W = +svg.dataset.width, H = +svg.dataset.height;
  var nodes = [], edgesIn = [], edgesOut = [], region = {};
  svg.querySelectorAll(".node").forEach(function (g) { nodes[+g.dataset.i] = g; });
  data.ops.forEach(function (_, i) { edgesIn[i] = []; edgesOut[i] = []; });
  svg.querySelectorAll("#rk-edges path").forEach(function (p) {
    edgesIn[+p.dataset.t].push(p); edgesOut[+p.dataset.s].push(p);
  });
  data.regions.forEach(function (r, k) { region[r[0]] = k; });
  var vb = {x: 0, y: 0, w: W, h: H};

  function paneSize() {
    var r = svg.getBoundingClientRect();
    return [Math.max(r.width, 1), Math.max(r.height, 1)];
  }
  function apply() {
    svg.setAttribute("viewBox", vb.x + " " + vb.y + " " + vb.w + " " + vb.h);
  }
  function show(x, y, w, h, maxScale) {
    var s = paneSize(), k = Math.min(s[0] / w, s[1] / h, maxScale);
    vb.w = s[0] / k; vb.h = s[1] / k;
    vb.x = x + w / 2 - vb.w / 2; vb.y = y + h / 2 - vb.h / 2;
    apply();
  }
  function fit() { show(0, -36, W, H + 36, 1.5); }
  function home() {
    var s = paneSize();
    if (Math.min(s[0] / W, s[1] / H) >= 0.45 || !nodes.length) { fit(); return; }
    var k = Math.max(Math.min(1, s[0] / W), 0.45), r = nodes[0].firstChild;
    var cx = +r.getAttribute("x") + +r.getAttribute("width") / 2;
    vb.w = s[0] / k; vb.h = s[1] / k;
    vb.x = vb.w >= W ? (W - vb.w) / 2 : Math.max(0, Math.min(W - vb.w, cx - vb.w / 2));
    vb.y = -36 / k; apply();
  }
  function zoom(f, cx, cy) {
    var s = paneSize();
    var px = vb.x + (cx / s[0]) * vb.w, py = vb.y + (cy / s[1]) * vb.h;
    vb.w *= f; vb.h *= f;
    vb.x = px - (cx / s[0]) * vb.w; vb.y = py - (cy / s[1]) * vb.h;
    apply();
  }
  svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
  home();
  window.addEventListener("resize", function () {
    var s = paneSize(); vb.h = vb.w * s[1] / s[0]; apply();
  });
  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect();
    zoom(Math.exp(e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, {passive: false});
  var drag = null, moved = false;
  svg.addEventListener("pointerdown", function (e) {
    drag = [e.clientX, e.clientY]; moved = false; svg.classList.add("drag");
  });
  window.addEventListener("pointermove", function (e) {
    if (!drag) return;
    var s = paneSize(), dx = e.clientX - drag[0], dy = e.clientY - drag[1];
    if (Math.abs(dx) + Math.abs(dy) > 2) moved = true;
    vb.x -= dx * vb.w / s[0]; vb.y -= dy * vb.h / s[1]; drag = [e.clientX, e.clientY]; apply();
  });
  window.addEventListener("pointerup", function () { drag = null; svg.classList.remove("drag"); });

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function opName(op) { return op[6] ? op[0] + " [" + op[6] + "]" : op[0]; }
  function tipText(i) {
    var op = data.ops[i];
    return "#" + i + " " + opName(op) + "\n" + op[1] + "\n\u2192 " + op[2] +
      (op[3] ? " (" + op[3] + ")" : "") + "\n" + op[4];
  }
  svg.addEventListener("mousemove", function (e) {
    var g = e.target.closest && e.target.closest(".node");
    if (!g || drag) { tip.hidden = true; return; }
    var r = pane.getBoundingClientRect();
    tip.textContent = tipText(+g.dataset.i); tip.hidden = false;
    var x = e.clientX - r.left + 14, y = e.clientY - r.top + 14;
    if (x + tip.offsetWidth > r.width) x = Math.max(0, e.clientX - r.left - tip.offsetWidth - 8);
    if (y + tip.offsetHeight > r.height) y = Math.max(0, e.clientY - r.top - tip.offsetHeight - 8);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  });
  svg.addEventListener("mouseleave", function () { tip.hidden = true; });

  var intro = panel.innerHTML;  // the usage note and the list of regions, from Python
  function clear() {
    if (panel.dataset.shows) { panel.innerHTML = intro; panel.dataset.shows = ""; listen(); }
    svg.classList.remove("focus");
    svg.querySelectorAll(".on,.sel").forEach(function (n) { n.classList.remove("on", "sel"); });
    svg.querySelectorAll(".hot").forEach(function (p) { p.classList.remove("hot"); });
  }
  function box(ids) {
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    ids.forEach(function (i) {
      var r = nodes[i].firstChild;
      var x = +r.getAttribute("x"), y = +r.getAttribute("y");
      x0 = Math.min(x0, x); y0 = Math.min(y0, y);
      x1 = Math.max(x1, x + +r.getAttribute("width"));
      y1 = Math.max(y1, y + +r.getAttribute("height"));
    });
    return [x0 - 30, y0 - 30, x1 - x0 + 60, y1 - y0 + 60];
  }
  function details(i) {
    var op = data.ops[i];
    panel.textContent = "";
    panel.dataset.shows = String(i);
    panel.appendChild(el("h3", "#" + i + " " + opName(op)));
    var dl = el("dl");
    function item(k, v) { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", v)); }
    item("type", op[1]);
    item("placement", op[2]);
    item("function", op[3] || "- (host)");
    item("why", op[4]);
    data.targets.forEach(function (t) { item("target " + t, op[5][t] || ""); });
    if (op[7] !== "main") item("in function", op[7]);
    panel.appendChild(dl);
  }
  function select(i, center) {
    clear();
    svg.classList.add("focus");
    var op = data.ops[i], ids = [i];
    if (op[3] && region[op[3]] !== undefined) ids = data.regions[region[op[3]]][2];
    ids.forEach(function (k) { nodes[k].classList.add("on"); });
    edgesIn[i].concat(edgesOut[i]).forEach(function (p) {
      p.classList.add("hot");
      nodes[+p.dataset.s].classList.add("on"); nodes[+p.dataset.t].classList.add("on");
    });
    nodes[i].classList.add("sel");
    details(i);
    if (center) { var b = box([i]); show(b[0], b[1], b[2], b[3], 1.2); }
  }
  svg.addEventListener("click", function (e) {
    if (moved) return;
    var g = e.target.closest && e.target.closest(".node");
    if (g) select(+g.dataset.i, false); else clear();
  });
  function regionDetails(k) {
    var r = data.regions[k];
    panel.textContent = "";
    panel.dataset.shows = "fn=" + r[0];
    panel.appendChild(el("h3", r[0]));
    var dl = el("dl");
    function item(key, v) { dl.appendChild(el("dt", key)); dl.appendChild(el("dd", v)); }
    item("target", r[1]);
    item("operators", r[2].length + ": " + r[2].map(function (i) {
      return "#" + i + " " + data.ops[i][0];
    }).join(", "));
    item("MACs", r[3]);
    item("parameters", r[4]);
    panel.appendChild(dl);
  }
  function showRegion(k) {
    var r = data.regions[k];
    clear(); svg.classList.add("focus");
    r[2].forEach(function (i) { nodes[i].classList.add("on"); });
    regionDetails(k);
    var b = box(r[2]); show(b[0], b[1], b[2], b[3], 1.2);
  }
  document.querySelectorAll("#rk-regions tbody tr").forEach(function (tr) {
    tr.addEventListener("click", function () {
      showRegion(+tr.dataset.region);
      pane.scrollIntoView({block: "nearest"});
    });
  });
  function listen() {
    panel.querySelectorAll("#rk-reglist li").forEach(function (li) {
      li.addEventListener("click", function () { showRegion(+li.dataset.region); });
    });
  }
  listen();
  function fromHash() {  // #op=12 selects operator 12, #fn=NAME a region
    var m = /^#(op|fn)=(.+)$/.exec(decodeURIComponent(location.hash));
    if (!m) return;
    if (m[1] === "op" && data.ops[+m[2]]) select(+m[2], true);
    if (m[1] === "fn" && region[m[2]] !== undefined) showRegion(region[m[2]]);
  }
  window.addEventListener("hashchange", fromHash);
  var hits = [], hit = 0, last = "";
  document.getElementById("rk-find").addEventListener("keydown", function (e) {
    if (e.key !== "Enter") return;
    var q = e.target.value.trim().toLowerCase();
    if (!q) return;
    if (q !== last) {
      last = q; hit = 0; hits = [];
      data.ops.forEach(function (op, i) {
        if (op[0].toLowerCase().indexOf(q) >= 0 || (op[3] || "").toLowerCase().indexOf(q) >= 0 ||
            String(i) === q) hits.push(i);
      });
    }
    if (hits.length) { select(hits[hit % hits.length], true); hit += 1; }
  });
  document.getElementById("rk-tools").addEventListener("click", function (e) {
    var act = e.target.dataset && e.target.dataset.act, s = paneSize();
    if (act === "fit") fit();
    if (act === "in") zoom(1 / 1.3, s[0] / 2, s[1] / 2);
    if (act === "out") zoom(1.3, s[0] / 2, s[1] / 2);
  });
  window.addEventListener("keydown", function (e) {
    if (e.target.tagName === "INPUT") return;
    var s = paneSize();
    if (e.key === "f") fit();
    if (e.key === "+" || e.key === "=") zoom(1 / 1.3, s[0] / 2, s[1] / 2);
    if (e.key === "-") zoom(1.3, s[0] / 2, s[1] / 2);
    if (e.key === "Escape") clear();
  });
  panel.insertBefore(el("p", data.ops.length + " operators drawn, " + data.regions.length +
    " partitioned functions.", "rk-count"), panel.children[1] || null);
  intro = panel.innerHTML;
  fromHash();
  document.body.dataset.ready = "1";
})();
"""
