// What the page says while it waits and when a request fails: the newest message kept in view above the sticky
// message box, a reading indicator while a spec is read, and what a refusal means (busy, token refused, revoked).
import { ApiError, session } from "./api.js";
import { duration, tx } from "./i18n.js";
import { el } from "./render.js";

const BUSY_DEFAULT_S = 5; // a 429 without Retry-After (a proxy's own) still says when to try again
let countdown = null;

/** Keep the message box's height as the page's bottom scroll padding: what is scrolled to lands above the box. */
export function padForComposer(composer) {
  const set = () => document.documentElement.style.setProperty("--composer-h", `${composer.offsetHeight}px`);
  new ResizeObserver(set).observe(composer);
  set();
}

/** Scroll a message into view above the message box: the whole of it when it fits, else its top (or when it grows). */
export function reveal(node, { top = false } = {}) {
  if (!node?.isConnected) return;
  const composer = document.getElementById("composer");
  const room = window.innerHeight - (composer?.offsetHeight || 0);
  const fits = node.getBoundingClientRect().height <= room - 16;
  node.scrollIntoView({ block: top || !fits ? "start" : "end" });
}

/** The card shown from Send until the reply: a code spec or a file takes seconds to read (it is traced). */
export function readingIndicator() {
  const waited = el("span", { class: "waited" });
  const root = el("section", { class: "msg assistant reading-pending", role: "status" },
    el("span", { class: "spinner", "aria-hidden": "true" }), tx("strong", "reading_now"), " ", waited,
    tx("p", "reading_hint", {}, { class: "hint" }));
  const started = Date.now();
  const tick = () => waited.replaceChildren(duration((Date.now() - started) / 1000));
  tick();
  const timer = setInterval(tick, 1000);
  return { root, stop: () => { clearInterval(timer); root.remove(); } };
}

/** Ask the page for a new token (app.js opens the token dialog). */
export function signInButton() {
  const button = tx("button", "sign_in", {}, { type: "button", class: "sign-in" });
  button.addEventListener("click", () => document.dispatchEvent(new CustomEvent("kg-sign-in")));
  return button;
}

/** Tell whether a request was refused for its token (revoked or wrong). */
export function refused(error) {
  return error instanceof ApiError && error.status === 401;
}

/** An error in the page's own words (a key of i18n.js), relabelled when the language switches. */
export function pageError(key, vars = {}) {
  return Object.assign(new Error(key), { i18n: { key, vars } });
}

/** Say what a failed request means in the page's words; a message of the service's own is shown as it came. */
export function problem(error) {
  if (error?.i18n) return tx("span", error.i18n.key, error.i18n.vars);
  if (refused(error)) return tx("span", session.token ? "token_refused" : "need_token");
  if (error instanceof ApiError && error.status === 504) return tx("span", "too_slow");
  return el("span", { "data-source": "service" }, String(error?.message || error));
}

/** Show a failure under the message box; a 429 counts down to when to retry; `retry` sends the kept message again. */
export function showError(error, retry = null) {
  const box = document.getElementById("composer-error");
  clearError();
  box.hidden = false;
  const said = el("span", { class: "problem" });
  box.append(said);
  if (error instanceof ApiError && error.status === 429) {
    box.dataset.status = "429";
    const until = Date.now() + 1000 * (error.retryAfter || BUSY_DEFAULT_S);
    const say = () => {
      const left = Math.ceil((until - Date.now()) / 1000);
      said.replaceChildren(left > 0 ? tx("span", "busy", { s: left }) : tx("span", "busy_over"));
      if (left <= 0) stopCountdown();
    };
    say();
    countdown = setInterval(say, 1000);
  } else {
    said.append(problem(error));
  }
  if (retry) {
    const again = tx("button", "retry", {}, { type: "button", class: "retry" });
    again.addEventListener("click", () => { clearError(); retry(); });
    box.append(" ", again);
  }
  if (refused(error)) {
    box.append(" ", signInButton());
    document.dispatchEvent(new CustomEvent("kg-sign-in"));
  }
}

/** Take the failure away (a new message is on its way). */
export function clearError() {
  const box = document.getElementById("composer-error");
  stopCountdown();
  box.hidden = true;
  delete box.dataset.status;
  box.replaceChildren();
}

function stopCountdown() {
  if (countdown !== null) clearInterval(countdown);
  countdown = null;
}
