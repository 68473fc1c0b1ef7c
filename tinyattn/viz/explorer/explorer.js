// The tinyattn graph explorer: reads the graph JSON embedded in the page, draws it top to
// bottom in topological order (modules as boxes that open and close), and replays the
// backward pass in the engine's order. Plain ES2017, no libraries: it opens offline.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const data = JSON.parse(document.getElementById("tinyattn-graph").textContent);
  const nodes = data.nodes;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const rankOf = new Map(nodes.map((n, i) => [n.id, i]));  // listed inputs before consumers
  const steps = data.backward_steps || [];
  const inputsOf = new Map(), outputsOf = new Map();
  for (const [a, b] of data.edges) {
    if (!inputsOf.has(b)) inputsOf.set(b, []);
    if (!outputsOf.has(a)) outputsOf.set(a, []);
    inputsOf.get(b).push(a);
    outputsOf.get(a).push(b);
  }

  // ---------------------------------------------------------------- module groups
  // A group is a module path that some node names directly (a ModuleList, which runs no
  // forward of its own, is not a box); its parent is the nearest enclosing group.
  const groups = new Set();
  for (const n of nodes) if (n.module) groups.add(n.module);
  function groupChain(path) {          // the groups enclosing a node of this module, outermost first
    if (!path) return [];
    const parts = path.split("."), chain = [];
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join(".");
      if (groups.has(p)) chain.push(p);
    }
    return chain;
  }
  const chains = new Map(nodes.map((n) => [n.id, groupChain(n.module)]));
  const members = new Map();
  for (const n of nodes) for (const g of chains.get(n.id)) members.set(g, (members.get(g) || 0) + 1);
  const expanded = new Set();         // every graph opens collapsed by module: click to open

  function rep(id) {                    // what stands for a node on screen
    for (const g of chains.get(id)) if (!expanded.has(g)) return "g:" + g;
    return id;
  }

  // ---------------------------------------------------------------- state
  let stepIndex = 0, selected = null, matches = new Set(), timer = null;
  const view = { k: 1, x: 40, y: 20 };
  const svg = document.getElementById("graph"), port = document.getElementById("viewport");
  const details = document.getElementById("details");
  let boxes = new Map();               // rep id -> {x, y, w, h}

  // ---------------------------------------------------------------- layout
  function visibleGraph() {
    const order = new Map();           // rep -> first topological index of a member
    for (const n of nodes) {
      const r = rep(n.id);
      if (!order.has(r)) order.set(r, rankOf.get(n.id));
    }
    const edgeKeys = new Set(), edges = [];
    for (const [a, b] of data.edges) {
      const ra = rep(a), rb = rep(b), key = ra + ">" + rb;
      if (ra !== rb && !edgeKeys.has(key)) { edgeKeys.add(key); edges.push([ra, rb, a, b]); }
    }
    return { ids: [...order.keys()].sort((p, q) => order.get(p) - order.get(q)), order, edges };
  }

  function label(id) {
    if (id.startsWith("g:")) {
      const path = id.slice(2);
      return [path + "  \u25B8", members.get(path) + " nodes: click to open"];
    }
    const n = byId.get(id);
    const shape = "(" + n.shape.join(", ") + (n.shape.length === 1 ? ",)" : ")");
    return n.kind === "function" ? [n.name, shape + " " + n.dtype]
                                 : [n.name, n.op + " " + shape];
  }

  function layout(g) {
    const level = new Map(), preds = new Map();
    for (const id of g.ids) { level.set(id, 0); preds.set(id, []); }
    for (const [a, b] of g.edges) preds.get(b).push(a);
    // levels are longest paths (edges that point back, from a module used twice, are not
    // counted); walk the ids in order so a level is final before it is read
    for (const id of g.ids) for (const p of preds.get(id))
      if (g.order.get(p) < g.order.get(id)) level.set(id, Math.max(level.get(id), level.get(p) + 1));
    // a node with no inputs (a parameter, data) sits just above the first op that reads it,
    // not in one long top row
    const succ = new Map(g.ids.map((id) => [id, []]));
    for (const [a, b] of g.edges) succ.get(a).push(b);
    for (const id of g.ids) {
      if (preds.get(id).length || !succ.get(id).length) continue;
      level.set(id, Math.max(0, Math.min(...succ.get(id).map((b) => level.get(b))) - 1));
    }
    const rows = [];
    for (const id of g.ids) {
      const l = level.get(id);
      (rows[l] = rows[l] || []).push(id);
    }
    const x = new Map(), out = new Map();
    rows.forEach((row, l) => {
      if (!row) return;
      const bary = (id) => {
        const ps = preds.get(id).filter((p) => x.has(p));
        return ps.length ? ps.reduce((s, p) => s + x.get(p), 0) / ps.length : 0;
      };
      row.sort((p, q) => bary(p) - bary(q));
      const widths = row.map((id) => Math.max(90, 7 * Math.max(...label(id).map((s) => s.length)) + 16));
      const total = widths.reduce((s, w) => s + w + 18, -18);
      let left = -total / 2;
      row.forEach((id, i) => {
        const w = widths[i], isGroup = id.startsWith("g:");
        out.set(id, { x: left, y: l * 64, w, h: isGroup ? 40 : 34 });
        x.set(id, left + w / 2);
        left += w + 18;
      });
    });
    return out;
  }

  // ---------------------------------------------------------------- drawing
  function el(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function render() {
    const g = visibleGraph();
    boxes = layout(g);
    while (port.firstChild) port.removeChild(port.firstChild);
    const edgeLayer = el("g", { class: "edges" }, port), nodeLayer = el("g", { class: "nodes" }, port);
    const current = stepIndex > 0 ? steps[stepIndex - 1] : null;
    const sentTo = new Set(current ? current.sends.filter((s) => s.grad_summary).map((s) => rep(s.to)) : []);
    const currentRep = current ? rep(current.function) : null;
    for (const [ra, rb] of g.edges) {
      const a = boxes.get(ra), b = boxes.get(rb);
      const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y;
      const cls = rb === currentRep && sentTo.has(ra) ? "edge sent" : "edge";
      el("path", { class: cls, d: `M${x1},${y1} C${x1},${y1 + 28} ${x2},${y2 - 28} ${x2},${y2}`,
                   "data-from": ra, "data-to": rb }, edgeLayer);
    }
    const done = new Set(steps.slice(0, Math.max(stepIndex - 1, 0)).map((s) => rep(s.function)));
    for (const id of g.ids) {
      const b = boxes.get(id), isGroup = id.startsWith("g:");
      const classes = isGroup ? ["group"] : ["node", byId.get(id).kind, byId.get(id).op];
      if (id === selected) classes.push("selected");
      if (matches.has(id)) classes.push("match");
      if (id === currentRep) classes.push("current");
      else if (done.has(id)) classes.push("done");
      if (current && rep(current.received) === id && id !== currentRep) classes.push("received");
      const attrs = { class: classes.join(" "), transform: `translate(${b.x},${b.y})` };
      attrs[isGroup ? "data-module" : "data-node-id"] = isGroup ? id.slice(2) : id;
      const box = el("g", attrs, nodeLayer);
      el("rect", { width: b.w, height: b.h, rx: isGroup || byId.get(id).kind === "function" ? 8 : 2 }, box);
      const [top, sub] = label(id);
      el("text", { x: 8, y: 14 }, box).textContent = top;
      el("text", { x: 8, y: 28, class: "sub" }, box).textContent = sub;
      box.addEventListener("click", (ev) => { ev.stopPropagation(); isGroup ? open(id.slice(2)) : select(id); });
    }
    applyView();
    document.getElementById("step-label").textContent = `step ${stepIndex} / ${steps.length}`;
  }

  function applyView() {
    port.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
  }

  function fit() {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const b of boxes.values()) {
      x0 = Math.min(x0, b.x); y0 = Math.min(y0, b.y);
      x1 = Math.max(x1, b.x + b.w); y1 = Math.max(y1, b.y + b.h);
    }
    if (!isFinite(x0)) return;
    const W = svg.clientWidth || 800, H = svg.clientHeight || 600;
    view.k = Math.max(0.25, Math.min(1, (W - 40) / (x1 - x0), (H - 40) / (y1 - y0)));
    view.x = W / 2 - view.k * (x0 + x1) / 2;
    view.y = 20 - view.k * y0;
    applyView();
  }

  function center(id) {
    const b = boxes.get(rep(id));
    if (!b) return;
    const W = svg.clientWidth || 800, H = svg.clientHeight || 600;
    view.x = W / 2 - view.k * (b.x + b.w / 2);
    view.y = H / 2 - view.k * (b.y + b.h / 2);
    applyView();
  }

  // ---------------------------------------------------------------- details panel
  const fmt = (v) => (v === null || v === undefined ? "\u2014" : Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-3 && v !== 0)
    ? v.toExponential(3) : (+v.toPrecision(4)).toString());

  // An intermediate whose array no backward saved is freed in the forward (as in torch):
  // the page then has no value for it (docs/see_it.md).
  const FREED = "not kept: no backward needs it, so it was freed in the forward, as in " +
    "torch (hold the tensor in your program to see its value)";

  function summaryTable(title, s, missing) {
    if (!s) return `<p><b>${title}</b>: ${missing || "none"}</p>`;
    const bad = s.nonfinite ? `<tr><td>NaN/inf</td><td>${s.nonfinite}</td></tr>` : "";
    return `<p><b>${title}</b></p><table class="summary">` +
      ["min", "max", "mean", "norm"].map((k) => `<tr><td>${k}</td><td>${fmt(s[k])}</td></tr>`).join("") +
      bad + "</table>";
  }

  function heatmap(pic, diverging, caption) {
    const wrap = document.createElement("div");
    if (!pic) return wrap;
    const cell = Math.max(2, Math.min(14, Math.floor(320 / Math.max(pic.cols, 1))));
    const canvas = document.createElement("canvas");
    canvas.className = "heatmap";
    canvas.width = pic.cols * cell; canvas.height = pic.rows * cell;
    const ctx = canvas.getContext("2d");
    const finite = pic.values.filter((v) => v !== null);
    const lo = Math.min(...finite, 0), hi = Math.max(...finite, 0), span = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    pic.values.forEach((v, i) => {
      const r = Math.floor(i / pic.cols), c = i % pic.cols;
      let color = "#bbb";
      if (v !== null && (diverging || lo < 0)) {
        const t = Math.round(255 * (1 - Math.abs(v) / span));
        color = v >= 0 ? `rgb(255,${t},${t})` : `rgb(${t},${t},255)`;
      } else if (v !== null) {
        const t = Math.round(255 * (1 - v / (hi || 1)));
        color = `rgb(${t},${t},255)`;
      }
      ctx.fillStyle = color;
      ctx.fillRect(c * cell, r * cell, cell, cell);
    });
    const readout = document.createElement("div");
    readout.className = "legend";
    readout.textContent = `${caption} ${pic.where}: ${pic.rows} x ${pic.cols}, from ${fmt(lo)} to ${fmt(hi)}`;
    canvas.addEventListener("mousemove", (ev) => {
      const c = Math.floor(ev.offsetX / cell), r = Math.floor(ev.offsetY / cell);
      readout.textContent = `${caption} [${r}, ${c}] = ${fmt(pic.values[r * pic.cols + c])}`;
    });
    wrap.appendChild(canvas); wrap.appendChild(readout);
    return wrap;
  }

  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const link = (id) => `<a href="#" data-goto="${id}">${esc(byId.get(id).name)}</a>`;

  function showNode(id) {
    const n = byId.get(id);
    let h = `<h2>${esc(n.name)}</h2><table>` +
      `<tr><td>kind</td><td>${n.kind}</td></tr><tr><td>op</td><td>${esc(n.op)}</td></tr>` +
      `<tr><td>module</td><td>${n.module === null ? "\u2014" : esc(n.module || "(the model)")}</td></tr>` +
      `<tr><td>shape</td><td class="shape">(${n.shape.join(", ")})</td></tr>` +
      `<tr><td>dtype</td><td>${n.dtype}</td></tr></table>`;
    if (n.kind === "function") {
      h += `<p>inputs: ${(inputsOf.get(id) || []).map(link).join(", ")}<br>output: ` +
           `${(outputsOf.get(id) || []).map(link).join(", ")}</p>`;
      h += summaryTable("value of its output", n.value_summary, FREED);
      h += summaryTable("gradient of its output", n.grad_summary);
      if (n.derivation) {
        const href = data.docs ? data.docs + "/" + n.derivation.slice(5) : n.derivation;
        h += `<p>derivation: <a href="${esc(href)}" target="_blank">${esc(n.derivation)}</a></p>`;
      }
      h += `<pre class="formula">${esc(n.formula || "(no docstring)")}</pre>`;
      details.innerHTML = h;
    } else {
      h += summaryTable("value", n.value_summary, FREED);
      details.innerHTML = h;
      details.appendChild(heatmap(n.values, false, "value"));
      details.insertAdjacentHTML("beforeend", summaryTable("gradient", n.grad_summary));
      details.appendChild(heatmap(n.grad_values, true, "gradient"));
      if (n.uses > 1) details.insertAdjacentHTML("beforeend",
        `<p>Used by ${n.uses} ops: its gradient is the <b>sum of ${n.uses}</b> arrivals.</p>`);
    }
    if (stepIndex > 0) details.insertAdjacentHTML("afterbegin", stepText());
  }

  function stepText() {
    const s = steps[stepIndex - 1], fn = byId.get(s.function);
    const arrived = new Map();
    for (const t of steps.slice(0, stepIndex)) for (const send of t.sends)
      if (send.grad_summary) arrived.set(send.to, (arrived.get(send.to) || 0) + 1);
    const into = byId.get(s.received);
    let h = `<div class="step"><h2>step ${stepIndex} / ${steps.length}: ${esc(fn.name)}.backward</h2>` +
      `<p>received d loss / d ${link(s.received)}, norm ${fmt(s.grad_summary.norm)}` +
      (into.uses > 1 ? ` (the <b>sum of ${into.uses}</b> arrivals)` : "") + `</p><ul>`;
    for (const send of s.sends) {
      const to = byId.get(send.to);
      if (!send.grad_summary) { h += `<li>[${send.position}] ${link(send.to)}: none (needs no gradient)</li>`; continue; }
      const where = to.kind === "tensor" && (to.op === "leaf" || to.op === "parameter") ? "added into .grad" : "";
      const acc = to.uses > 1 ? `arrival ${arrived.get(send.to)} of ${to.uses} (summed)` : "";
      h += `<li>[${send.position}] to ${link(send.to)}: norm ${fmt(send.grad_summary.norm)} ${where} ${acc}</li>`;
    }
    return h + "</ul></div>";
  }

  details.addEventListener("click", (ev) => {
    const id = ev.target.getAttribute && ev.target.getAttribute("data-goto");
    if (id) { ev.preventDefault(); reveal(id); select(id); center(id); }
  });

  // ---------------------------------------------------------------- actions
  function reveal(id) { for (const g of chains.get(id)) expanded.add(g); }
  function select(id) { selected = id; render(); showNode(id); }
  function open(path) { expanded.add(path); render(); }
  function expandAll() { for (const g of groups) expanded.add(g); render(); fit(); }
  function collapseAll() { expanded.clear(); render(); fit(); }
  function goTo(i) {
    stepIndex = Math.max(0, Math.min(steps.length, i));
    if (stepIndex > 0) {
      const s = steps[stepIndex - 1];
      reveal(s.function);
      selected = s.function;
      render(); showNode(s.function); center(s.function);
    } else { render(); details.innerHTML = `<p class="hint">${esc(data.backward_note || "The forward graph.")}</p>`; }
  }
  function search(text) {
    const q = text.trim().toLowerCase();
    matches = new Set();
    if (q) for (const n of nodes)
      if ([n.name, n.op, n.module || ""].some((s) => String(s).toLowerCase().includes(q))) {
        reveal(n.id); matches.add(n.id);
      }
    render();
    const first = [...matches][0];
    if (first) { showNode(first); center(first); }
    return [...matches];
  }

  document.getElementById("expand-all").onclick = expandAll;
  document.getElementById("collapse-all").onclick = collapseAll;
  document.getElementById("fit").onclick = fit;
  document.getElementById("step").onclick = () => goTo(stepIndex + 1);
  document.getElementById("back").onclick = () => goTo(stepIndex - 1);
  document.getElementById("reset").onclick = () => goTo(0);
  document.getElementById("play").onclick = () => {
    if (timer) { clearInterval(timer); timer = null; return; }
    timer = setInterval(() => {
      if (stepIndex >= steps.length) { clearInterval(timer); timer = null; return; }
      goTo(stepIndex + 1);
    }, 500);
  };
  document.getElementById("search").addEventListener("keydown", (ev) => { if (ev.key === "Enter") search(ev.target.value); });
  if (!steps.length) for (const id of ["step", "back", "reset", "play"]) document.getElementById(id).disabled = true;

  // pan and zoom
  let drag = null;
  svg.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX - view.x, y: ev.clientY - view.y }; });
  window.addEventListener("mousemove", (ev) => { if (drag) { view.x = ev.clientX - drag.x; view.y = ev.clientY - drag.y; applyView(); } });
  window.addEventListener("mouseup", () => { drag = null; });
  svg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = svg.getBoundingClientRect(), px = ev.clientX - r.left, py = ev.clientY - r.top;
    const k = Math.max(0.05, Math.min(4, view.k * Math.exp(-ev.deltaY * 0.0015)));
    view.x = px - (px - view.x) * k / view.k; view.y = py - (py - view.y) * k / view.k; view.k = k;
    applyView();
  }, { passive: false });

  // what tests and the console can drive (docs/see_it.md#the-explorer-page-format)
  window.tinyattnExplorer = {
    data, expandAll, collapseAll, select, search, fit, center,
    step: () => goTo(stepIndex + 1), back: () => goTo(stepIndex - 1), reset: () => goTo(0),
    stepIndex: () => stepIndex,
    currentFunction: () => (stepIndex > 0 ? steps[stepIndex - 1].function : null),
    renderedNodeIds: () => [...port.querySelectorAll("g.node")].map((e) => e.getAttribute("data-node-id")),
    renderedGroups: () => [...port.querySelectorAll("g.group")].map((e) => e.getAttribute("data-module")),
  };
  render();
  fit();
  if (data.backward_note) details.insertAdjacentHTML("beforeend", `<p class="hint">${esc(data.backward_note)}</p>`);
  document.body.setAttribute("data-ready", "true");
})();
