// The chat page: threads in the sidebar, messages and replies, the composer, the token and the language.
import { ApiError, api, session, setToken } from "./api.js";
import { closeBatchCards } from "./batch.js";
import { renderMessage, userMessage } from "./cards.js";
import { clearError, padForComposer, pageError, readingIndicator, reveal, showError } from "./feedback.js";
import { applyI18n, lang, setLang, t, timeEl, tx } from "./i18n.js";
import { closeJobCards } from "./job.js";
import { el } from "./render.js";

const $ = (id) => document.getElementById(id);
let threadId = null;
let openedFromHash = null;

/** Start the page: labels, handlers, the token if the server needs one, then the threads. */
async function init() {
  const opened = threadFromHash(); // the thread the address named at load, not one a message sent meanwhile made
  applyI18n();
  bindControls();
  try {
    session.auth = (await api("/healthz")).auth;
  } catch (error) {
    session.auth = true; // a degraded server still names the question: ask for a token only if it refuses
  }
  if (session.auth && !session.token) {
    askToken();
    return;
  }
  await loadAll(opened);
}

/** Draw the thread list, then the thread the address named. A message sent while the page was loading has made
 * its own thread and drawn its reply there: opening a thread now would wipe that reply, so none is opened. */
async function loadAll(opened = threadFromHash()) {
  await refreshThreads();
  if (opened && threadId === null) await openThread(opened);
}

function threadFromHash() {
  const match = /^#thread=(\d+)$/.exec(location.hash);
  return match ? Number(match[1]) : null;
}

function bindControls() {
  const text = $("composer-text");
  padForComposer($("composer"));
  document.addEventListener("kg-sign-in", () => askToken()); // a card refused for its token asks for another
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = text.value;
    if (value.trim()) send(value);
  });
  $("composer-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    event.target.value = "";
    if (file) sendFile(file);
  });
  bindDrop();
  for (const example of document.querySelectorAll("#welcome .example")) {
    example.addEventListener("click", () => {
      text.value = example.textContent.trim();
      text.focus();
    });
  }
  $("new-thread").addEventListener("click", () => newThread());
  $("lang-toggle").addEventListener("click", () => {
    setLang(lang() === "zh" ? "en" : "zh");
    $("lang-toggle").lang = lang() === "zh" ? "en" : "zh";
    if (session.token || !session.auth) refreshThreads().catch(showError); // the threads' labels and dates
  });
  $("lang-toggle").lang = lang() === "zh" ? "en" : "zh";
  $("token-button").addEventListener("click", () => askToken());
  $("token-form").addEventListener("submit", (event) => {
    if (event.submitter && event.submitter.value === "save") {
      setToken($("token-input").value);
      $("token-input").value = "";
      loadAll().catch(showError);
    }
  });
  $("sidebar-toggle").addEventListener("click", () => {
    const open = document.body.classList.toggle("sidebar-open");
    $("sidebar-toggle").setAttribute("aria-expanded", String(open));
  });
  window.addEventListener("hashchange", () => {
    const id = threadFromHash();
    if (id && id !== threadId && id !== openedFromHash) openThread(id).catch(showError);
  });
}

const SPEC_FILE = /\.(md|py|txt)$/i;

/** A .md, .py or .txt file dropped anywhere on the conversation or the message box is sent as the attach button does. */
function bindDrop() {
  const zone = document.querySelector(".chat");
  const carriesFiles = (event) => [...(event.dataTransfer?.types || [])].includes("Files");
  let depth = 0;
  zone.addEventListener("dragenter", (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    depth += 1;
    document.body.classList.add("dropping");
  });
  zone.addEventListener("dragover", (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
  });
  zone.addEventListener("dragleave", () => {
    depth = Math.max(0, depth - 1);
    if (!depth) document.body.classList.remove("dropping");
  });
  zone.addEventListener("drop", (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    depth = 0;
    document.body.classList.remove("dropping");
    const file = event.dataTransfer.files[0];
    if (file) sendFile(file);
  });
  // A file dropped beside the zone must not replace the page (the browser's default opens it).
  window.addEventListener("dragover", (event) => { if (carriesFiles(event)) event.preventDefault(); });
  window.addEventListener("drop", (event) => { if (carriesFiles(event)) event.preventDefault(); });
}

async function sendFile(file) {
  if (!SPEC_FILE.test(file.name)) {
    showError(pageError("file_kind", { name: file.name }));
    return;
  }
  await send(await file.text(), file.name);
}

function askToken() {
  const dialog = $("token-dialog");
  if (!dialog.open) dialog.showModal();
  $("token-input").focus();
}

