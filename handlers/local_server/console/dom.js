// DOM helpers: every string reaches the page as a text node; nothing here ever assigns HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setAttrs(node, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.setAttribute("class", value);
    else if (name === "width" && node instanceof HTMLElement && name in node.style) node.style.width = value;
    else if (/^on/i.test(name) || name === "style") throw new Error(`refused attribute ${name}`);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  return node;
}

/** An HTML element with attributes (no handlers, no inline style) and text or element children. */
export function el(tag, attrs, ...children) {
  return append(setAttrs(document.createElement(tag), attrs), children);
}

/** An SVG element. */
export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (/^on/i.test(name) || name === "style" || name === "href") throw new Error(`refused attribute ${name}`);
    node.setAttribute(name, String(value));
  }
  return append(node, children);
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

export function $(id) {
  return document.getElementById(id);
}

const ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'", "&#39;": "'" };
const ENTITY = /&(?:amp|lt|gt|quot|#x27|#39);/g;

function unescaped(text) {
  // Escaped text holds no raw < or >, and no & that does not start one of the escapes html.escape makes.
  if (/[<>]/.test(text) || text.replace(ENTITY, "").includes("&")) return null;
  return text.replace(ENTITY, (m) => ENTITIES[m]);
}

/** A snippet (HTML-escaped text with <mark>…</mark>) rebuilt as text nodes and <mark> elements. Anything
 *  else in it (another tag, a stray &) and the whole snippet is shown as the literal text it is. */
export function snippetNodes(snippet) {
  const frag = document.createDocumentFragment();
  const parts = String(snippet).split(/(<mark>|<\/mark>)/);
  const pieces = [];
  let marked = false;
  for (const part of parts) {
    if (part === "<mark>" || part === "</mark>") {
      if (marked === (part === "<mark>")) return fallback(frag, snippet);
      marked = !marked;
      continue;
    }
    const text = unescaped(part);
    if (text === null) return fallback(frag, snippet);
    if (text) pieces.push([marked, text]);
  }
  if (marked) return fallback(frag, snippet);
  for (const [isMark, text] of pieces) frag.append(isMark ? el("mark", {}, text) : document.createTextNode(text));
  return frag;
}

function fallback(frag, snippet) {
  frag.replaceChildren(document.createTextNode(String(snippet)));
  return frag;
}

/** A horizontal meter: `value / max` filled with the class `kind`. */
export function meter(value, max, kind) {
  const share = max > 0 && value !== null && value !== undefined ? Math.max(0, Math.min(1, value / max)) : 0;
  return el("div", { class: "meter", title: value === null || value === undefined ? "none" : String(value) },
    el("div", { class: kind, width: `${(share * 100).toFixed(1)}%` }));
}

export function fmt(value, digits = 3) {
  if (value === null || value === undefined) return "–";
  return typeof value === "number" ? value.toFixed(digits) : String(value);
}

export function chip(text, kind) {
  return el("span", { class: kind ? `chip ${kind}` : "chip" }, text);
}

/** A line chart: series [{name, points: [[x, y], …]}], x and y numbers; drawn as inline SVG. */
export function lineChart(series, { width = 560, height = 200, yLabel = "" } = {}) {
  const pad = { l: 44, r: 120, t: 12, b: 24 };
  const all = series.flatMap((s) => s.points);
  const chart = svg("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  if (!all.length) return append(chart, [svg("text", { x: 10, y: 20 }, "no data")]);
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const y1 = Math.max(...ys, 0) || 1;
  const X = (x) => pad.l + (x1 === x0 ? 0.5 : (x - x0) / (x1 - x0)) * (width - pad.l - pad.r);
  const Y = (y) => height - pad.b - (y / y1) * (height - pad.t - pad.b);
  chart.append(svg("line", { class: "axis", x1: pad.l, y1: Y(0), x2: width - pad.r, y2: Y(0) }));
  chart.append(svg("line", { class: "axis", x1: pad.l, y1: pad.t, x2: pad.l, y2: Y(0) }));
  chart.append(svg("text", { x: 2, y: pad.t + 8 }, fmt(y1, y1 >= 10 ? 0 : 2)));
  chart.append(svg("text", { x: 2, y: Y(0) }, "0"));
  if (yLabel) chart.append(svg("text", { x: pad.l + 4, y: pad.t + 8 }, yLabel));
  const colours = ["#2d6fb5", "#c0602a", "#3a8a4a", "#7a4fa0", "#b7791f", "#2a8a8a", "#a03a62", "#5b6b7f"];
  series.forEach((s, i) => {
    const colour = colours[i % colours.length];
    const d = s.points.map((p, j) => `${j ? "L" : "M"}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(" ");
    chart.append(svg("path", { d, fill: "none", stroke: colour, "stroke-width": 2 }));
    for (const p of s.points) chart.append(svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: 2.5, fill: colour }));
    chart.append(svg("rect", { x: width - pad.r + 8, y: pad.t + i * 16, width: 10, height: 10, fill: colour }));
    chart.append(svg("text", { x: width - pad.r + 22, y: pad.t + i * 16 + 9 }, s.name));
  });
  return chart;
}

/** A grouped bar chart: groups [{name, bars: [{name, value}]}], values in [0, max]. */
export function barChart(groups, { width = 640, height = 220, max = 1 } = {}) {
  const pad = { l: 36, r: 10, t: 12, b: 40 };
  const chart = svg("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  const colours = ["#2d6fb5", "#c0602a", "#3a8a4a", "#7a4fa0", "#b7791f"];
  const inner = height - pad.t - pad.b;
  const groupWidth = (width - pad.l - pad.r) / Math.max(1, groups.length);
  chart.append(svg("line", { class: "axis", x1: pad.l, y1: height - pad.b, x2: width - pad.r, y2: height - pad.b }));
  chart.append(svg("text", { x: 4, y: pad.t + 8 }, fmt(max, 1)));
  groups.forEach((g, gi) => {
    const barWidth = (groupWidth - 16) / Math.max(1, g.bars.length);
    g.bars.forEach((b, bi) => {
      const h = Math.max(0, Math.min(1, (b.value || 0) / max)) * inner;
      const x = pad.l + gi * groupWidth + 8 + bi * barWidth;
      chart.append(svg("rect", { x, y: height - pad.b - h, width: barWidth - 2, height: h, fill: colours[bi % colours.length] },
        svg("title", {}, `${g.name} ${b.name}: ${fmt(b.value)}`)));
      chart.append(svg("text", { x, y: height - pad.b - h - 2 }, fmt(b.value, 2)));
    });
    chart.append(svg("text", { x: pad.l + gi * groupWidth + 8, y: height - pad.b + 14 }, g.name));
  });
  const names = groups.length ? groups[0].bars.map((b) => b.name) : [];
  names.forEach((name, i) => {
    chart.append(svg("rect", { x: pad.l + i * 110, y: height - 14, width: 10, height: 10, fill: colours[i % colours.length] }));
    chart.append(svg("text", { x: pad.l + i * 110 + 14, y: height - 5 }, name));
  });
  return chart;
}
