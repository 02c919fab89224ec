// Entities: browse (through search: the API has no listing), read one, delete it (write scope only, with
// a second click to confirm; the server refuses a key without the scope in any case).
import { api, enc } from "./api.js";
import { $, clear, el, fmt, snippetNodes } from "./dom.js";
import { session } from "./session.js";

function deleteButton(result, status, item) {
  const button = el("button", { type: "button", class: "danger", "data-testid": "delete" }, "Delete");
  let armed = false;
  button.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      button.classList.add("armed");
      button.textContent = `Confirm: delete ${result.entity_type}:${result.entity_id}`;
      return;
    }
    try {
      await api("DELETE", `/entities/${enc(result.entity_type)}/${enc(result.entity_id)}`);
      status("");
      item.remove();
      clear($("entities-detail")).append(el("p", {}, `deleted ${result.entity_type}:${result.entity_id}`));
    } catch (err) {
      status(err.message);
    }
  });
  return button;
}

function detail(result, status, item) {
  const out = clear($("entities-detail"));
  out.append(el("div", { class: "card" },
    el("div", { class: "result-title" }, result.title || "(untitled)"),
    el("div", { class: "result-id" }, `${result.entity_type}:${result.entity_id} · score ${fmt(result.score)}`),
    el("div", { class: "snippet" }, snippetNodes(result.snippet)),
    el("h3", {}, "metadata"), el("pre", { class: "block" }, JSON.stringify(result.metadata, null, 2)),
    session.can("write") ? deleteButton(result, status, item) : el("p", { class: "muted" }, "read-only key: no changes offered")));
}

export function setup(status) {
  $("entities-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { query: $("entities-query").value, limit: 100 };
    if ($("entities-type").value) body.entities = [$("entities-type").value];
    try {
      const response = await api("POST", "/search", body);
      status("");
      const list = clear($("entities-list"));
      clear($("entities-detail"));
      for (const result of response.results) {
        const item = el("li", { "data-key": `${result.entity_type}:${result.entity_id}` },
          el("b", {}, result.title || "(untitled)"), " ", el("span", { class: "result-id" }, `${result.entity_type}:${result.entity_id}`));
        item.addEventListener("click", () => {
          for (const other of list.children) other.classList.remove("selected");
          item.classList.add("selected");
          detail(result, status, item);
        });
        list.append(item);
      }
      if (!response.results.length) list.append(el("li", { class: "muted" }, "nothing found"));
    } catch (err) {
      status(err.message);
    }
  });
}
