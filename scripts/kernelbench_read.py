"""Read every KernelBench task file with the offline reader and record, per task, whether it read, asked or refused.

    .venv/bin/python scripts/kernelbench_read.py TASKS OUT [--only 19_ReLU 23_Softmax] [--timeout-s 300]

TASKS is a folder of KernelBench task files (a level's `*.py`: a `class Model(nn.Module)` with `get_inputs` and
`get_init_inputs`), extracted outside the repository, e.g. with `git show HEAD:KernelBench/level1/19_ReLU.py` from a
mirror of ScalingIntelligence/KernelBench. Nothing of the benchmark is copied into the repository. Each task is read
in a subprocess of its own (its own scratch work dir, a wall-clock limit), so a hang or a crash stops only that task.
OUT gets kernelbench_read.json (one row a task, written after each task) and kernelbench_read.md (counts per status,
the table, the questions and refusals grouped by their first sentence). A rerun skips the tasks already in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STATUSES = ["read", "question", "refused", "error", "timeout"]
TEXT_CHARS = 300
# A question that says the IR cannot express what the code does is a refusal, not something the user can answer.
REFUSAL = re.compile(r"the IR does not (have|carry)|not supported|unsupported|cannot be expressed", re.IGNORECASE)


def name_key(name: str) -> tuple[int, str]:
    """Name order: by the number a KernelBench name starts with, then the name."""
    number = re.match(r"\d+", name)
    return (int(number.group()) if number else sys.maxsize, name)


def task_files(folder: Path, only: list[str] | None = None) -> list[Path]:
    """The folder's `*.py` task files in name order."""
    files = sorted(folder.glob("*.py"), key=lambda path: name_key(path.stem))
    if only:
        files = [path for path in files if path.stem in only or path.name in only]
    return files


def classify(outcome_status: str, question: str | None) -> str:
    """read, question or refused for one reader outcome."""
    if outcome_status == "read":
        return "read"
    return "refused" if question and REFUSAL.search(question) else "question"


def read_one(path: Path, work_dir: Path) -> dict[str, object]:
    """Read one task file (in this process) into a row without its name and time."""
    from agent.reader.outcome import read_outcomes

    outcomes = read_outcomes(path.read_text(encoding="utf-8"), work_dir)
    if not outcomes:
        return {"status": "error", "text": "the reader gave no outcome"}
    first = outcomes[0]
    status = classify(first.status, first.question)
    row: dict[str, object] = {"status": status, "text": (first.question or "")[:TEXT_CHARS]}
    if first.reading is not None:
        row["pytorch"] = first.reading.pytorch
        row["inputs"] = [f"{item.name}{item.shapes[0] if item.shapes else ''}" for item in first.reading.inputs]
    return row


def _child(path: Path, result: Path) -> int:
    """Subprocess entry: read one task into the result file; any exception becomes an error row."""
    with tempfile.TemporaryDirectory(prefix="kernelbench-read-") as scratch:
        try:
            row = read_one(path, Path(scratch))
        except Exception as exc:  # noqa: BLE001 - a crash of the reader is what this row records
            row = {"status": "error", "text": f"{type(exc).__name__}: {exc}"[:TEXT_CHARS]}
    result.write_text(json.dumps(row), encoding="utf-8")
    return 0


