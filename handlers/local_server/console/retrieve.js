// Governed retrieval: run /retrieve for a role (its stored overlay, or one pasted here) and show what was
// selected and why, what was rejected and why, provenance and warning states.
import { api, enc } from "./api.js";
import { $, chip, clear, el, fmt, meter } from "./dom.js";

const SIGNALS = ["final", "relevance", "lexical", "vector", "fused", "trust", "freshness", "penalty"];
// The API counts ranks and chunks from 0; people count from 1 (as the search view shows them).
const rank = (r) => (r === null || r === undefined ? "–" : `#${r + 1}`);
const STATE_KIND = { healthy: "ok", no_overlay: "warn", no_strong_match: "warn", stale_dominant: "warn", forbidden_hit: "bad", conflicting: "bad" };

function scores(breakdown) {
  const grid = el("div", { class: "explain" });
  for (const name of SIGNALS) {
    grid.append(el("span", {}, name), el("span", {}), meter(breakdown[name], 1, name === "lexical" || name === "vector" ? name : "fused"),
      el("span", { class: "num" }, fmt(breakdown[name])));
  }
  return grid;
}

export function renderBundle(bundle) {
  const out = clear($("retrieve-out"));
  out.append(el("div", { class: "info" }, ...bundle.warnings.map((w) => chip(`${w.state}: ${w.action}`, STATE_KIND[w.state] || "warn"))));
  for (const w of bundle.warnings) out.append(el("div", { class: "muted" }, `${w.state}: ${w.message}`));
  const p = bundle.provenance;
  out.append(el("h3", {}, "provenance"), el("div", {},
    chip(`trust ${p.trust_posture}${p.mean_trust === null ? "" : ` (${fmt(p.mean_trust, 2)})`}`),
    chip(`freshness ${p.freshness_posture}`), chip(`${p.stale_selected} stale selected`, p.stale_selected ? "warn" : ""),
    ...p.sources.map((s) => chip(`${s.source}: ${s.selected} selected · trust ${s.trust}${s.preferred ? " · preferred" : ""}`, s.preferred ? "ok" : ""))));
  const q = bundle.query;
  out.append(el("div", { class: "muted" }, `mode ${q.mode} · fusion ${q.fusion} · semantic weight ${fmt(q.semantic_weight, 2)} · lexical terms: ${q.lexical_terms.join(" ")}`,
    q.boost_terms_added.length ? ` · boosted: ${q.boost_terms_added.join(" ")}` : "", q.suppress_terms_removed.length ? ` · suppressed: ${q.suppress_terms_removed.join(" ")}` : ""));
  out.append(el("h3", {}, `selected (${bundle.selected.length})`));
  const selected = el("ol", { class: "results", "data-testid": "selected" });
  for (const c of bundle.selected) {
    selected.append(el("li", {},
      el("div", { class: "result-head" }, el("span", { class: "result-title" }, c.title || "(untitled)"),
        el("span", { class: "result-id" }, `${c.document_id} · chunk ${c.chunk_no + 1} · ${c.source} · trust ${c.trust}`),
        c.stale ? chip("stale", "warn") : null, c.preferred ? chip("preferred", "ok") : null,
        el("span", { class: "score" }, fmt(c.scores.final))),
      el("div", {}, el("b", {}, "why: "), c.reason),
      el("div", { class: "snippet" }, c.text.length > 400 ? `${c.text.slice(0, 400)}…` : c.text),
      el("div", { class: "muted" }, `lexical rank ${rank(c.lexical_rank)} · vector rank ${rank(c.vector_rank)} · matched: ${c.matched_terms.join(" ")}`),
      scores(c.scores)));
  }
  out.append(selected, el("h3", {}, `rejected (${bundle.rejected.length})`));
  const rejected = el("table", { "data-testid": "rejected" }, el("tr", {}, ...["document", "title", "source", "relevance", "reason", "detail"].map((h) => el("th", {}, h))));
  for (const r of bundle.rejected) rejected.append(el("tr", {}, el("td", {}, r.document_id), el("td", {}, r.title), el("td", {}, r.source),
    el("td", { class: "num" }, fmt(r.relevance)), el("td", {}, chip(r.reason, "bad")), el("td", {}, r.detail)));
  out.append(rejected);
  const d = bundle.diagnostics;
  out.append(el("div", { class: "muted" }, `timings: ${Object.entries(d.timings_ms).map(([k, v]) => `${k} ${fmt(v, 1)} ms`).join(", ")}`,
    d.degraded_reason ? ` · degraded: ${d.degraded_reason}` : ""));
}

export function setup(status) {
  $("retrieve-load").addEventListener("click", async () => {
    const role = $("retrieve-role").value;
    if (!role) return status("name a role first");
    try {
      $("retrieve-overlay").value = JSON.stringify(await api("GET", `/overlays/${enc(role)}`), null, 2);
      status("");
    } catch (err) {
      status(err.message);
    }
  });
  $("retrieve-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { role_id: $("retrieve-role").value, task_text: $("retrieve-task").value, lexical_only: $("retrieve-lexical").checked };
    if ($("retrieve-summary").value) body.context_summary = $("retrieve-summary").value;
    try {
      const overlay = $("retrieve-overlay").value.trim();
      if (overlay) body.overlay = JSON.parse(overlay);
      renderBundle(await api("POST", "/retrieve", body));
      status("");
    } catch (err) {
      clear($("retrieve-out")); // no bundle shown under a task it does not belong to
      status(err.message);
    }
  });
}
