"""Find a formula written in the text: `out = ...` explicitly, or an expression over declared inputs."""

from __future__ import annotations

import re

from agent.expr import Call, Expr, FormulaError, names, parse_formula

_PIECE = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op>\*\*|[-+*/^×·])|(?P<open>\()|(?P<close>\))|(?P<comma>,)|(?P<eq>=(?!=))"
    r"|(?P<index>\[\s*[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*\s*\]))",
    re.A,
)
_OUTPUT_NAMES = ("out", "output", "y", "z", "o", "res", "result", "ret", "输出", "结果")
_START = re.compile(r"(?<![\w.])[A-Za-z_(0-9]", re.A)


def scan(text: str, pos: int) -> int | None:
    """Return where the expression starting at pos ends, or None if it is cut off inside parentheses."""
    depth, expect, prev, end, i = 0, True, "", None, pos
    while True:
        m = _PIECE.match(text, i)
        if m is None:
            break
        kind = m.lastgroup or ""
        if expect:
            if kind == "name" and text[m.end():].lstrip().startswith("("):
                depth += 1
                i = text.index("(", m.end()) + 1
                prev = "open"
                continue
            if kind in ("num", "name"):
                expect = False
            elif kind == "open":
                depth += 1
            elif not (kind == "op" and m.group("op") in "+-"):
                break
        else:
            if kind == "op":
                expect = True
            elif kind == "close" and depth > 0:
                depth -= 1
            elif kind == "comma" and depth > 0:
                expect = True
            elif kind == "eq" and depth > 0 and prev == "name":
                expect = True
            elif not (kind == "index" and prev == "name"):
                break
        prev = kind
        i = m.end()
        if depth == 0 and not expect:
            end = i
    return end if depth == 0 else None


def functions(expr: Expr) -> set[str]:
    """Return the catalogue functions an expression calls."""
    if isinstance(expr, Call):
        return {expr.fn}.union(*(functions(a) for a in expr.args))
    return set()


def explicit(text: str, output: str | None) -> tuple[str, str, int, int] | None:
    """Return (formula, lhs, start, end) of the first `out = ...` style statement, if any."""
    lhs = "|".join(re.escape(n) for n in ((output,) if output else ()) + _OUTPUT_NAMES)
    for m in re.finditer(rf"(?<![\w.])({lhs})(?:\s*\[[^\]\n]*\])?\s*=(?!=)\s*", text, re.A | re.I):
        end = scan(text, m.end())
        if end is None:
            line_end = text.find("\n", m.end())
            raw = text[m.end(): line_end if line_end >= 0 else len(text)].strip()
            return raw, m.group(1), m.end(), m.end() + len(raw)
        formula = text[m.end():end].strip()
        if formula and re.search(r"[A-Za-z_]", formula) and not re.fullmatch(r"[\d.eE+-]+", formula):
            return formula, m.group(1), m.end(), end
    return None


def implicit(text: str, allowed: set[str]) -> tuple[str, int, int] | None:
    """Return (formula, start, end) of the first expression with an operator that uses only allowed names."""
    for m in _START.finditer(text):
        end = scan(text, m.start())
        if end is None:
            continue
        candidate = text[m.start():end].strip()
        if not re.search(r"[-+*/^×·(]", candidate):
            continue
        try:
            expr = parse_formula(candidate)
        except FormulaError:
            continue
        used = names(expr)
        if used and set(used) <= allowed:
            return candidate, m.start(), end
    return None
