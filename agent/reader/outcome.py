"""Read a text (one spec, or every task of a task book) into outcomes that `kernelgen read` and `POST /read` show."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from agent.reader.read import read_spec
from agent.reader.taskbook import split_tasks, task_headings
from agent.reading import Reading
from agent.spec import SpecError


class ReadOutcome(BaseModel):
    """How one spec was understood, or the question it raised; nothing is generated."""

    task: str = Field(default="", description="The task's heading in a task book; empty for a single spec.")
    status: Literal["read", "question"]
    understood: str | None = Field(default=None, description="The 'Understood as' block, as a job shows it.")
    reading: Reading | None = Field(default=None, description="The same reading, field by field.")
    question: str | None = Field(default=None, description="What the reader needs to know; null when it read.")
    accounting: str | list[str] = Field(default="accounted", description="'accounted' when every word of the spec "
                                        "is used by the reading (or is filler; 'code' for a code spec), else the "
                                        "stretches of the text the reading left out, each with why.")


def read_outcomes(text: str, work_dir: Path) -> list[ReadOutcome]:
    """Read each task of the text (one for a plain spec) in its own folder under work_dir."""
    tasks = split_tasks(text)
    headings = [title for _, _, title in task_headings(text.replace("\r\n", "\n"))] if len(tasks) > 1 else []
    outcomes = []
    for number, task in enumerate(tasks, start=1):
        title = (headings[number - 1] or f"task {number}") if len(headings) == len(tasks) else \
            f"task {number}" if len(tasks) > 1 else ""
        try:
            spec = read_spec(task, work_dir=work_dir / f"task-{number}")
        except SpecError as exc:
            left_out = getattr(exc, "unaccounted", [])
            outcomes.append(ReadOutcome(task=title, status="question", question=str(exc),
                                        accounting=left_out or "not reached"))
            continue
        understood = spec.reading.render() if spec.reading is not None else spec.formula
        outcomes.append(ReadOutcome(task=title, status="read", understood=understood, reading=spec.reading,
                                    accounting=spec.reading.accounting if spec.reading else "accounted"))
    return outcomes
