// The thread's messages drawn by kind: what the person wrote, a reading with Start, a question, a task book.
import { api } from "./api.js";
import { batchCard } from "./batch.js";
import { reveal, showError } from "./feedback.js";
import { t, tv, tx } from "./i18n.js";
import { jobCard, runsOnNote } from "./job.js";
import { el } from "./render.js";

const $ = (id) => document.getElementById(id);

/** Draw one message of the thread by its kind. */
export function renderMessage(message, all) {
  switch (message.kind) {
    case "reading": return readingCard(message, all);
    case "question": return questionCard(message);
    case "tasks": return tasksCard(message, all);
    case "job": return jobCard(message);
    case "batch": return batchCard(message);
    case "error": return el("section", { class: "msg assistant error-msg", role: "alert" },
      tx("h3", "error"), el("p", { class: "msg-text", "data-source": "service" }, message.text));
    default: return userMessage(message);
  }
}

/** What the person wrote (with the name of the file it came from). */
export function userMessage(message) {
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
  card.append(tx("h3", "understood"), el("pre", { class: "pytorch", translate: "no" }, reading.pytorch || ""));
  const rows = (reading.inputs || []).map((input) => el("tr", {},
    el("td", { translate: "no" }, input.name), el("td", {}, input.dtypes.join(" / ")),
    el("td", {}, input.shapes.map((s) => `[${s.join(", ")}]`).join(" | "))));
  card.append(el("table", { class: "inputs" },
    el("caption", {}, tx("span", "inputs")),
    el("thead", {}, el("tr", {}, tx("th", "name"), tx("th", "dtype"), tx("th", "shape"))),
    el("tbody", {}, ...rows)));
  const facts = el("p", { class: "facts" });
  facts.append(tx("span", "output"), ": ", el("span", { translate: "no" }, reading.output),
    ` ${reading.output_dtype} `, (reading.output_shapes || []).map((s) => `[${s.join(", ")}]`).join(" | "));
  facts.append(el("br"), tx("span", "device"), ": ", tv("device", reading.device));
  const target = options.target_speedup ?? reading.target_speedup;
  const rounds = options.rounds ?? reading.max_rounds;
  if (target) facts.append(" · ", tx("span", "target"), `: ×${target}`);
  if (rounds) facts.append(" · ", tx("span", "rounds"), `: ${rounds}`);
  for (const [name, value] of Object.entries(reading.params || {})) {
    facts.append(el("br"), el("span", { translate: "no" }, `${name} = ${value}`));
  }
  card.append(facts);
  const where = runsOnNote(message.data.runs_on);
  if (where) card.append(where);
  // The reader's notes and what it left out are its own words (English); the page's words around them are not.
  const notes = [...(reading.notes || []).map((n) => el("li", { "data-source": "service" }, n)),
    ...(reading.ignored || []).map((i) => el("li", {}, tx("span", "not_used"), " ",
      el("span", { "data-source": "service" }, i)))];
  if (notes.length) card.append(el("ul", { class: "notes" }, ...notes));
  if ((message.data.changes || []).length) {
    card.append(el("p", { class: "changes" }, tx("strong", "changed"), ": ",
      el("span", { "data-source": "service" }, message.data.changes.join("; "))));
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
      const card = jobCard(job);
      $("messages").append(card);
      reveal(card, { top: true }); // a job's card grows as it runs: its head stays in view
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
    tx("h3", "question"), el("pre", { class: "msg-text", "data-source": "service" }, message.text),
    tx("p", "answer_hint", {}, { class: "hint" }));
}

function tasksCard(message, all_) {
  const tasks = message.data.tasks || [];
  const rows = tasks.map((task, index) => el("tr", {},
    el("td", { translate: "no" }, task.task || String(index + 1)),
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
      const card = batchCard(started);
      $("messages").append(card);
      reveal(card, { top: true });
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
