// Search: the query box, results with highlighted snippets, and each result's explanation drawn.
import { api } from "./api.js";
import { $, chip, clear, el, fmt, meter, snippetNodes } from "./dom.js";

/** "key=value, key2=a|b" → {key: "value", key2: ["a", "b"]}; null when empty. */
export function parseFilters(text) {
  const filters = {};
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const at = part.indexOf("=");
    if (at < 1) throw new Error(`filter "${part}" must be key=value`);
    const values = part.slice(at + 1).split("|").map((v) => v.trim());
    filters[part.slice(0, at).trim()] = values.length > 1 ? values : values[0];
  }
  return Object.keys(filters).length ? filters : null;
}

export function searchBody(query, { entities = "", filters = "", strategy = "auto", limit = 20 } = {}) {
  const body = { query, strategy, limit: Number(limit) || 20, explain: true };
  const types = entities.split(",").map((t) => t.trim()).filter(Boolean);
  if (types.length) body.entities = types;
  const parsed = parseFilters(filters);
  if (parsed) body.filters = parsed;
  return body;
}

export function queryInfo(response) {
  const info = response.query_info;
  return el("div", {},
    chip(`strategy ${info.strategy}`), chip(`cache ${info.cache}`),
    info.degraded ? chip(`degraded: ${info.degraded_reason || "yes"}`, "bad") : null,
    info.fallback ? chip(`fallback: ${info.fallback}`, "warn") : null,
    info.terms_truncated ? chip("terms truncated", "warn") : null,
    chip(`shape ${info.query_shape}`),
    ` parsed: ${info.parsed_query} · ${response.total} results · ${fmt(response.took_ms, 1)} ms`);
}

function explanationRow(label, kind, leg, max) {
  return [
    el("span", {}, label),
    // The API's ranks count from 0; people count from 1.
    el("span", { class: "num" }, leg.rank === null || leg.rank === undefined ? "not found" : `#${leg.rank + 1}`),
    meter(leg.score, max, kind),
    el("span", { class: "num" }, fmt(leg.score)),
  ];
}

/** The explanation of one result: each leg's rank and score (scaled to the best in this answer), the
 *  fused score, the fusion, boosts and fallback. */
export function explanation(result, scale) {
  const x = result.explanation;
  if (!x) return el("div", { class: "muted" }, "no explanation");
  const boosts = Object.entries(x.field_boosts || {});
  return el("div", { class: "explain", "data-testid": "explanation" },
    explanationRow("lexical", "lexical", x.lexical, scale.lexical),
    explanationRow("vector", "vector", x.vector, scale.vector),
    el("span", {}, "fused"), el("span", { class: "num" }, x.fusion === "rrf" ? "rrf" : `α ${fmt(x.alpha, 2)}`),
    meter(result.score, scale.fused, "fused"), el("span", { class: "num" }, fmt(result.score)),
    el("span", {}, "boosts"),
    el("span", { class: "num" }, `chunk ${x.matched_chunk + 1}`),
    el("span", {}, boosts.length ? boosts.map(([f, b]) => chip(`${f} ×${b}`)) : el("span", { class: "muted" }, "none"),
      x.fallback ? chip(`fallback: ${x.fallback}`, "warn") : null),
    el("span", {}));
}

export function scaleOf(results) {
  const max = (pick) => Math.max(0, ...results.map(pick).filter((v) => typeof v === "number"));
  return {
    lexical: max((r) => r.explanation && r.explanation.lexical.score),
    vector: Math.max(1, max((r) => r.explanation && r.explanation.vector.score)),
    fused: max((r) => r.score),
  };
}

export function resultItem(result, scale) {
  return el("li", { "data-key": `${result.entity_type}:${result.entity_id}` },
    el("div", { class: "result-head" },
      el("span", { class: "result-title" }, result.title || "(untitled)"),
      el("span", { class: "result-id" }, `${result.entity_type}:${result.entity_id}`),
      el("span", { class: "score" }, fmt(result.score))),
    el("div", { class: "snippet" }, snippetNodes(result.snippet)),
    explanation(result, scale));
}

let latest = 0; // the newest search asked for: an older answer arriving late is dropped

/** Run the search form's query and draw the answer (marks `quarry:first-results` the first time). A failed
 *  search clears the previous answer, so nothing is shown under a query it does not belong to. */
export async function runSearch(status) {
  const mine = ++latest;
  try {
    const body = searchBody($("search-query").value, {
      entities: $("search-entities").value, filters: $("search-filters").value,
      strategy: $("search-strategy").value, limit: $("search-limit").value,
    });
    const response = await api("POST", "/search", body);
    if (mine !== latest) return;
    status("");
    clear($("search-info")).append(queryInfo(response));
    const scale = scaleOf(response.results);
    clear($("search-results")).append(...response.results.map((r) => resultItem(r, scale)));
    if (!response.results.length) $("search-results").append(el("li", { class: "muted" }, "no results"));
    if (!performance.getEntriesByName("quarry:first-results").length) performance.mark("quarry:first-results");
  } catch (err) {
    if (mine !== latest) return;
    clear($("search-info"));
    clear($("search-results"));
    status(err.message);
  }
}

export function setup(status) {
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    runSearch(status);
  });
}
