"""The CSS and JavaScript inlined into the HTML partition report (no network needed).

The script reads the report's data from ``<script id="rk-data">`` and adds pan and
zoom (wheel, drag, buttons, ``f``/``+``/``-``), a tooltip on hover, a details panel on
click (an operator's placement, function, why, the answer of every target, source,
inputs and readers with their types, attributes; a value's kind, type and readers),
highlighting of a node's region and edges, region rows and outlines that zoom to
their region, a search box, and links: ``report.html#op=12`` opens with operator 12
selected, ``#val=3`` with value 3, ``#fn=NAME`` with a region. It listens once on the
drawing, once on the panel and once on the tables, however many nodes there are, and
hides the edge labels (then the node names) when they are too small to read. When
it has run, it sets ``data-ready="1"`` on ``<body>``.

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
main{display:flex;height:calc(100vh - 150px);min-height:420px;border-bottom:1px solid #e3e6ea}
.rk-io{color:#59616b}
#rk-below{padding:5px 18px;background:#f3f5f7;border-bottom:1px solid #e3e6ea;font-size:13px}
#rk-below a{color:#2b5d9b}
#rk-pane{position:relative;flex:1;overflow:hidden;background:#fbfbfc}
#rk-graph{width:100%;height:100%;display:block;cursor:grab;user-select:none}
#rk-graph.drag{cursor:grabbing}
#rk-outlines .ro{fill:none;stroke-width:5;stroke-linejoin:round}
#rk-outlines .rf{stroke:none}
#rk-outlines text{font:600 9px system-ui,sans-serif;pointer-events:none}
.rk-region{cursor:pointer}
#rk-bands path{fill:none;stroke-width:12;stroke-opacity:.3;stroke-linecap:round}
#rk-edges path,#rk-vedges path{fill:none;stroke:#a3a8af;stroke-width:1.1;
marker-end:url(#rk-arrow)}
#rk-vedges path{stroke:#c3c8ce}
#rk-edges path.hot,#rk-vedges path.hot{stroke:#1d2228;stroke-width:2}
#rk-labels text{font:8px ui-monospace,"DejaVu Sans Mono",Menlo,monospace;fill:#6b727c;
pointer-events:none}
#rk-graph.far #rk-labels{display:none}
#rk-graph.tiny text{display:none}
.val{cursor:pointer}
.val rect{fill:#ffffff;stroke:#8a8f96;stroke-width:.8}
.val text{font:10px ui-monospace,"DejaVu Sans Mono",Menlo,monospace;text-anchor:middle;
dominant-baseline:central;pointer-events:none;fill:#3b424b}
.val.input rect,.val.output rect{fill:#2f353d;stroke:none}
.val.input text,.val.output text{fill:#ffffff}
.val.constant rect{stroke-dasharray:2 2}
.val:hover rect{stroke:#000;stroke-width:1.6}
.val.sel rect{stroke:#000;stroke-width:2.6}
.node rect{stroke:rgba(0,0,0,.35);stroke-width:.8}
.node.comp rect{stroke-width:2;stroke-dasharray:4 2}
.node text{font:11px ui-monospace,"DejaVu Sans Mono",Menlo,monospace;text-anchor:middle;
dominant-baseline:central;pointer-events:none}
.node{cursor:pointer}
.node:hover rect{stroke:#000;stroke-width:1.6}
#rk-graph.focus .node,#rk-graph.focus .val{opacity:.28}
#rk-graph.focus #rk-edges path,#rk-graph.focus #rk-vedges path{opacity:.25}
#rk-graph.focus #rk-bands{opacity:.35}
#rk-graph.focus .node.on,#rk-graph.focus .val.on,#rk-graph.focus #rk-edges path.hot,
#rk-graph.focus #rk-vedges path.hot{opacity:1}
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
aside dd code,aside li code{word-break:break-all}
aside ul.rk-list{margin:2px 0 0;padding-left:16px}
aside .rk-none{color:#8a8f96}
section{padding:0 18px}
table{border-collapse:collapse;font-size:13px;margin:4px 0 10px}
th,td{border-bottom:1px solid #e3e6ea;padding:3px 9px;text-align:left;vertical-align:top}
th{background:#f3f5f7}
#rk-regions tbody tr,.rk-vals tbody tr{cursor:pointer}.rk-vals tbody tr:hover{background:#eef3fa}
#rk-regions tbody tr{cursor:pointer}#rk-regions tbody tr:hover{background:#eef3fa}
code{font-size:12px}
details summary{cursor:pointer;font-weight:600;margin:14px 0 6px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var began = window.performance ? performance.now() : 0;
  var data = JSON.parse(document.getElementById("rk-data").textContent);
  var svg = document.getElementById("rk-graph");
  var pane = document.getElementById("rk-pane");
  var tip = document.getElementById("rk-tip");
  var panel = document.getElementById("rk-details");
  var W = +svg.dataset.width, H = +svg.dataset.height;
  // every node and edge is indexed once; the drawing has no listener of its own
  var nodes = [], vals = [], edgesIn = [], edgesOut = [], vIn = [], vOut = [], region = {};
  var consumers = [], valueUsers = [];
  svg.querySelectorAll(".node").forEach(function (g) { nodes[+g.dataset.i] = g; });
  svg.querySelectorAll(".val").forEach(function (g) { vals[+g.dataset.v] = g; });
  data.ops.forEach(function (_, i) { edgesIn[i] = []; edgesOut[i] = []; consumers[i] = []; });
  data.values.forEach(function (_, k) { vIn[k] = []; vOut[k] = []; valueUsers[k] = []; });
  data.ops.forEach(function (op, i) {
    op[10].forEach(function (j) { consumers[j].push(i); });
    op[12].forEach(function (k) { valueUsers[k].push(i); });
  });
  svg.querySelectorAll("#rk-edges path,#rk-vedges path").forEach(function (p) {
    var d = p.dataset;
    if (d.s !== undefined) edgesOut[+d.s].push(p);
    if (d.v !== undefined) vOut[+d.v].push(p);
    if (d.t !== undefined) edgesIn[+d.t].push(p);
    if (d.o !== undefined) vIn[+d.o].push(p);
  });
  data.regions.forEach(function (r, k) { region[r[0]] = k; });
  var vb = {x: 0, y: 0, w: W, h: H};

  var main = document.querySelector("main"), head = document.querySelector("header");
  var below = document.getElementById("rk-below");
  function size() {  // the graph takes the screen but leaves the way to the tables in view
    var h = window.innerHeight - head.offsetHeight - (below ? below.offsetHeight : 0);
    main.style.height = Math.max(420, h) + "px";
  }
  size();
  function paneSize() {
    var r = svg.getBoundingClientRect();
    return [Math.max(r.width, 1), Math.max(r.height, 1)];
  }
  function apply() {
    svg.setAttribute("viewBox", vb.x + " " + vb.y + " " + vb.w + " " + vb.h);
    var k = paneSize()[0] / vb.w;  // levels of detail: no labels when they cannot be read
    svg.classList.toggle("far", k < 0.75);
    svg.classList.toggle("tiny", k < 0.3);
  }
  function show(x, y, w, h, maxScale) {
    var s = paneSize(), k = Math.min(s[0] / w, s[1] / h, maxScale);
    vb.w = s[0] / k; vb.h = s[1] / k;
    vb.x = x + w / 2 - vb.w / 2; vb.y = y + h / 2 - vb.h / 2;
    apply();
  }
  function fit() { show(0, -36, W, H + 36, 1.5); }
  function rectOf(g) { return g.firstChild; }
  function home() {
    var s = paneSize();
    var first = vals[0] || nodes[0];
    if (Math.min(s[0] / W, s[1] / H) >= 0.45 || !first) { fit(); return; }
    var k = Math.max(Math.min(1, s[0] / W), 0.45), r = rectOf(first);
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
    size(); var s = paneSize(); vb.h = vb.w * s[1] / s[0]; apply();
  });
  var pending = null;  // wheel events are merged into one zoom per frame
  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect(), f = Math.exp(e.deltaY * 0.0015);
    var x = e.clientX - r.left, y = e.clientY - r.top;
    if (pending) { pending[0] *= f; pending[1] = x; pending[2] = y; return; }
    pending = [f, x, y];
    window.requestAnimationFrame(function () {
      var p = pending; pending = null; zoom(p[0], p[1], p[2]);
    });
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
    return "#" + i + " " + opName(op) + (op[9] ? "  \u2190 " + op[9] : "") + "\n" + op[1] +
      "\n\u2192 " + op[2] + (op[3] ? " (" + op[3] + ")" : "") + "\n" + op[4];
  }
  function valueTip(k) {
    var v = data.values[k];
    return v[0] + " " + v[1] + "\n" + v[2] + (v[3] && v[3] !== v[1] ? "\n" + v[3] : "");
  }
  svg.addEventListener("mousemove", function (e) {
    var g = e.target.closest && e.target.closest(".node,.val");
    if (!g || drag) { tip.hidden = true; return; }
    var r = pane.getBoundingClientRect();
    tip.textContent = g.dataset.i !== undefined ? tipText(+g.dataset.i) : valueTip(+g.dataset.v);
    tip.hidden = false;
    var x = e.clientX - r.left + 14, y = e.clientY - r.top + 14;
    if (x + tip.offsetWidth > r.width) x = Math.max(0, e.clientX - r.left - tip.offsetWidth - 8);
    if (y + tip.offsetHeight > r.height) y = Math.max(0, e.clientY - r.top - tip.offsetHeight - 8);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  });
  svg.addEventListener("mouseleave", function () { tip.hidden = true; });

  var intro = panel.innerHTML;  // the usage note and the list of regions, from Python
  function clear() {
    if (panel.dataset.shows) { panel.innerHTML = intro; panel.dataset.shows = ""; }
    svg.classList.remove("focus");
    svg.querySelectorAll(".on,.sel").forEach(function (n) { n.classList.remove("on", "sel"); });
    svg.querySelectorAll(".hot").forEach(function (p) { p.classList.remove("hot"); });
  }
  function box(gs) {
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    gs.forEach(function (g) {
      var r = rectOf(g);
      var x = +r.getAttribute("x"), y = +r.getAttribute("y");
      x0 = Math.min(x0, x); y0 = Math.min(y0, y);
      x1 = Math.max(x1, x + +r.getAttribute("width"));
      y1 = Math.max(y1, y + +r.getAttribute("height"));
    });
    return [x0 - 30, y0 - 30, x1 - x0 + 60, y1 - y0 + 60];
  }
  function link(text, attr, value) {  // an item of the panel that selects what it names
    var a = el("a", text); a.href = "#"; a.dataset[attr] = String(value); return a;
  }
  function opLink(i) { return link("#" + i + " " + data.ops[i][0], "op", i); }
  function valLink(k) { return link(data.values[k][1], "val", k); }
  function listItem(ul, node, type) {
    var li = el("li"); li.appendChild(node);
    if (type) { li.appendChild(document.createTextNode(" ")); li.appendChild(el("code", type)); }
    ul.appendChild(li);
  }
  function start(title, shows) {
    panel.textContent = ""; panel.dataset.shows = shows;
    panel.appendChild(el("h3", title));
    var dl = el("dl"); panel.appendChild(dl);
    return function (k, v) {
      dl.appendChild(el("dt", k));
      var dd = el("dd");
      if (typeof v === "string") dd.textContent = v; else dd.appendChild(v);
      dl.appendChild(dd);
    };
  }
  function details(i) {
    var op = data.ops[i], item = start("#" + i + " " + opName(op), String(i));
    item("type", op[1]);
    item("placement", op[2]);
    item("function", op[3] || "- (host)");
    item("why", op[4]);
    data.targets.forEach(function (t) { item("target " + t, op[5][t] || ""); });
    if (op[7] !== "main") item("in function", op[7]);
    item("source", op[9] || "not recorded in the IR");
    var ins = el("ul", undefined, "rk-list");
    op[10].forEach(function (j, n) { listItem(ins, opLink(j), op[11][n]); });
    op[12].forEach(function (k) { listItem(ins, valLink(k), data.values[k][2]); });
    item("inputs", ins.children.length ? ins : el("span", "none", "rk-none"));
    var outs = el("ul", undefined, "rk-list");
    consumers[i].forEach(function (j) { listItem(outs, opLink(j)); });
    data.values.forEach(function (v, k) {
      if (v[0] === "output" && v[5].indexOf(i) >= 0) listItem(outs, valLink(k));
    });
    item("read by", outs.children.length ? outs : el("span", "none", "rk-none"));
    var keys = Object.keys(op[8]);
    if (keys.length) {
      var at = el("dl");
      keys.forEach(function (key) {
        at.appendChild(el("dt", key)); at.appendChild(el("dd", op[8][key]));
      });
      item("attributes", at);
    } else item("attributes", el("span", "none", "rk-none"));
  }
  function mark(ids, vids) {
    ids.forEach(function (k) { nodes[k].classList.add("on"); });
    (vids || []).forEach(function (k) { if (vals[k]) vals[k].classList.add("on"); });
  }
  function heat(paths) {
    paths.forEach(function (p) {
      var d = p.dataset;
      p.classList.add("hot");
      if (d.s !== undefined) nodes[+d.s].classList.add("on");
      if (d.t !== undefined) nodes[+d.t].classList.add("on");
      if (d.v !== undefined) vals[+d.v].classList.add("on");
      if (d.o !== undefined) vals[+d.o].classList.add("on");
    });
  }
  function select(i, center) {
    clear();
    svg.classList.add("focus");
    var op = data.ops[i], ids = [i];
    if (op[3] && region[op[3]] !== undefined) ids = data.regions[region[op[3]]][2];
    mark(ids);
    heat(edgesIn[i].concat(edgesOut[i]));
    nodes[i].classList.add("sel");
    details(i);
    if (center) { var b = box([nodes[i]]); show(b[0], b[1], b[2], b[3], 1.2); }
  }
  function selectValue(k, center) {
    clear();
    svg.classList.add("focus");
    var v = data.values[k], item = start(v[1], "val=" + k);
    item("kind", v[0]);
    item("type", v[2]);
    if (v[3] && v[3] !== v[1]) item(v[0] === "constant" ? "value" : "shape", v[3]);
    if (v[4] !== "main") item("in function", v[4]);
    var ul = el("ul", undefined, "rk-list");
    if (v[0] === "output") {
      v[5].forEach(function (j) { listItem(ul, opLink(j), data.ops[j][1]); });
      v[6].forEach(function (j) { listItem(ul, valLink(j)); });
      item("the result of", ul);
    } else {
      valueUsers[k].forEach(function (j) { listItem(ul, opLink(j)); });
      data.values.forEach(function (o, m) {
        if (o[0] === "output" && o[6].indexOf(k) >= 0) listItem(ul, valLink(m));
      });
      item("read by", ul.children.length ? ul : el("span", "none", "rk-none"));
    }
    heat(vIn[k].concat(vOut[k]));
    vals[k].classList.add("on", "sel");
    if (center) { var b = box([vals[k]]); show(b[0], b[1], b[2], b[3], 1.2); }
  }
  function regionDetails(k) {
    var r = data.regions[k], item = start(r[0], "fn=" + r[0]);
    item("target", r[1]);
    item("operators", r[2].length + ": " + r[2].map(function (i) {
      return "#" + i + " " + data.ops[i][0];
    }).join(", "));
    item("MACs", r[3]);
    item("parameters", r[4]);
  }
  function showRegion(k) {
    var r = data.regions[k];
    clear(); svg.classList.add("focus");
    mark(r[2]);
    var inside = {};
    r[2].forEach(function (i) { inside[i] = 1; });
    svg.querySelectorAll('.rk-region[data-region="' + k + '"]').forEach(function (g) {
      g.classList.add("on");
    });
    r[2].forEach(function (i) {
      data.ops[i][12].forEach(function (v) {
        if (valueUsers[v].every(function (j) { return inside[j]; })) vals[v].classList.add("on");
      });
    });
    regionDetails(k);
    var b = box(r[2].map(function (i) { return nodes[i]; })); show(b[0], b[1], b[2], b[3], 1.2);
  }
  svg.addEventListener("click", function (e) {
    if (moved || !e.target.closest) return;
    var g = e.target.closest(".node,.val,.rk-region");
    if (!g) clear();
    else if (g.dataset.i !== undefined) select(+g.dataset.i, false);
    else if (g.dataset.v !== undefined) selectValue(+g.dataset.v, false);
    else showRegion(+g.dataset.region);
  });
  panel.addEventListener("click", function (e) {  // one listener for the lists it shows
    var a = e.target.closest && e.target.closest("[data-op],[data-val],[data-region]");
    if (!a) return;
    e.preventDefault();
    if (a.dataset.op !== undefined) select(+a.dataset.op, true);
    else if (a.dataset.val !== undefined) selectValue(+a.dataset.val, true);
    else showRegion(+a.dataset.region);
  });
  document.addEventListener("click", function (e) {  // the tables below the graph
    var tr = e.target.closest && e.target.closest("#rk-regions tbody tr,.rk-vals tbody tr");
    if (!tr) return;
    if (tr.dataset.region !== undefined) showRegion(+tr.dataset.region);
    else selectValue(+tr.dataset.v, true);
    pane.scrollIntoView({block: "nearest"});
  });
  function fromHash() {  // #op=12 selects operator 12, #fn=NAME a region, #val=3 a value
    var m = /^#(op|fn|val)=(.+)$/.exec(decodeURIComponent(location.hash));
    if (!m) return;
    if (m[1] === "op" && data.ops[+m[2]]) select(+m[2], true);
    if (m[1] === "val" && data.values[+m[2]]) selectValue(+m[2], true);
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
            (op[9] || "").toLowerCase().indexOf(q) >= 0 || String(i) === q) hits.push(i);
      });
      data.values.forEach(function (v, k) {
        if (v[1].toLowerCase().indexOf(q) >= 0) hits.push(-1 - k);
      });
    }
    if (hits.length) {
      var h = hits[hit % hits.length]; hit += 1;
      if (h >= 0) select(h, true); else selectValue(-1 - h, true);
    }
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
  var kinds = {};
  data.values.forEach(function (v) { kinds[v[0]] = (kinds[v[0]] || 0) + 1; });
  function count(n, word) { return (n || 0) + " " + word + (n === 1 ? "" : "s"); }
  panel.insertBefore(el("p", data.ops.length + " operators drawn, " + data.regions.length +
    " partitioned functions; " + count(kinds.input, "input") + ", " +
    count(kinds.weight, "weight") + ", " + count(kinds.output, "output") + ".", "rk-count"),
    panel.children[1] || null);
  intro = panel.innerHTML;
  fromHash();
  if (window.performance) {  // how long the script took, for the tests of large graphs
    document.body.dataset.scriptMs = String(Math.round(performance.now() - began));
  }
  document.body.dataset.ready = "1";
})();
"""