async function refreshThreads() {
  const { items } = await api("/threads");
  const list = $("thread-list");
  list.replaceChildren(...items.map((thread) => {
    const when = new Date(thread.updated_at.endsWith("Z") || /[+-]\d\d:\d\d$/.test(thread.updated_at)
      ? thread.updated_at : `${thread.updated_at}Z`);
    const title = thread.title ? el("span", { class: "thread-title", translate: "no" }, thread.title)
      : tx("span", "empty_thread", {}, { class: "thread-title" });
    const button = el("button", { type: "button", class: "thread-link", "data-thread": thread.id }, title,
      timeEl(when, "datetime"));
    if (thread.id === threadId) button.setAttribute("aria-current", "true");
    button.addEventListener("click", () => {
      document.body.classList.remove("sidebar-open");
      openThread(thread.id).catch(showError);
    });
    return el("li", { class: "thread-item" }, button, deleteButton(thread));
  }));
}

/** A thread's delete button: the first press asks (the button says so), the second deletes; the jobs stay. */
function deleteButton(thread) {
  const button = el("button", { type: "button", class: "thread-delete", "data-thread": thread.id,
    "aria-label": t("delete_thread", { title: thread.title || t("empty_thread") }) }, "×");
  button.addEventListener("click", async () => {
    if (!button.classList.contains("confirm")) {
      button.classList.add("confirm");
      button.replaceChildren(tx("span", "delete_confirm"));
      return;
    }
    try {
      await api(`/threads/${thread.id}`, { method: "DELETE" });
      if (thread.id === threadId) newThread();
      else await refreshThreads();
    } catch (error) {
      showError(error);
    }
  });
  button.addEventListener("blur", () => {
    button.classList.remove("confirm");
    button.replaceChildren("×");
  });
  return button;
}

function newThread() {
  closeJobCards();
  closeBatchCards();
  threadId = null;
  history.pushState(null, "", location.pathname);
  $("messages").replaceChildren();
  $("welcome").hidden = false;
  document.body.classList.remove("sidebar-open");
  refreshThreads().catch(showError);
  $("composer-text").focus();
}

async function openThread(id) {
  const thread = await api(`/threads/${id}`);
  closeJobCards();
  closeBatchCards();
  threadId = thread.id;
  openedFromHash = thread.id;
  if (location.hash !== `#thread=${thread.id}`) location.hash = `thread=${thread.id}`;
  $("welcome").hidden = thread.messages.length > 0;
  const box = $("messages");
  box.replaceChildren();
  for (const message of thread.messages) box.append(renderMessage(message, thread.messages));
  await refreshThreads();
  reveal(box.lastElementChild);
}

/** Send a message: echoed at once with a reading indicator (a code spec or a file takes seconds to read), then
 * replaced by what the service recorded and its reply. A refused message (busy: 429) is kept to send again. */
async function send(text, filename = null) {
  clearError();
  const button = $("send");
  button.disabled = true;
  const box = $("messages");
  const echo = userMessage({ text, data: filename ? { file: filename } : {} });
  echo.classList.add("pending");
  const waiting = readingIndicator();
  $("welcome").hidden = true;
  box.append(echo, waiting.root);
  if (!filename) $("composer-text").value = ""; // a file leaves what was being typed in the box
  reveal(waiting.root);
  try {
    if (threadId === null) {
      const thread = await api("/threads", { method: "POST" });
      threadId = thread.id;
      openedFromHash = thread.id;
      location.hash = `thread=${thread.id}`;
    }
    const sentTo = threadId;
    const body = filename ? { text, filename } : { text };
    const said = await api(`/threads/${sentTo}/messages`, { method: "POST", body });
    if (sentTo !== threadId || !echo.isConnected) return; // another thread was opened meanwhile: the reply is there
    const drawn = said.map((message) => renderMessage(message, said));
    echo.replaceWith(...drawn);
    waiting.stop();
    reveal(drawn[drawn.length - 1]);
    refreshThreads().catch(showError); // the message is recorded: a failure here is not the message's
  } catch (error) {
    echo.remove(); // nothing was recorded: the message goes back to the box (or stays kept for Send again)
    waiting.stop();
    $("welcome").hidden = box.children.length > 0;
    if (!filename && !$("composer-text").value) $("composer-text").value = text;
    // Send again where waiting helps (busy, the network, the server). Not past the read's deadline (504): the read
    // goes on and may still record the message and its reply. A refused token asks for another.
    const status = error instanceof ApiError ? error.status : 0;
    const transient = status === 0 || status === 429 || (status >= 500 && status !== 504);
    showError(error, transient ? () => send(text, filename) : null);
  } finally {
    waiting.stop();
    button.disabled = false;
  }
}

init().catch(showError);
