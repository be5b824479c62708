// A finished job's results: rounds, charts, the definition and log rendered, the four files, diffs, downloads.
import { fetchFile, api, saveBlob } from "./api.js";
import { t, tv, tx } from "./i18n.js";
import { rooflineChart, speedupChart } from "./charts.js";
import { el, highlightPython, renderDiff, renderMarkdown } from "./render.js";

const DOCS = ["definition.md", "optimization_log.md"];
const KINDS = ["_triton.py", "_baseline.py", "_accuracy.py", "_performance.py"];

/** Fill a job card's results box from the job and its files. */
export async function showResults(box, job) {
  const files = (await api(`/jobs/${job.id}/artifacts`)).filter((a) => a.round_index === null);
  const byName = new Map(files.map((f) => [f.name, f]));
  const report = byName.has("report.json") ? JSON.parse(await fetchFile(byName.get("report.json").url)) : null;
  box.replaceChildren();
  const summary = el("p", { class: "summary", "data-source": "service" }, job.error || job.message || "");
  box.append(tx("h4", "results"), summary);
  if (job.understood) box.append(el("details", { class: "understood-final" },
    el("summary", {}, tx("span", "understood")), el("pre", {}, job.understood)));
  if (job.rounds.length) box.append(roundsTable(job.rounds, report));
  if (report) box.append(charts(report));
  const tabs = [];
  for (const name of DOCS) {
    if (byName.has(name)) tabs.push({ label: name === DOCS[0] ? "definition" : "log", file: byName.get(name), md: true });
  }
  for (const suffix of KINDS) {
    const file = files.find((f) => f.name.endsWith(suffix) && !f.name.includes("/"));
    if (file) tabs.push({ name: file.name, file });
  }
  if (report) tabs.push({ label: "changes", diffs: report.rounds || [] });
  if (tabs.length) box.append(tabView(job.id, tabs));
  if (files.length) {
    const zip = tx("button", "download_zip", {}, { type: "button", class: "zip" });
    zip.addEventListener("click", async () => saveBlob(await fetchFile(`/jobs/${job.id}/artifacts.zip`, true),
      zipName(job)));
    box.append(el("div", { class: "actions" }, zip));
  }
}

/** Name a job's zip by its op, as the service does: relu_job_12.zip. */
function zipName(job) {
  const op = (job.op_name || "").replace(/[^A-Za-z0-9_-]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 64);
  return op ? `${op}_job_${job.id}.zip` : `job_${job.id}_artifacts.zip`;
}

function roundsTable(rounds, report) {
  const figures = new Map((report?.rounds || []).map((r) => [r.index, standing(report.rounds[0], r)]));
  const number = (value, digits = 2) => (value === null || value === undefined ? "-" : Number(value).toFixed(digits));
  const rows = rounds.map((r) => {
    const f = figures.get(r.index) || {};
    return el("tr", { class: r.accepted ? "kept" : "" }, el("td", {}, String(r.index)),
      el("td", {}, tv("edit", r.edit_type)), el("td", {}, el("code", {}, r.config)),
      el("td", {}, tv("acc", r.accuracy_status)), el("td", {}, number(r.speedup)), el("td", {}, number(f.compile)),
      el("td", {}, number(f.roofline, 1)), el("td", { "data-source": "service" }, r.verdict || ""));
  });
  return el("div", { class: "kg-table-wrap" }, el("table", { class: "kg-table rounds" },
    el("caption", {}, tx("span", "rounds_table")),
    el("thead", {}, el("tr", {}, ...["round", "edit_type", "config", "accuracy", "x_eager", "x_compile",
      "pct_roofline", "verdict"].map((key) => tx("th", key)))),
    el("tbody", {}, ...rows)));
}

/** Return a round's speedup vs torch.compile (geomean, against the first round's compile timings) and % roofline. */
function standing(first, round) {
  const key = (c) => JSON.stringify([c.shapes, c.dtypes]);
  const compiled = new Map((first.performance?.cases || []).filter((c) => c.compile_ms).map((c) => [key(c), c.compile_ms]));
  const ratios = (round.performance?.cases || []).filter((c) => compiled.has(key(c)) && c.triton_ms)
    .map((c) => compiled.get(key(c)) / c.triton_ms);
  const compile = ratios.length ? Math.exp(ratios.reduce((s, r) => s + Math.log(r), 0) / ratios.length) : null;
  const roofline = round.profile?.roofline?.worst?.pct_of_roofline ?? null;
  return { compile: round.speedup === null ? null : compile, roofline };
}

