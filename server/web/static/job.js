// A job in the thread: its stage timeline followed live (resumable), then its results as people read them.
import { ApiError, api, authHeaders, failure } from "./api.js";
import { refused, signInButton } from "./feedback.js";
import { duration, t, timeEl, tx } from "./i18n.js";
import { el } from "./render.js";
import { showResults } from "./results.js";

const STAGES = ["requirements", "definition", "generate", "accuracy", "performance", "profile", "log", "diagnose",
  "edit"];
const FINAL = ["verified", "failed", "rejected", "cancelled"];
const OTHER_STAGES = ["queued", "classify", "search", "repair", "finalize", "resume", "restart"];
const DEFAULT_ROUNDS = 5;
const cards = new Set();

/** Stop following every job card on the page (the thread is being replaced). */
export function closeJobCards() {
  for (const card of cards) card.close();
  cards.clear();
}

setInterval(() => {
  for (const card of cards) card.tick();
}, 1000);

/** Say where a job started here runs, before Start: the CPU interpreter checks accuracy and times nothing. */
export function runsOnNote(runsOn) {
  if (!runsOn) return null;
  const note = el("p", { class: "runs-on", "data-timed": String(Boolean(runsOn.timed)) });
  if (runsOn.asked) note.append(tx("span", "asked_device", { asked: runsOn.asked.toUpperCase() }), " ");
  note.append(runsOn.timed ? tx("span", "runs_on_accelerator", { name: runsOn.name }) : tx("span", "cpu_only"));
  return note;
}

/** Draw a job's card and start following its events. */
export function jobCard(message) {
  const card = new JobCard(message);
  cards.add(card);
  card.follow();
  return card.root;
}

class JobCard {
  constructor(message) {
    this.id = message.job_id;
    const options = message.data.options || {};
    const reading = message.data.reading || {};
    this.rounds = options.rounds || reading.max_rounds || DEFAULT_ROUNDS;
    this.runsOn = message.data.runs_on || null;
    this.cpu = this.runsOn !== null && !this.runsOn.timed; // round 0 only: its accuracy, nothing timed
    this.lastSeq = 0;
    this.round = 0;
    this.status = "queued";
    this.startedAt = Date.parse(message.created_at);
    this.endedAt = null;
    this.closed = false;
    this.abort = new AbortController();
    this.badge = el("span", { class: "badge", "data-status": "queued" });
    this.badge.append(tx("span", "status_queued"));
    this.clock = el("span", { class: "elapsed" });
    this.cancelButton = tx("button", "cancel", {}, { type: "button", class: "cancel" });
    this.cancelButton.addEventListener("click", () => this.cancel());
    this.progress = el("progress", { max: "100", value: "0", "data-i18n-aria": "progress",
      "aria-label": t("progress") });
    this.roundLabel = el("span", { class: "round-label" });
    this.stageBar = el("ol", { class: "stages" },
      ...STAGES.map((stage) => tx("li", `stage_${stage}`, {}, { "data-stage": stage })));
    this.timeline = el("ol", { class: "timeline" });
    this.notice = el("p", { class: "notice", role: "status" });
    this.results = el("div", { class: "results", hidden: "" });
    const header = el("header", { class: "job-head" }, tx("h3", "job", { job: this.id }), this.badge,
      el("span", { class: "clock" }, tx("span", "elapsed"), " ", this.clock), this.cancelButton);
    this.root = el("section", { class: "msg assistant job", "data-job": this.id }, header,
      runsOnNote(this.runsOn) || "", el("div", { class: "progress-row" }, this.progress, this.roundLabel),
      this.stageBar, this.notice,
      el("details", { class: "timeline-box", open: "" }, el("summary", {}, tx("span", "stage_log")), this.timeline),
      this.results);
    this.tick();
  }

  close() {
    this.closed = true;
    this.abort.abort();
  }

  tick() {
    const end = this.endedAt ?? Date.now();
    const seconds = Math.max(0, Math.round((end - this.startedAt) / 1000));
    if (seconds !== this.shownSeconds) this.clock.replaceChildren(duration(seconds));
    this.shownSeconds = seconds;
  }

