// Entities: browse (GET /entities newest first, paged; or find them by search), read one
// (GET /entities/{type}/{id}), delete it (write scope only, a second click confirms; the server refuses a
// key without the scope in any case). A memory also shows its lifecycle (docs/api.md, "Memories"): the
// supersession chain both ways (each end opens the other), trust, pinning, relevance and its uses.
import { api, enc } from "./api.js";
import { $, chip, clear, el } from "./dom.js";
import { session } from "./session.js";

let cursor = null;

function deleteButton(entity, status, item) {
  const button = el("button", { type: "button", class: "danger", "data-testid": "delete" }, "Delete");
  let armed = false;
  button.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      button.classList.add("armed");
      button.textContent = `Confirm: delete ${entity.entity_type}:${entity.entity_id}`;
      return;
    }
    try {
      await api("DELETE", `/entities/${enc(entity.entity_type)}/${enc(entity.entity_id)}`);
      status("");
      if (item) item.remove();
      clear($("entities-detail")).append(el("p", {}, `deleted ${entity.entity_type}:${entity.entity_id}`));
    } catch (err) {
      status(err.message);
    }
  });
  return button;
}

function memoryLink(id, status) {
  const link = el("a", { href: "#", "data-testid": "memory-link" }, `memory:${id}`);
  link.addEventListener("click", (event) => {
    event.preventDefault();
    read({ entity_type: "memory", entity_id: id }, status, null);
  });
  return link;
}

function memoryLifecycle(e, status) {
  if (e.entity_type !== "memory") return null;
  const m = e.metadata || {};
  const uses = m.access_count ? `used ${m.access_count}× · last ${m.last_accessed_at}` : "not used yet";
  return el("div", { "data-testid": "memory" },
    el("h3", {}, "memory"),
    m.superseded_by ? el("p", { class: "warn", "data-testid": "superseded-by" }, "superseded by ",
      memoryLink(m.superseded_by, status), ": left out of searches and assemblies unless they ask for history") : null,
    m.supersedes ? el("p", { "data-testid": "supersedes" }, "supersedes ", memoryLink(m.supersedes, status)) : null,
    el("div", {},
      chip(m.pinned ? "pinned: never decays" : "decays: halves every 30 days unused", m.pinned ? "ok" : ""),
      chip(`trust ${m.trust_level || "not given"}`),
      chip(`relevance ${m.relevance_score ?? 1}`),
      chip(uses)));
}

async function read(entity, status, item) {
  const out = clear($("entities-detail"));
  try {
    const e = await api("GET", `/entities/${enc(entity.entity_type)}/${enc(entity.entity_id)}`);
    status("");
    out.append(el("div", { class: "card" },
      el("div", { class: "result-title" }, e.title || "(untitled)"),
      el("div", { class: "result-id" }, `${e.entity_type}:${e.entity_id} · version ${e.version} · source ${e.source}`,
        e.namespace ? ` · namespace ${e.namespace}` : "", e.owner ? ` · owner ${e.owner}` : ""),
      el("div", {}, chip(e.embedded ? "embedded" : "not embedded yet", e.embedded ? "ok" : "warn"),
        chip(`created ${e.created_at}`), chip(`updated ${e.updated_at}`)),
      memoryLifecycle(e, status),
      el("h3", {}, "fields"), el("pre", { class: "block" }, JSON.stringify(e.fields, null, 2)),
      el("h3", {}, "metadata"), el("pre", { class: "block" }, JSON.stringify(e.metadata, null, 2)),
      session.can("write") ? deleteButton(e, status, item) : el("p", { class: "muted" }, "read-only key: no changes offered")));
  } catch (err) {
    status(err.message);
  }
}

function listItem(entity, status) {
  const item = el("li", { "data-key": `${entity.entity_type}:${entity.entity_id}` },
    el("b", {}, entity.title || "(untitled)"), " ", el("span", { class: "result-id" }, `${entity.entity_type}:${entity.entity_id}`));
  item.addEventListener("click", () => {
    for (const other of $("entities-list").children) other.classList.remove("selected");
    item.classList.add("selected");
    read(entity, status, item);
  });
  return item;
}

async function browse(status, more) {
  const query = $("entities-query").value.trim();
  const type = $("entities-type").value.trim();
  const list = more ? $("entities-list") : clear($("entities-list"));
  if (!more) clear($("entities-detail"));
  let found;
  if (query) {
    const body = { query, limit: 100 };
    if (type) body.entities = [type];
    found = (await api("POST", "/search", body)).results;
    cursor = null;
  } else {
    const params = new URLSearchParams({ limit: "50" });
    if (type) params.set("type", type);
    if (more && cursor) params.set("cursor", cursor);
    const page = await api("GET", `/entities?${params}`);
    found = page.data;
    cursor = page.next_cursor;
  }
  status("");
  list.append(...found.map((entity) => listItem(entity, status)));
  if (!list.children.length) list.append(el("li", { class: "muted" }, "nothing found"));
  $("entities-more").classList.toggle("hidden", !cursor);
}

export function setup(status) {
  $("entities-form").addEventListener("submit", (event) => {
    event.preventDefault();
    browse(status, false).catch((err) => status(err.message));
  });
  $("entities-more").addEventListener("click", () => browse(status, true).catch((err) => status(err.message)));
}
