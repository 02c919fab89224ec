// Context assembly: the packed block, each source's share of the budget as a bar, what was dropped,
// feedback, and the caller's learning (log history as a line chart, weights and budget).
import { api, enc } from "./api.js";
import { $, chip, clear, el, fmt, lineChart, meter } from "./dom.js";
import { session } from "./session.js";

function sourceClasses(names) {
  return new Map([...new Set(names)].map((name, i) => [name, `s${i % 8}`]));
}

/** One bar the width of the budget: a segment per source (its tokens), the rest unused. */
export function budgetBar(sources, budget) {
  const bySource = new Map();
  for (const s of sources) bySource.set(s.source, (bySource.get(s.source) || 0) + s.tokens);
  const classes = sourceClasses([...bySource.keys()]);
  const bar = el("div", { class: "budget", "data-testid": "budget-bar" });
  const legend = el("div", { class: "legend" });
  for (const [name, tokens] of bySource) {
    const share = budget > 0 ? tokens / budget : 0;
    bar.append(el("div", { class: classes.get(name), width: `${(share * 100).toFixed(2)}%`, title: `${name}: ${tokens} tokens`, "data-source": name }, name));
    legend.append(el("span", { class: `swatch ${classes.get(name)}` }), ` ${name} ${tokens} tokens (${(share * 100).toFixed(1)}%)  `);
  }
  const used = [...bySource.values()].reduce((a, b) => a + b, 0);
  legend.append(el("span", { class: "muted" }, `unused ${Math.max(0, budget - used)} of ${budget}`));
  return [bar, legend];
}

function feedbackForm(response, status) {
  if (!response.assembly_id || !session.can("write")) return null;
  const boxes = response.sources.map((s) => el("input", { type: "checkbox", value: s.id, "aria-label": `used ${s.id}` }));
  const send = el("button", { type: "button" }, "Send feedback");
  send.addEventListener("click", async () => {
    const used = boxes.filter((b) => b.checked).map((b) => b.value);
    try {
      const out = await api("POST", "/context/feedback", { assembly_id: response.assembly_id, used_source_ids: used });
      status("");
      send.replaceWith(chip(`feedback recorded (${out.recorded_ids.length} used)`, "ok"));
    } catch (err) {
      status(err.message);
    }
  });
  return { boxes, send };
}

export function renderAssembly(response, status) {
  const out = clear($("context-out"));
  const feedback = feedbackForm(response, status);
  out.append(el("h3", {}, `${response.total_tokens} of ${response.token_budget} tokens · ${response.sources.length} items · ${fmt(response.retrieval_ms, 1)} ms retrieval`),
    ...budgetBar(response.sources, response.token_budget));
  if (response.warnings.length) out.append(el("div", {}, el("b", {}, "dropped / warnings: "), ...response.warnings.map((w) => chip(w, "warn"))));
  const max = Math.max(0, ...response.sources.map((s) => s.tokens));
  const table = el("table", {}, el("tr", {}, ...["used", "source", "id", "title", "score", "tokens", ""].map((h) => el("th", {}, h))));
  response.sources.forEach((s, i) => table.append(el("tr", {},
    el("td", {}, feedback ? feedback.boxes[i] : ""), el("td", {}, s.source), el("td", {}, s.id), el("td", {}, s.title),
    el("td", { class: "num" }, fmt(s.score)), el("td", { class: "num" }, String(s.tokens)),
    el("td", {}, meter(s.tokens, max, "neutral"), s.truncated ? chip("truncated", "warn") : null))));
  out.append(table);
  if (feedback) out.append(el("div", { class: "bar-form" }, feedback.send, el("span", { class: "muted" }, `assembly ${response.assembly_id}`)));
  out.append(el("h3", {}, "context block"), el("pre", { class: "block" }, response.context_block));
}