  async follow() {
    while (!this.closed) {
      try {
        const headers = { Accept: "text/event-stream", ...authHeaders() };
        if (this.lastSeq) headers["Last-Event-ID"] = String(this.lastSeq);
        const response = await fetch(`/jobs/${this.id}/events`, { headers, signal: this.abort.signal });
        if (!response.ok) throw await failure(response);
        this.notice.textContent = "";
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const message = parse(buffer.slice(0, cut));
            buffer = buffer.slice(cut + 2);
            // The service ends the stream of a token revoked meanwhile with an `error` event (401): say so, and
            // stop, rather than reconnect for ever with a token that is refused.
            if (message.event === "error" && message.data?.status === 401) return this.revoke();
            this.handle(message);
          }
        }
        if (FINAL.includes(this.status)) return;
      } catch (error) {
        if (this.closed || error.name === "AbortError") return;
        if (refused(error)) return this.revoke();
        if (error instanceof ApiError && error.status === 404) {
          this.notice.replaceChildren(tx("span", "job_missing"));
          return;
        }
      }
      if (this.closed) return;
      this.notice.replaceChildren(tx("span", "reconnecting")); // the server restarted or the network dropped
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  handle(message) {
    if (!message.event) return;
    if (message.event === "end") {
      this.finish(message.data.status);
      return;
    }
    const data = message.data;
    this.lastSeq = Math.max(this.lastSeq, Number(message.id) || data.seq || 0);
    const stage = message.event;
    if (this.status === "queued" && stage !== "queued") this.setStatus("running");
    const round = /\bround (\d+)/.exec(data.message || "");
    if (round) this.round = Number(round[1]);
    const label = STAGES.includes(stage) || OTHER_STAGES.includes(stage) ? tx("strong", `stage_${stage}`)
      : el("strong", { translate: "no" }, stage);
    // A report of several lines (the reading: "Understood as: ...") goes under its stage's name, not on after it.
    const text = data.message || "";
    const block = text.includes("\n");
    this.timeline.append(el("li", { "data-stage": stage, "data-seq": data.seq },
      timeEl(new Date(data.created_at)), " ", label, block ? "" : ": ",
      el(block ? "div" : "span", { class: block ? "event-text block" : "event-text", "data-source": "service" },
        text)));
    this.markStage(stage);
  }

  markStage(stage) {
    const index = STAGES.indexOf(stage);
    if (index < 0) return;
    for (const item of this.stageBar.children) {
      const at = STAGES.indexOf(item.dataset.stage);
      item.className = at < index ? "done" : at === index ? "active" : "";
    }
    this.showRound();
    // Round 0 (the first version) and then up to `rounds` optimization rounds; on the CPU, round 0 alone.
    const total = this.cpu ? 1 : this.rounds + 1;
    const share = (Math.min(this.round, total - 1) + (index + 1) / STAGES.length) / total;
    this.progress.value = String(Math.min(99, Math.round(100 * share)));
  }

  showRound() {
    const label = this.cpu ? tx("span", "round_cpu")
      : this.round === 0 ? tx("span", "round_first", { n: this.rounds })
        : tx("span", "round_of", { k: Math.min(this.round, this.rounds), n: this.rounds });
    this.roundLabel.replaceChildren(label);
  }

  /** The token no longer admits the job: stop following, say so, and offer to sign in again. */
  revoke() {
    this.closed = true;
    this.abort.abort();
    cards.delete(this);
    this.root.dataset.access = "revoked";
    this.cancelButton.disabled = true; // the service would refuse it for the same token
    this.notice.replaceChildren(tx("span", "revoked"), " ", signInButton());
  }

  setStatus(status) {
    this.status = status;
    this.badge.dataset.status = status;
    this.badge.replaceChildren(tx("span", `status_${status}`));
  }

  finish(status) {
    this.setStatus(status);
    this.endedAt = this.endedAt ?? Date.now();
    this.progress.value = "100";
    this.cancelButton.disabled = true;
    for (const item of this.stageBar.children) if (item.className === "active") item.className = "done";
    cards.delete(this);
    this.loadResults().catch((error) => {
      if (refused(error)) this.revoke();
      else this.notice.textContent = String(error.message || error);
    });
  }

  async cancel() {
    this.cancelButton.disabled = true;
    try {
      const answer = await api(`/jobs/${this.id}/cancel`, { method: "POST" });
      this.setStatus(answer.status);
    } catch (error) {
      this.notice.textContent = String(error.message || error);
    }
  }

  async loadResults() {
    const job = await api(`/jobs/${this.id}`);
    this.endedAt = Date.parse(job.updated_at);
    this.tick();
    await showResults(this.results, job);
    this.results.hidden = false;
  }
}

/** Parse one server-sent event block into {id, event, data}. */
function parse(block) {
  const message = {};
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const cut = line.indexOf(":");
    const field = cut < 0 ? line : line.slice(0, cut);
    const value = cut < 0 ? "" : line.slice(cut + 1).replace(/^ /, "");
    if (field === "data") message.data = JSON.parse(value);
    else message[field] = value;
  }
  return message;
}
