// The chat page: threads in the sidebar, messages and replies, the composer, the token and the language.
import { ApiError, api, session, setToken } from "./api.js";
import { applyI18n, lang, setLang, t, tx } from "./i18n.js";
import { batchCard, closeBatchCards } from "./batch.js";
import { closeJobCards, jobCard, runsOnNote } from "./job.js";
import { el } from "./render.js";

const $ = (id) => document.getElementById(id);
let threadId = null;
let openedFromHash = null;

/** Start the page: labels, handlers, the token if the server needs one, then the threads. */
async function init() {
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
  await loadAll();
}

async function loadAll() {
  await refreshThreads();
  const id = threadFromHash();
  if (id) await openThread(id);
}

function threadFromHash() {
  const match = /^#thread=(\d+)$/.exec(location.hash);
  return match ? Number(match[1]) : null;
}

function bindControls() {
  const text = $("composer-text");
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
    showError(new Error(t("file_kind", { name: file.name })));
    return;
  }
  await send(await file.text(), file.name);
}

function askToken() {
  const dialog = $("token-dialog");
  if (!dialog.open) dialog.showModal();
  $("token-input").focus();
}

function showError(error) {
  const box = $("composer-error");
  box.hidden = false;
  box.textContent = error instanceof ApiError && error.status === 401 ? t("need_token") : String(error.message || error);
  if (error instanceof ApiError && error.status === 401) askToken();
}

function clearError() {
  $("composer-error").hidden = true;
  $("composer-error").textContent = "";
}

