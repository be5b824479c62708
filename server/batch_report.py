"""A batch's report, the one a team sends upward: per task figures, totals, fast_p; as JSON, markdown or HTML."""

from __future__ import annotations

import html
import json
import math
from typing import Any

from sqlalchemy import Engine

from server.batches import aware, run_seconds
from storage import crud
from storage.models import Batch, BatchTask, Job

FAST_P = (0.0, 1.0, 1.5, 2.0)


def task_figures(engine: Engine, task: BatchTask, job: Job | None, status: str) -> dict[str, Any]:
    """Return one task's line: reading, verdict, rounds, best config, speedups, % roofline, time, reason."""
    report: dict[str, Any] = {}
    if job is not None and job.id is not None:
        stored = crud.get_artifact(engine, job.id, "report.json")
        try:
            report = json.loads(stored.content) if stored else {}
        except ValueError:
            report = {}
    best = report.get("best") or {}
    rounds = crud.list_rounds(engine, job.id) if job is not None and job.id is not None else []
    kept = [r for r in rounds if job is not None and r.index == job.best_round]
    seconds = None
    if job is not None and status in ("verified", "failed", "rejected", "cancelled"):
        ran = run_seconds(engine, job)  # its run, not its wait behind the batch's other tasks
        seconds = round(ran, 1) if ran is not None else None
    understood = report.get("understood") or {}
    kept_round = [r for r in report.get("rounds", []) if r.get("index") == report.get("best_round")]
    best_round: dict[str, Any] = kept_round[0] if kept_round else {}
    cases = ((best_round.get("profile") or {}).get("roofline") or {}).get("cases", [])
    device = report.get("device") or {}
    return {
        "index": task.index, "number": task.index + 1, "title": task.title, "job_id": task.job_id, "status": status,
        "op": (job.op_name if job else None) or understood.get("op"), "family": understood.get("family"),
        "reading": understood.get("pytorch"), "rounds": len(rounds),
        "best_config": kept[0].config if kept else None,
        "speedup_vs_eager": best.get("speedup_vs_eager"), "speedup_vs_compile": best.get("speedup_vs_compile"),
        "pct_of_roofline": best.get("pct_of_roofline"), "seconds": seconds,
        "coverage": job.coverage if job is not None else None,  # "reduced": no spec shape ran (the CPU's limit)
        "reason": (job.message if job is not None and status != "verified" else None),
        # The best version's measured cases on the roofline, and the machine's ceilings (for the scatter plot).
        "points": [{"intensity": c["intensity"], "tflops": c["tflops"], "peak_tflops": c.get("peak_tflops")}
                   for c in cases if c.get("intensity") and c.get("tflops")],
        "device": device.get("name"), "peak_gbs": device.get("peak_gbs"), "peak_tflops": device.get("peak_tflops"),
    }


def totals(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Return exec accuracy, fast_p against eager and torch.compile, and the geomean speedups."""
    n = len(lines) or 1
    verified = [line for line in lines if line["status"] == "verified"]

    def fast(key: str, p: float) -> float:
        return sum(1 for line in verified if p == 0.0 or (line[key] or 0.0) >= p) / n

    def geomean(key: str) -> float | None:
        values = [line[key] for line in verified if line[key]]
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None

    return {"tasks": len(lines), "verified": len(verified), "exec_accuracy": len(verified) / n,
            "fast_p_eager": {str(p): fast("speedup_vs_eager", p) for p in FAST_P},
            "fast_p_compile": {str(p): fast("speedup_vs_compile", p) for p in FAST_P},
            "geomean_vs_eager": geomean("speedup_vs_eager"), "geomean_vs_compile": geomean("speedup_vs_compile"),
            "measured": sum(1 for line in verified if line["speedup_vs_eager"]),
            "reduced": sum(1 for line in verified if line.get("coverage") == "reduced")}


def build(engine: Engine, batch: Batch, rows: list[tuple[BatchTask, Job | None, str]]) -> dict[str, Any]:
    """Assemble the report of a batch from its tasks, each with its job and status."""
    lines = [task_figures(engine, task, job, status) for task, job, status in rows]
    return {"batch": batch.id, "name": batch.name, "source": batch.source,
            "created_at": aware(batch.created_at).isoformat(), "totals": totals(lines), "tasks": lines}


COLUMNS = (("number", "#"), ("title", "task"), ("status", "status"), ("op", "op"), ("family", "family"),
           ("rounds", "rounds"), ("best_config", "best config"), ("speedup_vs_eager", "x eager"),
           ("speedup_vs_compile", "x torch.compile"), ("pct_of_roofline", "% roofline"), ("seconds", "time (s)"),
           ("reason", "why not verified"))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return " ".join(str(value).split())


def verified_line(totals_: dict[str, Any]) -> str:
    """Say how many tasks verified, and on what: a verdict on reduced shapes only is not one on the spec's shapes."""
    verified, tasks, reduced = totals_["verified"], totals_["tasks"], totals_.get("reduced", 0)
    if not reduced:
        return f"{verified} of {tasks} ({100 * verified / (tasks or 1):.0f}%)"
    return (f"on the spec's shapes: {verified - reduced} of {tasks}; on reduced shapes only: {reduced} (the spec's "
            "shapes were too large to run here)")


def timed_line(totals_: dict[str, Any]) -> str | None:
    """Say that nothing was timed, where nothing was (None where some task was)."""
    if totals_.get("measured"):
        return None
    return "not measured: no task was timed (the CPU interpreter checks accuracy only)"


def _summary(report: dict[str, Any]) -> list[tuple[str, str]]:
    t = report["totals"]
    pct = lambda share: f"{100 * share:.0f}%"  # noqa: E731
    untimed = timed_line(t)
    fast_e = untimed or ", ".join(f"p={p}: {pct(v)}" for p, v in t["fast_p_eager"].items())
    fast_c = untimed or ", ".join(f"p={p}: {pct(v)}" for p, v in t["fast_p_compile"].items())
    return [("verified", verified_line(t)),
            ("measured on an accelerator", str(t["measured"])),
            ("fast_p vs eager", fast_e), ("fast_p vs torch.compile", fast_c),
            ("geomean x eager", _cell(t["geomean_vs_eager"])),
            ("geomean x torch.compile", _cell(t["geomean_vs_compile"]))]


def to_markdown(report: dict[str, Any]) -> str:
    """Render the report as markdown tables."""
    lines = [f"# Batch {report['batch']}: {report['name'] or report['source']}", "", "| total | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in _summary(report)]
    lines += ["", "| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for task in report["tasks"]:
        lines.append("| " + " | ".join(_cell(task[k]).replace("|", "\\|") for k, _ in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def to_html(report: dict[str, Any]) -> str:
    """Render the report as a standalone HTML page (every value escaped; no script)."""
    e = html.escape
    summary = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _summary(report))
    head = "".join(f"<th>{e(h)}</th>" for _, h in COLUMNS)
    rows = "".join("<tr>" + "".join(f"<td>{e(_cell(t[k]))}</td>" for k, _ in COLUMNS) + "</tr>"
                   for t in report["tasks"])
    title = e(f"Batch {report['batch']}: {report['name'] or report['source']}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<h1>{title}</h1><table>{summary}</table><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table></body></html>")

