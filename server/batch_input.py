"""Split what a batch request carries (a task book, a list of specs, JSONL records) into titled tasks."""

from __future__ import annotations

import json

from agent.reader import split_tasks
from agent.reader.taskbook import task_headings
from server.schemas import storable

MAX_TASKS = 500
TITLE_CHARS = 60  # of a spec's first line, in a title that a report's table shows


class BatchInputError(ValueError):
    """A batch request whose tasks cannot be taken (the message says which line or item, and why)."""


def taskbook_tasks(text: str) -> list[tuple[str, str]]:
    """Return (title, spec) per task of a task book (one task for a plain spec)."""
    tasks = split_tasks(text)
    titles = [title for _, _, title in task_headings(text.replace("\r\n", "\n"))] if len(tasks) > 1 else []
    return [(titles[i] if i < len(titles) else f"task {i + 1}", task) for i, task in enumerate(tasks)]


def jsonl_tasks(text: str) -> list[tuple[str, str]]:
    """Return (title, spec) per JSONL record `{"spec": ..., "name"?: ..., "reference"?: code}`; skip blank lines."""
    tasks = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BatchInputError(f"jsonl line {number}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("spec"), str) or not record["spec"].strip():
            raise BatchInputError(f'jsonl line {number}: a record needs a non-empty "spec" string')
        unknown = set(record) - {"spec", "name", "reference"}
        if unknown:
            raise BatchInputError(f"jsonl line {number}: unknown field(s) {', '.join(sorted(unknown))} "
                                  "(a record has spec and, optionally, name and reference)")
        reference = record.get("reference")
        if reference is not None and (not isinstance(reference, str) or not reference.strip()):
            raise BatchInputError(f"jsonl line {number}: a reference is PyTorch code, as a non-empty string")
        name = record.get("name")
        spec = record["spec"] if reference is None else with_reference(record["spec"], reference)
        tasks.append((name if isinstance(name, str) and name.strip() else titled(f"line {number}", record["spec"]),
                      spec))
    return tasks


def with_reference(spec: str, reference: str) -> str:
    """Append the record's PyTorch reference to its spec as a code block: the reader makes the code the reference."""
    return f"{spec.rstrip()}\n\n```python\n{reference.strip()}\n```\n"


def spec_tasks(specs: list[str]) -> list[tuple[str, str]]:
    """Return (title, spec) per spec of a list."""
    return [(titled(f"spec {i + 1}", spec), spec) for i, spec in enumerate(specs)]


def titled(place: str, spec: str) -> str:
    """Return a title for an unnamed task: where it came from and the start of its spec's first line."""
    head = " ".join(next((line for line in spec.splitlines() if line.strip()), "").split())
    return f"{place}: {head[:TITLE_CHARS]}{'…' if len(head) > TITLE_CHARS else ''}" if head else place


def checked(tasks: list[tuple[str, str]], max_spec_bytes: int) -> list[tuple[str, str]]:
    """Refuse an empty batch, too many tasks, or a task over the spec size limit."""
    if not tasks:
        raise BatchInputError("the batch holds no task")
    if len(tasks) > MAX_TASKS:
        raise BatchInputError(f"the batch holds {len(tasks)} tasks; the limit is {MAX_TASKS}")
    for title, spec in tasks:
        for text in (title, spec):
            try:
                storable(text)  # JSONL escapes (\u0000, lone surrogates) decode only here
            except ValueError as exc:
                raise BatchInputError(f"{title[:80]!r}: {exc}") from None
        if not spec.strip():
            raise BatchInputError(f"{title}: the spec is blank")
        if len(spec.encode()) > max_spec_bytes:
            raise BatchInputError(f"{title}: {len(spec.encode())} bytes is more than the limit of {max_spec_bytes}")
    return tasks
