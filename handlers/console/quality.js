// Quality: run an overlay's golden set (admin) and chart nDCG@10, Recall@100 and MRR@10 per strategy.
import { api, enc } from "./api.js";
import { $, barChart, chip, clear, el, fmt } from "./dom.js";

export function renderReport(report) {
  const out = clear($("quality-out"));
  const strategies = Object.entries(report.strategies || {});
  if (!strategies.length) return out.append(el("p", { class: "muted" }, report.message || "no figures"));
  const metrics = Object.keys(strategies[0][1]);
  out.append(el("div", { class: "info" }, chip(`${report.queries} queries`), chip(`default ${report.default}`),
    chip(report.passed ? "passed" : "below the floor", report.passed ? "ok" : "bad"), ` floor nDCG@10 ${fmt(report.min_ndcg_at_10, 2)}`));
  out.append(barChart(strategies.map(([name, m]) => ({ name, bars: metrics.map((k) => ({ name: k, value: m[k] })) }))));
  const table = el("table", {}, el("tr", {}, el("th", {}, "strategy"), ...metrics.map((k) => el("th", {}, k))));
  for (const [name, m] of strategies) table.append(el("tr", {}, el("td", {}, name), ...metrics.map((k) => el("td", { class: "num" }, fmt(m[k])))));
  out.append(table);
  const skipped = Object.entries(report.skipped || {});
  if (skipped.length) out.append(el("p", { class: "muted" }, `skipped: ${skipped.map(([k, v]) => `${k} (${v})`).join(", ")}`));
  return out;
}

export function setup(status) {
  $("quality-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      renderReport(await api("POST", `/overlays/${enc($("quality-role").value)}/eval`));
      status("");
    } catch (err) {
      status(err.message);
    }
  });
}
