// Quality: an overlay's stored golden-set runs (nightly and on demand) charted per strategy: nDCG@10 over
// time, and the latest run's nDCG@10, Recall@100 and MRR@10 side by side. Running one needs admin.
import { api, enc } from "./api.js";
import { $, barChart, chip, clear, el, fmt, lineChart } from "./dom.js";

export function renderRuns(role, runs) {
  const out = clear($("quality-out"));
  const scored = runs.filter((r) => r.strategies && Object.keys(r.strategies).length);
  if (!scored.length) return out.append(el("p", { class: "muted" }, `no stored golden-set runs for ${role} yet`));
  const latest = scored[0];
  const strategies = Object.entries(latest.strategies);
  const metrics = Object.keys(strategies[0][1]);
  out.append(el("div", { class: "info" }, chip(`${scored.length} runs`), chip(`${latest.queries} queries`), chip(`default ${latest.default}`),
    chip(latest.passed ? "passed" : "below the floor", latest.passed ? "ok" : "bad"),
    ` latest ${latest.at} · floor nDCG@10 ${fmt(latest.min_ndcg_at_10, 2)}`));
  out.append(el("h3", {}, "latest run per strategy"),
    barChart(strategies.map(([name, m]) => ({ name, bars: metrics.map((k) => ({ name: k, value: m[k] })) }))));
  const oldestFirst = scored.slice().reverse();
  const series = strategies.map(([name]) => ({
    name, points: oldestFirst.filter((r) => r.strategies[name]).map((r) => [Date.parse(r.at), r.strategies[name].ndcg_at_10]),
  }));
  out.append(el("h3", {}, "nDCG@10 per run (oldest → newest)"), lineChart(series, { yLabel: "nDCG@10" }));
  const table = el("table", {}, el("tr", {}, el("th", {}, "strategy"), ...metrics.map((k) => el("th", {}, k))));
  for (const [name, m] of strategies) table.append(el("tr", {}, el("td", {}, name), ...metrics.map((k) => el("td", { class: "num" }, fmt(m[k])))));
  out.append(table);
  const skipped = Object.entries(latest.skipped || {});
  if (skipped.length) out.append(el("p", { class: "muted" }, `skipped: ${skipped.map(([k, v]) => `${k} (${v})`).join(", ")}`));
  return out;
}

async function show(status) {
  const role = $("quality-role").value;
  const stored = await api("GET", `/overlays/${enc(role)}/evals?limit=60`);
  renderRuns(role, stored.data.map((row) => ({ ...row.metrics, at: row.at })));
  status("");
}

export function setup(status) {
  $("quality-form").addEventListener("submit", (event) => {
    event.preventDefault();
    show(status).catch((err) => status(err.message));
  });
  $("quality-run").addEventListener("click", async () => {
    if (!$("quality-role").value) return status("name a role first");
    try {
      await api("POST", `/overlays/${enc($("quality-role").value)}/eval`);
      await show(status);
    } catch (err) {
      status(err.message);
    }
  });
}