/** The charts, drawn again in the other language when it switches (their words are text, not keyed nodes). */
function charts(report) {
  const box = el("div", { class: "charts" });
  const draw = () => {
    if (box.dataset.drawn && !box.isConnected) {
      document.removeEventListener("kg-lang", draw); // the thread was replaced
      return;
    }
    box.dataset.drawn = "true";
    box.replaceChildren(...drawCharts(report));
  };
  document.addEventListener("kg-lang", draw);
  draw();
  return box;
}

function drawCharts(report) {
  const rounds = (report.rounds || []).filter((r) => r.repair_of === null || r.repair_of === undefined);
  const points = rounds.map((r) => ({ index: r.index, eager: r.speedup ?? null,
    compile: standing(rounds[0], r).compile, kept: r.index === report.best_round }));
  const speed = speedupChart(points, { title: t("chart_speedup"), eager: t("x_eager"), compile: t("x_compile"),
    round: t("round"), speedup: t("speedup"), empty: t("chart_empty") });
  const device = report.device || {};
  // The compute ceiling a case is held to: the tensor cores for 16-bit products, else the vector units.
  const held = rounds.flatMap((r) => r.profile?.roofline?.cases || []).find((c) => c.peak_tflops)?.peak_tflops;
  const ceiling = held || device.peak_tflops;
  const roof = device.peak_gbs && ceiling ? { peak_gbs: device.peak_gbs, peak_tflops: ceiling } : null;
  const marks = [];
  for (const r of rounds) {
    for (const c of r.profile?.roofline?.cases || []) {
      marks.push({ label: `${t("round")} ${r.index}`, intensity: c.intensity, tflops: c.tflops,
        kept: r.index === report.best_round });
    }
  }
  const roofChart = rooflineChart(marks, roof, { title: t("chart_roofline"), x: t("intensity"), y: t("tflops"),
    empty: t("chart_empty"), ridge: t("ridge"), share: t("of_roofline") });
  return [el("figure", {}, speed), el("figure", {}, roofChart)];
}

function tabView(jobId, tabs) {
  const list = el("div", { class: "tabs", role: "tablist" });
  const panel = el("div", { class: "tab-panel", role: "tabpanel", tabindex: "0" });
  const buttons = tabs.map((tab, index) => {
    const button = tab.label ? tx("button", tab.label, {}, { type: "button", role: "tab" })
      : el("button", { type: "button", role: "tab", translate: "no" }, tab.name);
    button.dataset.tab = tab.name || tab.label;
    button.addEventListener("click", () => select(index));
    button.addEventListener("keydown", (event) => {
      const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
      if (step) {
        const next = (index + step + tabs.length) % tabs.length;
        buttons[next].focus();
        select(next);
      }
    });
    return button;
  });
  list.append(...buttons);

  async function select(index) {
    buttons.forEach((b, i) => {
      b.setAttribute("aria-selected", String(i === index));
      b.tabIndex = i === index ? 0 : -1;
    });
    const tab = tabs[index];
    panel.replaceChildren(tx("p", "loading"));
    try {
      panel.replaceChildren(...await tabContent(tab));
    } catch (error) {
      panel.replaceChildren(el("p", { class: "error" }, String(error.message || error)));
    }
  }
  select(0);
  return el("div", { class: "files" }, list, panel);
}

async function tabContent(tab) {
  if (tab.diffs) {
    const shown = tab.diffs.filter((r) => r.diff);
    if (!shown.length) return [tx("p", "no_changes")];
    return shown.map((r) => el("section", { class: "diff" }, el("h5", {}, `${t("round")} ${r.index}: `,
      el("span", { "data-source": "service" }, r.verdict || "")), renderDiff(r.diff)));
  }
  const text = await fetchFile(tab.file.url);
  if (tab.md) return [el("article", { class: "markdown", "data-source": "service" }, renderMarkdown(text))];
  const copy = tx("button", "copy", {}, { type: "button", class: "copy" });
  copy.addEventListener("click", async () => {
    await navigator.clipboard.writeText(text);
    copy.replaceChildren(tx("span", "copied"));
  });
  const download = tx("button", "download", {}, { type: "button", class: "download" });
  download.addEventListener("click", () => saveBlob(new Blob([text], { type: "text/x-python" }), tab.file.name));
  return [el("div", { class: "file-actions" }, el("code", {}, tab.file.name), copy, download),
    el("pre", { class: "kg-code file" }, el("code", {}, highlightPython(text)))];
}
