"""The harness's report: JSON of every (task, form) result, a Markdown table, and one summary line per form."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

OUTCOMES = ("right", "wrong", "reference fault", "question", "reader exception", "no reference")
LABELS = {"right": "right", "wrong": "wrong", "reference fault": "reference fault", "question": "question",
          "reader exception": "exception", "no reference": "no reference"}


def summary(results: list[dict[str, Any]], form: str, total: int) -> str:
    """`right R, wrong W, question Q, exception E, no reference N of 166` for one form."""
    counts = Counter(r["outcome"] for r in results if r["form"] == form)
    return ", ".join(f"{LABELS[o]} {counts.get(o, 0)}" for o in OUTCOMES) + f" of {total}"


def detail(result: dict[str, Any]) -> str:
    """What the table says beside the outcome: the question, the wrong reading, the exception, or why no reference."""
    outcome = result["outcome"]
    if outcome == "question":
        return result["question"][:120]
    if outcome in ("wrong", "reference fault"):
        return f"`{result['pytorch']}` ({result['reason']})"
    if outcome == "reader exception":
        return f"{result['exception']}: {result['question'][:120]}"
    if outcome == "no reference":
        return result["reason"][:160]
    return f"`{result['pytorch']}`"


def markdown(results: list[dict[str, Any]], forms: list[str], total: int, meta: dict[str, Any]) -> str:
    lines = ["# The reader on TritonBench-T", "", f"Data: `{meta['data']}`; references: `{meta['references']}`.", ""]
    lines += [f"- **{form}**: {summary(results, form, total)}" for form in forms]
    lines += ["", "| task | form | outcome | detail |", "|---|---|---|---|"]
    for r in results:
        cell = detail(r).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['task']} | {r['form']} | {r['outcome']} | {cell} |")
    return "\n".join(lines) + "\n"


def write_report(out: Path, results: list[dict[str, Any]], forms: list[str], total: int,
                 meta: dict[str, Any]) -> list[str]:
    """Write report.json and report.md under out; return the summary lines."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"{form}: {summary(results, form, total)}" for form in forms]
    payload = meta | {"summary": dict(zip(forms, lines, strict=True)), "results": results}
    (out / "report.json").write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
    (out / "report.md").write_text(markdown(results, forms, total, meta), encoding="utf-8")
    return lines
