"""Shared helpers: what was understood so far, names, and readable validation errors."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from agent.expr import Call, Expr, parse_formula


@dataclass
class Seen:
    """What has been understood so far, to say in error messages."""

    op: str = ""
    inputs: dict[str, list[list[int]]] = field(default_factory=dict)
    dtypes: list[str] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        """Say what was understood, for the end of an error message."""
        shown = [f"{n} {s[0] if len(s) == 1 else s}" for n, s in self.inputs.items()]
        inputs = ", ".join(shown) or (f"none with a shape (names seen: {', '.join(self.candidates)})"
                                      if self.candidates else "none with a shape")
        dtypes = f"; dtypes: {', '.join(self.dtypes)}" if self.dtypes else ""
        return f"Understood so far: op: {self.op or 'none recognised'}; inputs: {inputs}{dtypes}."


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    """Replace the given spans by spaces, keeping every other position."""
    chars = list(text)
    for start, end in spans:
        for i in range(max(start, 0), min(end, len(chars))):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def line_spans(text: str, line_numbers: set[int]) -> list[tuple[int, int]]:
    """Return the spans of the numbered lines."""
    spans, pos = [], 0
    for i, line in enumerate(text.split("\n")):
        if i in line_numbers:
            spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def identifier(raw: str) -> str | None:
    """Turn `BiasAdd (Broadcast)` or `SwiGLU` into a snake_case name, or None if nothing usable."""
    head = re.split(r"[(\[:,;]", raw.strip())[0]
    head = re.sub(r"(?<=[a-z0-9])(?=[A-Z][a-z])", "_", head)
    name = re.sub(r"[^A-Za-z0-9]+", "_", head).strip("_").lower()
    if not name or len(name) > 48 or not re.search(r"[a-z]", name):
        return None
    name = f"op_{name}" if name[0].isdigit() else name
    return f"{name}_op" if keyword.iskeyword(name) else name


def derived_name(formula: str, inputs: list[str]) -> str:
    """Name an operator after the functions its formula calls, innermost first."""
    order: list[str] = []

    def visit(e: Expr) -> None:
        if isinstance(e, Call):
            for a in e.args:
                visit(a)
            if e.fn not in order:
                order.append(e.fn)

    visit(parse_formula(formula))
    parts = ["bias_add" if p == "add" and "bias" in inputs else p for p in order[:4]]
    return "_".join(parts) or "identity"


def validation_message(exc: ValidationError) -> str:
    """Turn a pydantic error into one readable line."""
    problems = []
    for err in exc.errors():
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        loc = ".".join(str(p) for p in err.get("loc", ()))
        problems.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(problems)