def run_task(path: Path, timeout_s: float) -> dict[str, object]:
    """Read one task in a subprocess of its own under a wall-clock limit; the row with its name and seconds."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kernelbench-row-") as folder:
        result = Path(folder) / "row.json"
        process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", str(path), str(result)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True, cwd=ROOT)
        try:
            _, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the child's session: its sandbox and tracer go with it
            process.communicate()
            row: dict[str, object] = {"status": "timeout", "text": f"no outcome after {timeout_s:g} s"}
        else:
            if result.exists():
                row = json.loads(result.read_text(encoding="utf-8"))
            else:
                tail = stderr.strip().splitlines()[-1:] or [""]
                row = {"status": "error", "text": f"exit {process.returncode}: {tail[0]}"[:TEXT_CHARS]}
    return {"name": path.stem, **row, "seconds": round(time.monotonic() - started, 1)}


def first_sentence(text: str) -> str:
    """The first sentence of a question, its numbers and quoted values blanked so that one class reads as one."""
    sentence = re.split(r"(?<=[.?!])\s", text.strip(), maxsplit=1)[0]
    sentence = re.sub(r"\d+(\.\d+)?", "N", sentence)
    return re.sub(r"'[^']*'", "'…'", sentence)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(rows: list[dict[str, object]], total: int) -> str:
    """The markdown summary: counts, the table, the failure classes."""
    counts = Counter(str(row["status"]) for row in rows)
    lines = [f"# KernelBench, read by the offline reader: {len(rows)} of {total} tasks ran", "",
             "| status | tasks |", "|---|---|"]
    lines += [f"| {status} | {counts.get(status, 0)} |" for status in STATUSES]
    lines += ["", "| task | status | s | PyTorch reading, or the question / error |", "|---|---|---|---|"]
    for row in rows:
        what = row.get("pytorch") if row["status"] == "read" else str(row.get("text", "")).split("\n")[0]
        lines.append(f"| {row['name']} | {row['status']} | {row['seconds']} | {_cell(what)} |")
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in rows:
        if row["status"] != "read":
            groups[(str(row["status"]), first_sentence(str(row.get("text", ""))))].append(str(row["name"]))
    lines += ["", "## Questions, refusals and errors by first sentence", "",
              "| status | tasks | first sentence | names |", "|---|---|---|---|"]
    for (status, sentence), names in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"| {status} | {len(names)} | {_cell(sentence)} | {', '.join(names)} |")
    return "\n".join(lines) + "\n"


def load_rows(path: Path) -> list[dict[str, object]]:
    """The rows of an earlier run's JSON, none when there is none."""
    if not path.exists():
        return []
    rows: list[dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))["rows"]
    return rows


def write(out: Path, rows: list[dict[str, object]], folder: Path, total: int) -> None:
    """Write the JSON (every row so far, in name order) and the markdown summary."""
    rows = sorted(rows, key=lambda row: name_key(str(row["name"])))
    report = {"tasks_folder": str(folder), "tasks": total, "counts": dict(Counter(str(r["status"]) for r in rows)),
              "rows": rows}
    (out / "kernelbench_read.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (out / "kernelbench_read.md").write_text(render(rows, total), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child(Path(argv[1]), Path(argv[2]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", type=Path, help="folder of KernelBench task files (*.py)")
    parser.add_argument("out", type=Path, help="folder for kernelbench_read.json and kernelbench_read.md")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME", help="task names (default: all)")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="wall-clock seconds for one task")
    parser.add_argument("--quiet", action="store_true", help="no per-task progress on stderr")
    args = parser.parse_args(argv)
    if not args.tasks.is_dir():
        parser.error(f"no such folder: {args.tasks}")
    files = task_files(args.tasks, args.only)
    if args.only and len(files) < len(set(args.only)):
        found = {path.stem for path in files} | {path.name for path in files}
        parser.error(f"no such tasks: {', '.join(sorted(set(args.only) - found))}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = load_rows(args.out / "kernelbench_read.json")
    done = {row["name"] for row in rows}
    for number, path in enumerate(files, start=1):
        if path.stem in done:
            continue
        row = run_task(path, args.timeout_s)
        rows.append(row)
        write(args.out, rows, args.tasks, len(files))
        if not args.quiet:
            print(f"[{number}/{len(files)}] {path.stem}: {row['status']} ({row['seconds']} s)", file=sys.stderr)
    write(args.out, rows, args.tasks, len(files))
    counts = Counter(str(row["status"]) for row in rows)
    print(f"{len(rows)} tasks: " + ", ".join(f"{counts.get(status, 0)} {status}" for status in STATUSES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
