// Talk to the service: the token travels in a header (kept in this tab's session storage, never in a URL).
import { el } from "./render.js";

export const session = { token: sessionStorage.getItem("kg-token") || "", auth: false };

/** An HTTP answer that was not a success: its status, the service's message, and Retry-After's seconds (or null). */
export class ApiError extends Error {
  constructor(status, message, retryAfter = null) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

/** Return the Authorization header of the current token (none without one). */
export function authHeaders() {
  return session.token ? { Authorization: `Bearer ${session.token}` } : {};
}

/** Remember a token for this tab. */
export function setToken(token) {
  session.token = token.trim();
  if (session.token) sessionStorage.setItem("kg-token", session.token);
  else sessionStorage.removeItem("kg-token");
}

/** Send a request; return the parsed JSON, or throw ApiError with the service's detail. */
export async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json", ...authHeaders() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? null : response.json();
}

/** Fetch a file's text or bytes with the token. */
export async function fetchFile(path, asBlob = false) {
  const response = await fetch(path, { headers: authHeaders() });
  if (!response.ok) throw await failure(response);
  return asBlob ? response.blob() : response.text();
}

/** Hand a blob to the browser as a download named `name`. */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: name, class: "visually-hidden" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30000);
}

/** The ApiError of a refused request; a 429's Retry-After (seconds) says when the service has room again. */
export async function failure(response) {
  const seconds = Number.parseInt(response.headers.get("Retry-After") || "", 10);
  return new ApiError(response.status, await detailOf(response), Number.isFinite(seconds) ? seconds : null);
}

async function detailOf(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail)) return body.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
    return JSON.stringify(body.detail ?? body);
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}
