"""Values given to names: `n 取 4 / 16`, `tokens in {2048, 8192}`, `(rows, cols) in {(a, b), ...}`, `eps = 1e-5`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.ir.expr import Const
from agent.ir.parse import parse_text
from agent.ir.types import IRError
from agent.reader.lexer import inside_call, size_value
from agent.reader.text import Ledger

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?[kKmM]?"
_CONNECT = r"(?:=|:|\bin\b|∈|取值为|取值|取|为|是|\bis\b|\bof\b|\bequals?\b|=\s*\{)"
_ALTS = rf"{_NUM}(?:\s*(?:/|\bor\b|或|、|,)\s*{_NUM})*"
_SINGLE = re.compile(
    rf"(?<![\w.\[])(?P<name>[A-Za-z_]\w*)\s*{_CONNECT}\s*(?P<value>\{{[^{{}}]*\}}|\[[^\[\]]*\]|{_ALTS})(?!\w|\.\w)"
    r"(?!\s*(?:\*\*|[-+*/^@(]))",
    re.A | re.I,
)
_PARAM_SETTING = re.compile(rf"(?<![\w.])(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>{_NUM})(?!\w|\.\w)")
_CONSTANT = re.compile(r"(?<![\w.])(?P<name>[A-Za-z_]\w*)\s*=\s*"
                       r"(?P<expr>(?:[\d.eE+\-*/() ]|sqrt|pi|math\.)+)(?=[,;，。\n]|$)")
# A bare `eps 1e-5` / `slope 0.2` after a known parameter word.
_LOOSE = re.compile(rf"(?<![\w.])(?P<name>[A-Za-z_]\w*)\s+(?P<value>{_NUM})(?![\w.\]])", re.A)
_TUPLE = re.compile(
    r"\((?P<names>\s*[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+\s*)\)\s*(?:in|∈|取值为|取值|取|为|=)\s*"
    r"\{?(?P<values>(?:\s*\([^()]*\)\s*(?:,|、|/|或|or|and|和)?)+)\}?", re.I)


@dataclass
class Binding:
    """The values a name takes: one value, or several (each a separate case)."""

    name: str
    values: list[float]
    start: int
    end: int
    group: str | None = None  # names bound together as tuples share a group: their values go in lockstep


def find_bindings(ledger: Ledger, loose_names: set[str]) -> dict[str, Binding]:
    """Read every name given a value in the text; claims what it reads."""
    text = ledger.masked()
    found: dict[str, Binding] = {}
    for m in _TUPLE.finditer(text):
        names = [n.strip() for n in m.group("names").split(",")]
        rows = [re.findall(_NUM, row) for row in re.findall(r"\(([^()]*)\)", m.group("values"))]
        if not rows or any(len(r) != len(names) for r in rows):
            continue
        for column, name in enumerate(names):
            values = [_number(r[column]) for r in rows]
            found[name] = Binding(name, values, m.start(), m.end(), group=",".join(names))
        ledger.claim(m.start(), m.end(), "tuple binding")
    text = ledger.masked()
    for m in _PARAM_SETTING.finditer(text):  # `stride=2 pad=1 + bias`: a parameter word takes its number
        name = m.group("name")
        if name.lower() in loose_names and name not in found and not inside_call(text, m.start()):
            found[name] = Binding(name, [_number(m.group("value"))], m.start(), m.end())
            ledger.claim(m.start(), m.end(), "binding")
    text = ledger.masked()
    for m in _SINGLE.finditer(text):
        name, raw = m.group("name"), m.group("value")
        if name in found or inside_call(text, m.start()) or _inside_brackets(text, m.start()) or \
                raw.startswith("[") and not re.search(r"\bin\b|∈|取", m.group(0)):
            continue
        if raw.startswith("{") and not re.fullmatch(r"\{\s*" + _ALTS + r"\s*\}", raw):
            continue
        numbers = [_number(v) for v in re.findall(_NUM, raw)]
        if not numbers:
            continue
        # `x: [4, 8]` is a shape, `a, b` a list of names: a comma list binds only after `in`, `∈`, `取`.
        separators = re.findall(r"/|\bor\b|或|、|,", raw)
        if "," in separators and not (raw.startswith("{") or re.search(r"\bin\b|∈|取", m.group(0))):
            raw_first = re.match(_NUM, raw)
            if raw_first is None:
                continue
            numbers = [_number(raw_first.group(0))]
            end = m.start("value") + raw_first.end()
        else:
            end = m.end()
        found[name] = Binding(name, numbers, m.start(), end)
        ledger.claim(m.start(), end, "binding")
    text = ledger.masked()
    for m in _CONSTANT.finditer(text):
        name = m.group("name")
        if name in found or inside_call(text, m.start()) or _inside_brackets(text, m.start()):
            continue
        try:
            value = parse_text(m.group("expr"))
        except IRError:
            continue
        if isinstance(value, Const) and isinstance(value.value, (int, float)):
            found[name] = Binding(name, [float(value.value)], m.start(), m.end())
            ledger.claim(m.start(), m.end(), "binding")
    text = ledger.masked()
    for m in _LOOSE.finditer(text):
        name = m.group("name")
        if name in found or name.lower() not in loose_names or inside_call(text, m.start()) or \
                _inside_brackets(text, m.start()):
            continue
        found[name] = Binding(name, [_number(m.group("value"))], m.start(), m.end())
        ledger.claim(m.start(), m.end(), "binding")
    _signature_defaults(ledger, found)
    return found


_SIGNATURE = re.compile(r"\bdef\s+\w+\s*\((?P<args>[^()]*)\)|^[ \t]*(?:Wrapper Entry Information:\s*)?[\w.]+\s*"
                        r"\((?P<bare>[^()]*)\)\s*->", re.M)


def _signature_defaults(ledger: Ledger, found: dict[str, Binding]) -> None:
    """A signature's numeric default (`def sub(input, other, *, alpha=1)`) binds a name the formula uses."""
    text = ledger.text
    for m in _SIGNATURE.finditer(text):
        group = "args" if m.group("args") is not None else "bare"
        for arg in re.finditer(rf"(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>{_NUM})(?![\w.])", m.group(group)):
            name = arg.group("name")
            start, end = m.start(group) + arg.start(), m.start(group) + arg.end()
            ledger.claim(start, end, "signature default")  # a default is no number the spec asks to use
            elsewhere = text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():]
            if name in found or not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w(])", elsewhere):
                continue  # a default no formula uses changes nothing
            found[name] = Binding(name, [_number(arg.group("value"))], start, end)


def _inside_brackets(text: str, position: int) -> bool:
    """Tell whether position lies inside `[...]` (a shape such as `[B=32, N=1024]` names its sizes itself)."""
    line = text[text.rfind("\n", 0, position) + 1:position]
    return line.count("[") > line.count("]")


def inline_bindings(shape_tokens: list, found: dict[str, Binding]) -> None:
    """Add the sizes a shape names inline (`[B=32, N=1024]`) to the bindings."""
    for token in shape_tokens:
        # not `seq` in `bs*seq=4096`: the size is the product's, not one name's
        for m in re.finditer(r"(?<![\w*])(?<!\*\s)([A-Za-z_]\w*)\s*=\s*(\d+[kKmM]?)", token.text):
            if m.group(1) not in found:
                found[m.group(1)] = Binding(m.group(1), [_number(m.group(2))], token.start, token.end)


def _number(raw: str) -> float:
    size = size_value(raw.lstrip("+"))
    return float(size) if size is not None and raw[-1:] in "kKmM" else float(raw.rstrip("kKmM"))