async function refreshThreads() {
  const { items } = await api("/threads");
  const list = $("thread-list");
  list.replaceChildren(...items.map((thread) => {
    const when = new Date(thread.updated_at.endsWith("Z") || /[+-]\d\d:\d\d$/.test(thread.updated_at)
      ? thread.updated_at : `${thread.updated_at}Z`);
    const button = el("button", { type: "button", class: "thread-link", "data-thread": thread.id },
      el("span", { class: "thread-title" }, thread.title || t("empty_thread")),
      el("time", { datetime: when.toISOString() }, when.toLocaleString(lang() === "zh" ? "zh-CN" : "en",
        { dateStyle: "medium", timeStyle: "short" })));
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
  box.lastElementChild?.scrollIntoView({ block: "end" });
}

async function send(text, filename = null) {
  clearError();
  const button = $("send");
  button.disabled = true;
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
    if (sentTo !== threadId) return; // the person opened another thread meanwhile: the reply is kept there
    if (!filename) $("composer-text").value = ""; // a file leaves what was being typed in the box
    $("welcome").hidden = true;
    for (const message of said) $("messages").append(renderMessage(message, said));
    $("messages").lastElementChild?.scrollIntoView({ block: "end" });
    await refreshThreads();
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
  }
}

/** Draw one message of the thread by its kind. */
function renderMessage(message, all) {
  switch (message.kind) {
    case "reading": return readingCard(message, all);
    case "question": return questionCard(message);
    case "tasks": return tasksCard(message, all);
    case "job": return jobCard(message);
    case "batch": return batchCard(message);
    case "error": return el("section", { class: "msg assistant error-msg", role: "alert" },
      tx("h3", "error"), el("p", { class: "msg-text" }, message.text));
    default: return userMessage(message);
  }
}

function userMessage(message) {
  const card = el("section", { class: "msg user", "data-message": message.id }, tx("span", "you", {}, { class: "who" }));
  if (message.data?.file) card.append(tx("p", "sent_file", { name: message.data.file }, { class: "file-name" }));
  card.append(el("pre", { class: "msg-text" }, message.text));
  return card;
}


function startedFrom(all, messageId, task = null) {
  return all.find((m) => m.kind === "job" && m.data.from_message === messageId && (m.data.task ?? null) === task);
}

function readingCard(message, all) {
  const reading = message.data.reading || {};
  const options = message.data.options || {};
  const card = el("section", { class: "msg assistant reading", "data-message": message.id });
  card.append(tx("h3", "understood"), el("pre", { class: "pytorch" }, reading.pytorch || ""));
  const rows = (reading.inputs || []).map((input) => el("tr", {},
    el("td", {}, input.name), el("td", {}, input.dtypes.join(" / ")),
    el("td", {}, input.shapes.map((s) => `[${s.join(", ")}]`).join(" | "))));
  card.append(el("table", { class: "inputs" },
    el("caption", {}, tx("span", "inputs")),
    el("thead", {}, el("tr", {}, tx("th", "name"), tx("th", "dtype"), tx("th", "shape"))),
    el("tbody", {}, ...rows)));
  const facts = el("p", { class: "facts" });
  facts.append(tx("span", "output"), `: ${reading.output} ${reading.output_dtype} `,
    (reading.output_shapes || []).map((s) => `[${s.join(", ")}]`).join(" | "));
  facts.append(el("br"), tx("span", "device"), `: ${reading.device}`);
  const target = options.target_speedup ?? reading.target_speedup;
  const rounds = options.rounds ?? reading.max_rounds;
  if (target) facts.append(" · ", tx("span", "target"), `: ×${target}`);
  if (rounds) facts.append(" · ", tx("span", "rounds"), `: ${rounds}`);
  for (const [name, value] of Object.entries(reading.params || {})) facts.append(el("br"), `${name} = ${value}`);
  card.append(facts);
  const where = runsOnNote(message.data.runs_on);
  if (where) card.append(where);
  const notes = [...(reading.notes || []), ...(reading.ignored || []).map((i) => `not used: ${i}`)];
  if (notes.length) card.append(el("ul", { class: "notes" }, ...notes.map((n) => el("li", {}, n))));
  if ((message.data.changes || []).length) {
    card.append(el("p", { class: "changes" }, tx("strong", "changed"), ": ", message.data.changes.join("; ")));
  }
  if (message.data.derived_from) {
    card.append(tx("p", "derived", { job: message.data.derived_from }, { class: "derived" }));
  }
  card.append(startControls(message, all, null));
  return card;
}

function startControls(message, all, task) {
  const bar = el("div", { class: "actions" });
  const start = tx("button", "start", {}, { type: "button", class: "primary start" });
  const started = startedFrom(all, message.id, task);
  const note = el("span", { class: "started" });
  if (started) {
    start.disabled = true;
    note.append(tx("span", "started", { job: started.job_id }));
  }
  start.addEventListener("click", async () => {
    start.disabled = true;
    try {
      const job = await api(`/threads/${message.thread_id}/messages/${message.id}/start`,
        { method: "POST", body: task === null ? {} : { task } });
      note.replaceChildren(tx("span", "started", { job: job.job_id }));
      $("messages").append(jobCard(job));
      $("messages").lastElementChild.scrollIntoView({ block: "start" });
    } catch (error) {
      start.disabled = false;
      showError(error);
    }
  });
  bar.append(start);
  if (task === null) {
    const edit = tx("button", "edit", {}, { type: "button", class: "edit" });
    edit.addEventListener("click", () => {
      $("composer-text").value = message.spec_text || "";
      $("composer-text").focus();
    });
    bar.append(edit);
  }
  bar.append(note);
  return bar;
}

function questionCard(message) {
  return el("section", { class: "msg assistant question", "data-message": message.id },
    tx("h3", "question"), el("pre", { class: "msg-text" }, message.text), tx("p", "answer_hint", {}, { class: "hint" }));
}

function tasksCard(message, all_) {
  const tasks = message.data.tasks || [];
  const rows = tasks.map((task, index) => el("tr", {},
    el("td", {}, task.task || String(index + 1)),
    tx("td", task.status === "read" ? "task_read" : "task_question"),
    el("td", {}, el("pre", { class: "msg-text" }, task.status === "read" ? task.understood : task.question)),
    el("td", {}, task.status === "read" ? startControls(message, all_, index) : "")));
  const all = tx("button", "start_all", {}, { type: "button", class: "primary start-batch" });
  const note = el("span", { class: "started" });
  const batch = all_.find((m) => m.kind === "batch" && m.data.from_message === message.id);
  if (batch || !tasks.some((task) => task.status === "read")) all.disabled = true;
  if (batch) note.append(tx("span", "batch", { batch: batch.data.batch_id }));
  all.addEventListener("click", async () => {
    all.disabled = true;
    try {
      const started = await api(`/threads/${message.thread_id}/messages/${message.id}/batch`, { method: "POST" });
      note.replaceChildren(tx("span", "batch", { batch: started.data.batch_id }));
      $("messages").append(batchCard(started));
    } catch (error) {
      all.disabled = false;
      showError(error);
    }
  });
  return el("section", { class: "msg assistant tasks", "data-message": message.id }, tx("h3", "tasks"),
    runsOnNote(message.data.runs_on) || "", el("div", { class: "kg-table-wrap" }, el("table", { class: "kg-table" },
      el("thead", {}, el("tr", {}, tx("th", "task"), tx("th", "reading"), el("th", {}, ""), el("th", {}, ""))),
      el("tbody", {}, ...rows))), el("div", { class: "actions" }, all, note));
}

init().catch(showError);
