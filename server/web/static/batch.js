// A task book started as a batch: one row per task with its live status, then the report and the zip.
import { api, fetchFile, saveBlob } from "./api.js";
import { problem, refused, signInButton } from "./feedback.js";
import { t, tv, tx } from "./i18n.js";
import { jobCard, runsOnNote } from "./job.js";
import { el, renderMarkdown } from "./render.js";

const POLL_MS = 2000;
const cards = new Set();

/** Stop polling every batch card on the page (the thread is being replaced). */
export function closeBatchCards() {
  for (const card of cards) card.closed = true;
  cards.clear();
}

/** Draw a batch's card and poll its progress until every task is over. */
export function batchCard(message) {
  const id = message.data.batch_id;
  const card = { closed: false };
  cards.add(card);
  const counts = el("p", { class: "batch-counts" });
  const body = el("tbody");
  const results = el("div", { class: "results", hidden: "" });
  const opened = el("div", { class: "batch-jobs" }); // the tasks' jobs opened from their rows
  const root = el("section", { class: "msg assistant batch", "data-batch": id },
    el("header", { class: "job-head" }, tx("h3", "batch", { batch: id })), runsOnNote(message.data.runs_on) || "",
    counts, el("div", { class: "kg-table-wrap" }, el("table", { class: "kg-table batch-tasks" },
      el("thead", {}, el("tr", {}, el("th", {}, "#"), tx("th", "task"), tx("th", "status"), tx("th", "op"),
        tx("th", "stage"), el("th", {}, ""))), body)), opened, results);

  /** A row's Open button: the task's job card (stages, rounds, files, log, definition) below the table. */
  function openButton(task) {
    if (task.job_id === null || task.job_id === undefined) return "";
    const button = tx("button", "open_job", {}, { type: "button", class: "open-job", "data-job": task.job_id,
      "aria-expanded": "false" });
    const shown = () => opened.querySelector(`.msg.job[data-job="${task.job_id}"]`);
    if (shown()) {
      button.replaceChildren(tx("span", "close_job"));
      button.setAttribute("aria-expanded", "true");
    }
    button.addEventListener("click", async () => {
      const current = shown();
      if (current) {
        current.remove();
        button.replaceChildren(tx("span", "open_job"));
        button.setAttribute("aria-expanded", "false");
        return;
      }
      button.disabled = true;
      try {
        const job = await api(`/jobs/${task.job_id}`);
        const card = jobCard({ job_id: job.id, created_at: job.created_at,
          data: { runs_on: message.data.runs_on, options: {} } });
        opened.append(card);
        button.replaceChildren(tx("span", "close_job"));
        button.setAttribute("aria-expanded", "true");
        card.scrollIntoView({ block: "start" });
      } catch (error) {
        counts.replaceChildren(problem(error));
      } finally {
        button.disabled = false;
      }
    });
    return button;
  }

  async function poll() {
    if (card.closed) return;
    try {
      const batch = await api(`/batches/${id}`);
      body.replaceChildren(...batch.tasks.map((task) => el("tr", { "data-status": task.status },
        el("td", {}, String(task.index + 1)), el("td", { translate: "no" }, task.title),
        el("td", {}, el("span", { class: "badge", "data-status": task.status }, tx("span", `status_${task.status}`))),
        el("td", { translate: "no" }, task.op || "-"), el("td", {}, task.stage ? tv("stage", task.stage) : ""),
        el("td", {}, openButton(task)))));
      const parts = Object.entries(batch.counts).filter(([, n]) => n).map(([s, n]) => `${t(`status_${s}`)} ${n}`);
      if (batch.eta_s) parts.push(t("eta", { s: Math.round(batch.eta_s) }));
      counts.textContent = parts.join(" · ");
      root.dataset.status = batch.status;
      if (batch.status === "done" || batch.status === "cancelled") {
        cards.delete(card);
        await showReport(id, results);
        return;
      }
    } catch (error) {
      if (refused(error)) { // the token no longer admits the batch: say so and stop polling
        cards.delete(card);
        root.dataset.access = "revoked";
        counts.replaceChildren(tx("span", "revoked_batch"), " ", signInButton());
        return;
      }
      counts.replaceChildren(problem(error));
    }
    setTimeout(poll, POLL_MS);
  }
  poll();
  return root;
}

async function showReport(id, box) {
  const markdown = await fetchFile(`/batches/${id}/report?format=md`);
  const zip = tx("button", "download_zip", {}, { type: "button", class: "zip" });
  zip.addEventListener("click", async () => saveBlob(await fetchFile(`/batches/${id}/artifacts.zip`, true),
    `batch_${id}.zip`));
  box.replaceChildren(tx("h4", "report"), el("article", { class: "markdown", "data-source": "service" },
    renderMarkdown(markdown)),
    el("div", { class: "actions" }, zip));
  box.hidden = false;
}
