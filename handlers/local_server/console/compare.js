// Compare: one query under two strategies, side by side, each right-hand result marked with its move.
import { api } from "./api.js";
import { $, chip, clear, el, fmt } from "./dom.js";
import { searchBody } from "./search.js";

const keyOf = (r) => `${r.entity_type}:${r.entity_id}`;

function move(rank, other) {
  if (other === undefined) return el("span", { class: "move new" }, "new");
  if (other === rank) return el("span", { class: "move" }, "=");
  return other > rank ? el("span", { class: "move up" }, `▲${other - rank}`) : el("span", { class: "move down" }, `▼${rank - other}`);
}

function item(result, rank, otherRanks, isLeft) {
  const other = otherRanks.get(keyOf(result));
  const mark = isLeft ? (other === undefined ? el("span", { class: "move gone" }, "only here") : el("span", { class: "move" }, `→${other}`)) : move(rank, other);
  return el("li", { "data-key": keyOf(result) }, mark, " ", el("b", {}, result.title || "(untitled)"), " ",
    el("span", { class: "result-id" }, `${keyOf(result)} · ${fmt(result.score)}`));
}

export function setup(status) {
  $("compare-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = $("compare-query").value;
    const [a, b] = [$("compare-a").value, $("compare-b").value];
    const limit = $("compare-limit").value;
    try {
      const [left, right] = await Promise.all([
        api("POST", "/search", searchBody(query, { strategy: a, limit })),
        api("POST", "/search", searchBody(query, { strategy: b, limit })),
      ]);
      status("");
      const ranks = (rs) => new Map(rs.map((r, i) => [keyOf(r), i + 1]));
      const [leftRanks, rightRanks] = [ranks(left.results), ranks(right.results)];
      const shared = left.results.filter((r) => rightRanks.has(keyOf(r))).length;
      clear($("compare-info")).append(chip(`${shared} shared`), chip(`${left.results.length - shared} only ${a}`),
        chip(`${right.results.length - shared} only ${b}`),
        ` ${a}: ${fmt(left.took_ms, 1)} ms (${left.query_info.strategy}) · ${b}: ${fmt(right.took_ms, 1)} ms (${right.query_info.strategy})`);
      $("compare-a-title").textContent = a;
      $("compare-b-title").textContent = b;
      clear($("compare-left")).append(...left.results.map((r, i) => item(r, i + 1, rightRanks, true)));
      clear($("compare-right")).append(...right.results.map((r, i) => item(r, i + 1, leftRanks, false)));
    } catch (err) {
      for (const id of ["compare-info", "compare-left", "compare-right"]) clear($(id)); // no stale lists
      status(err.message);
    }
  });
}
