"""Take code and JSON out of a model's answer: fenced blocks, file names, reasoning to skip."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

# Reasoning models (DeepSeek-R1, Qwen3, ...) may put their thinking before the answer.
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_FILE_NAME = re.compile(r"([A-Za-z_][\w-]*\.py)\b")


class ExtractionError(ValueError):
    """The answer holds no usable code or JSON; the message says what was found."""


@dataclass
class Block:
    """One fenced block: its info string, the line before it, its text."""

    info: str
    before: str
    text: str
    closed: bool

    def file_name(self) -> str | None:
        """Return the file name the block is labelled with (info string, line before or first comment)."""
        first = self.text.lstrip().splitlines()[0] if self.text.strip() else ""
        for source in (self.info, self.before, first if first.startswith("#") else ""):
            names = set(_FILE_NAME.findall(source))
            if len(names) == 1:  # prose naming several files does not label the block
                return names.pop()
        return None


def strip_reasoning(text: str) -> str:
    """Drop <think>…</think> sections."""
    return _THINK.sub("", text)


def blocks(text: str) -> list[Block]:
    """Split an answer into its fenced blocks; an unclosed last block runs to the end."""
    lines = strip_reasoning(text).splitlines()
    found: list[Block] = []
    i, before = 0, ""
    while i < len(lines):
        match = _OPEN.match(lines[i])
        if match is None:
            if lines[i].strip():
                before = lines[i]
            i += 1
            continue
        fence = match.group("fence")
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                closed = True
                break
            body.append(lines[i])
            i += 1
        found.append(Block(info=match.group("info").strip(), before=before, text="\n".join(body) + "\n",
                           closed=closed))
        before = ""
        i += 1
    return found


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def extract_files(text: str, names: list[str]) -> dict[str, str]:
    """Return the Python files of an answer by name; one unnamed block counts as the first name."""
    found = [b for b in blocks(text) if b.info.split()[:1] in ([], ["python"], ["py"], ["python3"])
             or b.file_name() is not None]
    files: dict[str, str] = {}
    unnamed: list[Block] = []
    for block in found:
        name = block.file_name()
        if name in names:
            files[name] = block.text
        else:
            unnamed.append(block)
    if not files:
        python = [b for b in unnamed if _parses(b.text)]
        # No block parses: still take the largest, so the answer is re-asked with its syntax error.
        chosen = python or [b for b in unnamed if b.info.split()[:1] in (["python"], ["py"], ["python3"])]
        if chosen:
            files[names[0]] = max(chosen, key=lambda b: len(b.text)).text
        elif not found and _parses(strip_reasoning(text)) and "def " in text:
            files[names[0]] = strip_reasoning(text).strip() + "\n"  # a bare file with no fences
    return files


def extract_code(text: str, name: str) -> str:
    """Return the one file an answer was asked for, or raise ExtractionError saying what was there."""
    files = extract_files(text, [name])
    if name not in files:
        count = len(blocks(text))
        raise ExtractionError(
            f"no Python code block for {name} was found ({count} fenced block(s) in the answer); "
            f"answer with the whole file in one ```python block"
        )
    return files[name]


def extract_json(text: str) -> object:
    """Return the first JSON object of an answer: bare, fenced, or embedded in prose."""
    cleaned = strip_reasoning(text).strip()
    candidates = [b.text for b in blocks(cleaned) if b.info.split()[:1] in ([], ["json"])] + [cleaned]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    start = cleaned.find("{")
    decoder = json.JSONDecoder()
    while start != -1:
        try:
            value, _ = decoder.raw_decode(cleaned[start:])
            return value
        except json.JSONDecodeError:
            start = cleaned.find("{", start + 1)
    raise ExtractionError("the answer holds no JSON object; answer with one JSON object only")
