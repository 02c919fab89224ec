// The console's entry point: the key, the tabs, and each view's setup.
import { api, getKey, setKey } from "./api.js";
import { $ } from "./dom.js";
import { session } from "./session.js";
import * as compare from "./compare.js";
import * as context from "./context.js";
import * as entities from "./entities.js";
import * as quality from "./quality.js";
import * as retrieve from "./retrieve.js";
import * as search from "./search.js";

function status(message) {
  $("status").textContent = message;
}

function show(view) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.view === view);
  for (const section of document.querySelectorAll(".view")) section.classList.toggle("hidden", section.id !== `view-${view}`);
}

async function identify() {
  session.who = null;
  document.body.dataset.scopes = "";
  $("key-hint").classList.toggle("hidden", Boolean(getKey()));
  if (!getKey()) {
    $("who").textContent = "no key";
    return;
  }
  try {
    session.who = await api("GET", "/whoami");
    const who = session.who;
    $("who").textContent = `tenant ${who.tenant} · ${who.scopes.join(", ")}${who.caller ? ` · caller ${who.caller}` : ""}`;
    document.body.dataset.scopes = who.scopes.join(" ");
    status("");
  } catch (err) {
    $("who").textContent = "key refused";
    status(err.message);
  }
}

// A link may carry a query (never the key): /#q=login%20limiter searches at once, alongside /whoami. In a
// tab without a key yet (a link opened in a new tab) the query waits in the box until the key is given;
// a hash changed in an open tab searches again.
function searchFromLink() {
  const query = new URLSearchParams(location.hash.slice(1)).get("q");
  if (!query) return;
  show("search");
  $("search-query").value = query;
  if (getKey()) search.runSearch(status);
}

function init() {
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => show(tab.dataset.view));
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setKey($("key").value.trim());
    $("key").value = "";
    searchFromLink();
    identify();
  });
  $("forget").addEventListener("click", () => {
    setKey("");
    identify();
  });
  for (const view of [search, compare, retrieve, context, entities, quality]) view.setup(status);
  window.addEventListener("hashchange", searchFromLink);
  searchFromLink();
  identify();
}

init();