export async function renderLearning(caller, status) {
  const out = clear($("context-learn"));
  try {
    const [log, weights, budgets, history] = await Promise.all([
      api("GET", `/context/log?caller=${enc(caller)}&limit=100`),
      api("GET", "/context/weights?limit=1000"),
      api("GET", "/context/budgets"),
      api("GET", `/context/weights/history?caller=${enc(caller)}&limit=500`),
    ]);
    status("");
    const entries = log.data.slice().reverse(); // oldest first
    const series = [
      { name: "tokens", points: entries.map((e, i) => [i, e.total_tokens]) },
      { name: "budget", points: entries.map((e, i) => [i, e.budget]) },
      { name: "tokens used", points: entries.filter((e) => e.tokens_used !== null).map((e) => [entries.indexOf(e), e.tokens_used]) },
    ];
    out.append(el("h3", {}, `assemblies of ${caller} (oldest → newest)`), lineChart(series, { yLabel: "tokens" }));
    const bySource = new Map();
    for (const change of history.data.slice().reverse()) {
      const points = bySource.get(change.source) || [[Date.parse(change.at) - 1, change.old_weight]];
      points.push([Date.parse(change.at), change.new_weight]);
      bySource.set(change.source, points);
    }
    out.append(el("h3", {}, `source weights of ${caller} over time (${history.data.length} changes)`),
      lineChart([...bySource].map(([name, points]) => ({ name, points })), { yLabel: "weight" }));
    const rows = weights.weights.filter((w) => w.caller === caller || w.caller === "*");
    const table = el("table", {}, el("tr", {}, ...["caller", "source", "weight", "", "token share", "", "manual", "updated"].map((h) => el("th", {}, h))));
    for (const w of rows) table.append(el("tr", {}, el("td", {}, w.caller), el("td", {}, w.source),
      el("td", { class: "num" }, fmt(w.weight, 2)), el("td", {}, meter(w.weight, 1.5, "lexical")),
      el("td", { class: "num" }, fmt(w.token_share, 2)), el("td", {}, meter(w.token_share, 0.8, "vector")),
      el("td", {}, w.manual ? "pinned" : ""), el("td", {}, w.updated_at)));
    out.append(el("h3", {}, `source weights (defaults: weight ${fmt(weights.default_weight, 2)}, share ${fmt(weights.default_token_share, 2)})`),
      rows.length ? table : el("p", { class: "muted" }, "no learned rows yet: every source uses the defaults"));
    const budget = budgets.budgets.find((b) => b.caller === caller);
    out.append(el("h3", {}, "budget"), el("p", {}, budget
      ? `${budget.budget} tokens (learned within ${budget.min_budget}–${budget.max_budget}, updated ${budget.updated_at})`
      : `default ${budgets.default_budget} tokens (no learned budget for ${caller})`));
    const recent = el("table", {}, el("tr", {}, ...["when", "tokens", "budget", "sources", "feedback"].map((h) => el("th", {}, h))));
    for (const e of log.data.slice(0, 15)) recent.append(el("tr", {}, el("td", {}, e.created_at), el("td", { class: "num" }, String(e.total_tokens)),
      el("td", { class: "num" }, String(e.budget)), el("td", {}, e.sources.map((s) => s.source).join(", ")),
      el("td", {}, e.used_ids === null ? "none yet" : `${e.used_ids.length} used${e.processed ? ", learned" : ""}`)));
    out.append(el("h3", {}, "assembly log"), recent);
  } catch (err) {
    status(err.message);
  }
}

export function setup(status) {
  $("context-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { query: $("context-query").value, caller: $("context-caller").value };
    if ($("context-namespace").value) body.namespace = $("context-namespace").value;
    if ($("context-budget").value) body.token_budget = Number($("context-budget").value);
    try {
      renderAssembly(await api("POST", "/context/assemble", body), status);
      status("");
    } catch (err) {
      status(err.message);
    }
  });
  $("context-learning").addEventListener("click", () => {
    const caller = $("context-caller").value;
    if (!caller) status("name a caller first");
    else renderLearning(caller, status);
  });
}
