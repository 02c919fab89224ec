// The API client: the bearer key lives in this tab's sessionStorage only (never in a URL, never logged).

const KEY = "quarry.key";

export function getKey() {
  return sessionStorage.getItem(KEY) || "";
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, body) {
    const error = body && body.error ? body.error : {};
    const fields = error.fields ? Object.entries(error.fields).map(([k, v]) => `${k}: ${v}`).join("; ") : "";
    super(`${status} ${error.code || ""}: ${error.message || "request failed"}${fields ? ` (${fields})` : ""}`);
    this.status = status;
    this.body = body;
  }
}

/** Call the API with the session's key; resolves to the JSON body, rejects with ApiError. */
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${getKey()}` };
  const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export function enc(segment) {
  return encodeURIComponent(segment);
}
