"""The TritonBench-T data, read at run time: its tasks, its two prompt forms, and its per-task reference files."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

TASKS_FILE = "TritonBench_T_v1.jsonl"  # one JSON array, despite the name
FORMS = {"simp": "TritonBench_T_simp_alpac_v1.json", "comp": "TritonBench_T_comp_alpac_v1.json"}
REFERENCE_DIR = "data/TritonBench_T_v1"  # in the benchmark's repository: `<file>` = reference + `#####` + test


@dataclass(frozen=True)
class Task:
    """One benchmark task: its name, reference file name, and each prompt form's instruction."""

    name: str
    file: str
    instructions: dict[str, str]  # form -> instruction


def load_tasks(data: Path) -> list[Task]:
    """The 166 tasks, each with the instruction of both prompt forms (matched on the task's description)."""
    entries = json.loads((data / TASKS_FILE).read_text(encoding="utf-8"))
    forms = {form: [e["instruction"] for e in json.loads((data / f).read_text(encoding="utf-8"))]
             for form, f in FORMS.items()}
    tasks = []
    for i, entry in enumerate(entries):
        probe = entry["description"].strip()[:60]
        chosen = {}
        for form, instructions in forms.items():
            same = instructions[i] if i < len(instructions) and probe in instructions[i] else None
            chosen[form] = same or next((t for t in instructions if probe in t), "")
        tasks.append(Task(entry["name"], entry["file"], chosen))
    return tasks


class References:
    """The benchmark's per-task reference files: a folder of them, or the benchmark's git repository (a mirror)."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.git = not (where / "abs.py").exists() and (where / "HEAD").exists()
        if not self.git and not where.is_dir():
            raise FileNotFoundError(f"no TritonBench-T reference files at {where}")

    def source(self, file: str) -> str | None:
        """The reference file's text, or None when it is not there."""
        if not self.git:
            path = self.where / file
            return path.read_text(encoding="utf-8") if path.exists() else None
        done = subprocess.run(["git", "--git-dir", str(self.where), "show", f"HEAD:{REFERENCE_DIR}/{file}"],
                              capture_output=True, text=True, check=False)
        return done.stdout if done.returncode == 0 else None

    def revision(self) -> str:
        if not self.git:
            return str(self.where)
        done = subprocess.run(["git", "--git-dir", str(self.where), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=False)
        return f"{self.where}@{done.stdout.strip()}"


def find_references(data: Path, given: Path | None, fallbacks: list[Path]) -> References:
    """The references given, else `<data>/TritonBench_T_v1`, else the first fallback that exists."""
    for where in ([given] if given else [data / "TritonBench_T_v1", *fallbacks]):
        if where.exists():
            return References(where)
    raise FileNotFoundError(
        "TritonBench-T's reference files (the benchmark repository's data/TritonBench_T_v1/*.py) are not in "
        f"{data}; pass --refs with that folder or a git mirror of thunlp/TritonBench")
