"""Split a task book with several tasks into one self-contained text per task."""

from __future__ import annotations

import re

_HEADING = re.compile(r"^(?P<level>#{1,6})\s*(?P<title>.*?)\s*#*\s*$")
_TASK_TITLE = re.compile(
    r"^(?:\*\*)?\s*(?:任务|题目|算子|task|operator|op|kernel)\s*(?P<num>\d+|[一二三四五六七八九十]+)?\s*"
    r"(?:[:：.、\-–]\s*(?P<rest>.*))?$",
    re.I,
)
_NUMBERED = re.compile(r"^(?:\d+|[一二三四五六七八九十]+)\s*[.、)）:：]\s*(?P<rest>\S.*)$")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")


def _task_title(title: str) -> str | None:
    """Return the task's own title when a heading introduces a task, else None."""
    match = _TASK_TITLE.match(title.strip())
    if match and (match.group("num") or match.group("rest") is not None):
        return (match.group("rest") or "").strip(" *")
    return None


def task_headings(text: str) -> list[tuple[int, int, str]]:
    """List (line index, heading level, title) of the headings that start a task."""
    lines = text.split("\n")
    found: list[tuple[int, int, str]] = []
    for i, line in enumerate(lines):
        match = _HEADING.match(line)
        if match:
            title = _task_title(match.group("title"))
            if title is not None:
                found.append((i, len(match.group("level")), title))
    if found:
        return found
    numbered: list[tuple[int, int, str]] = []
    for i, line in enumerate(lines):
        heading = _HEADING.match(line)
        deep = heading is not None and len(heading.group("level")) > 1
        numbered_title = _NUMBERED.match(heading.group("title")) if heading and deep else None
        if heading and numbered_title:
            numbered.append((i, len(heading.group("level")), numbered_title.group("rest")))
    levels = [level for _, level, _ in numbered]
    if len(numbered) >= 2 and len(set(levels)) == 1:
        return numbered
    return []


def task_title(text: str) -> str | None:
    """Return the title of the first task heading (`## Task: rms_norm` -> `rms_norm`), if any."""
    headings = task_headings(text)
    return headings[0][2] if headings and headings[0][2] else None


def split_tasks(text: str) -> list[str]:
    """Split a task book into one text per task, each with the book's shared header lines."""
    lines = text.replace("\r\n", "\n").split("\n")
    headings = task_headings("\n".join(lines))
    if len(headings) < 2:
        return [text]
    level = min(h[1] for h in headings)
    starts = {h[0] for h in headings}
    shared: list[str] = []
    tasks: list[list[str]] = []
    current: list[str] | None = None
    for i, line in enumerate(lines):
        heading = _HEADING.match(line)
        if i in starts:
            current = [line]
            tasks.append(current)
            continue
        if heading and len(heading.group("level")) <= level:
            current = None  # a section such as "## 通用要求" applies to every task
            if len(heading.group("level")) > 1:
                shared.append(line)
            continue
        if _RULE.match(line):
            continue
        if current is not None:
            current.append(line)
        elif not (heading and len(heading.group("level")) == 1):
            shared.append(line)
    header = "\n".join(shared).strip()
    return [(header + "\n\n" if header else "") + "\n".join(task).strip() + "\n" for task in tasks]
