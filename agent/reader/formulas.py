"""Find formulas written in prose (`x * sigmoid(1.702x)`, `out = gelu(x + b)`) and read them into the IR."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from agent.catalogue import Catalogue
from agent.catalogue.entries import alias_words
from agent.ir.expr import Const, Expr, Node, Ref, names, walk
from agent.ir.parse import MissingDim, ParseError, parse_text
from agent.ir.types import IRError
from agent.reader.dims import ALL, DimPhrase
from agent.reader.errors import SpecQuestion
from agent.reader.text import Ledger
from agent.reader.vocabulary import NAMES_TOO, NOT_NAMES, OUTPUT_NAMES, dtype_of

_PIECE = re.compile(
    r"(?P<space>[ \t]+)|(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
    r"|(?P<name>[A-Za-z_σ√]\w*(?:\.[A-Za-z_]\w*)*)|(?P<string>'[^'\n]{0,20}'|\"[^\"\n]{0,20}\")"
    r"|(?P<op>\*\*|//|>=|<=|==|!=|[-+*/^×·@<>~])|(?P<open>[(\[])|(?P<close>[)\]])|(?P<comma>,)"
    r"|(?P<eq>=)|(?P<colon>:)|(?P<ellipsis>\.\.\.)|(?P<dot>\.(?=[A-Za-z_]))|(?P<squared>[²³])|(?P<bar>\|)"
)
_ASSIGN = re.compile(r"(?<![\w.])(?P<lhs>[A-Za-z_]\w*|输出|结果)(?:\s*\[[^\]\n]*\])?\s*=(?!=)\s*$")
_KEYWORDS = {"if", "else"}


@dataclass
class Formula:
    """A formula island: its text, its IR, where it is, and the output name written before it."""

    text: str
    expr: Expr
    start: int
    end: int
    lhs: str | None = None
    lhs_start: int | None = None
    constraint: bool = False  # `x > 0`: a condition on an input, not the operator
    definition: str = ""  # `silu(t) = t * sigmoid(t)`: a helper's definition, checked against the catalogue
    spaced_call: str | None = None  # `NAME (formula)`: the NAME written just before the parentheses


_CALL_KEEPDIM = re.compile(r"\bkeepdim\s*=\s*(?:True|False)\b")


def formula_view(ledger: Ledger, dims: list[DimPhrase]) -> str:
    """Return the masked text with axis phrases inside a call's parentheses written as `, dim=...`."""
    chars = list(ledger.masked())
    text = ledger.text
    for phrase in dims:
        depth = _depth_before(text, phrase.start)
        if depth <= 0 or phrase.dims == ALL:
            continue
        if re.match(r"\s*(?:dims?|axis|axes)\s*=", text[phrase.start:phrase.end]):
            chars[phrase.start:phrase.end] = list(text[phrase.start:phrase.end])  # already `dim=...`
            continue
        value = phrase.dims if isinstance(phrase.dims, int) else f"({', '.join(map(str, phrase.dims))})"
        replacement = f",dim={value}"
        width = phrase.end - phrase.start
        if len(replacement) <= width:
            chars[phrase.start:phrase.end] = list(replacement.ljust(width))
    for m in _CALL_KEEPDIM.finditer(text):
        if _depth_before(text, m.start()) > 0:  # a call's own keyword: the call reads it, not the keepdim pass
            chars[m.start():m.end()] = list(m.group())
    return "".join(chars)


def _depth_before(text: str, position: int) -> int:
    line_start = text.rfind("\n", 0, position) + 1
    segment = text[line_start:position]
    return segment.count("(") - segment.count(")")


def scan(text: str, start: int) -> list[int]:
    """Return the positions where an expression starting at `start` could end (longest last)."""
    ends: list[int] = []
    depth, expect, i, prev = 0, True, start, ""
    bars = 0  # open `|x|` absolute values
    while i < len(text):
        m = _PIECE.match(text, i)
        if m is None:
            break
        kind = m.lastgroup or ""
        if kind == "space":
            i = m.end()
            continue
        if text.startswith("--", i):
            break  # a dash in prose, not two minus signs
        if expect:
            if kind == "name" and m.group(0) in _KEYWORDS:
                break
            if kind in ("num", "name", "string"):
                expect = False
                if kind == "name" and text[m.end():m.end() + 1] in ("(", "["):
                    pass  # a call or an index follows directly
            elif kind == "open":
                depth += 1
            elif kind == "op" and m.group(0) in "-+~√":
                pass
            elif kind == "colon" and depth > 0 or kind == "ellipsis" and depth > 0:
                expect = False
            elif kind == "close" and depth > 0 and prev in ("open", "colon", "comma"):
                depth -= 1  # `f()` or `x[:, None]`
                expect = False
            elif kind == "bar":
                bars += 1
                depth += 1
            else:
                break
        else:
            if kind == "op" or kind == "name" and m.group(0) in _KEYWORDS:
                expect = True
            elif kind == "squared":
                pass
            elif kind == "open" and (prev in ("name", "close") and text[i - 1:i] not in (" ",) or m.group(0) == "["):
                depth += 1
                expect = True
            elif kind == "close" and depth > 0:
                depth -= 1
            elif kind == "bar" and bars > 0:
                bars -= 1
                depth -= 1
            elif kind in ("comma", "eq", "colon") and depth > 0:
                expect = True
            elif kind == "dot":
                expect = True
            elif kind in ("name", "open") and prev == "num" and text[i - 1:i] != " ":
                expect = kind == "open"  # implicit multiplication: 1.702x, 2(x + 1)
                depth += kind == "open"
            else:
                break
        prev = kind
        i = m.end()
        if depth == 0 and not expect:
            ends.append(i)
    return ends


_PIECEWISE = re.compile(
    r"(?P<lhs>[A-Za-z_]\w*)\s*=\s*(?P<a>[^,;\n]+?)\s+(?:for|if|when|where)\s+(?P<cond>[^,;\n]+?)\s*[,;]\s*(?:and\s+)?"
    r"(?:(?P=lhs)\s*=\s*)?(?P<b>[^,;.\n]+?)\s+(?:otherwise|else|elsewhere|for\s+all\s+other\s+\w+)\b", re.I)


def find_piecewise(ledger: Ledger, catalogue: Catalogue) -> list[Formula]:
    """Read `y = x for x >= 0, y = a * x otherwise` as where(x >= 0, x, a * x); claims it."""
    found = []
    for m in _PIECEWISE.finditer(ledger.masked()):
        source = f"where({m.group('cond')}, {m.group('a')}, {m.group('b')})"
        try:
            expr = parse_text(source, macros=catalogue.macro)
        except (ParseError, IRError):
            continue
        formula = Formula(m.group(0), expr, m.start("a"), m.end(), lhs=m.group("lhs"), lhs_start=m.start())
        ledger.claim(m.start(), m.end(), "piecewise formula")
        found.append(formula)
    return found


_DEFINES = re.compile(r"(?<![\w.])(?P<f>[A-Za-z_]\w*)\s*\(\s*(?P<v>[A-Za-z_]\w*)\s*\)\s*=(?!=)\s*")


def find_definitions(ledger: Ledger, catalogue: Catalogue) -> list[Formula]:
    """Read `silu(t) = t * sigmoid(t)`: a helper named by the catalogue, defined by a formula (checked later)."""
    found = []
    view = ledger.masked()
    for m in _DEFINES.finditer(view):
        formula = _longest_at(view, m.end(), catalogue, {m.group("v")})
        if formula is None:
            continue
        # The definition may use the helper's parameters by name (`LeakyReLU(x) = max(0,x) + negative_slope *
        # min(0,x)`): the catalogue's helper then takes them by the same names, so the two agree for any value.
        entry = catalogue.by_name.get(m.group("f").lower()) or catalogue.by_alias.get(alias_words(m.group("f")))
        taken = [n for n in names(formula.expr) if n != m.group("v") and entry is not None and entry.param(n)]
        keywords = "".join(f", {n}={n}" for n in taken)
        try:
            named = parse_text(f"{m.group('f')}({m.group('v')}{keywords})", macros=catalogue.macro)
        except (ParseError, IRError):
            continue
        formula.definition = f"{m.group('f')}({m.group('v')})"
        formula.lhs_start = m.start()
        formula.expr = Node("sub", (named, formula.expr))  # zero when the definition agrees with the catalogue
        ledger.claim(m.start(), formula.end, "definition")
        found.append(formula)
    return found


def find_formulas(ledger: Ledger, view: str, catalogue: Catalogue, declared: set[str]) -> list[Formula]:
    """Find every formula island in the text, longest first from each start; claims them."""
    found: list[Formula] = find_piecewise(ledger, catalogue) + find_definitions(ledger, catalogue)
    for f in found:  # hide what the piecewise and definition passes read
        start = f.lhs_start if f.lhs_start is not None else f.start
        view = view[:start] + "".join(" " if c != "\n" else c for c in view[start:f.end]) + view[f.end:]
    i = 0
    while i < len(view):
        ch = view[i]
        after_word = i > 0 and (view[i - 1].isalnum() or view[i - 1] in "_.-")
        starts_here = (ch.isalnum() or ch in "_(σ√-") and not after_word
        if ch == "|" and not after_word and not _table_row(view, i):
            starts_here = True  # `|x - 1|`: an absolute value (started inside it, the bars were dropped)
        if ch == "-" and not re.match(r"-\s*[\d(]", view[i:i + 3]):
            starts_here = False  # `-- a`, `- x: ...`: a dash, not a negative number or a negated group
        before = view[:i].rstrip()[-1:]
        if before and before in "^*/+@.":
            starts_here = False  # the tail of an expression that did not read (`x W^T + b`)
        if not starts_here or _bullet_at(view, i) or _after_operand(view, i, catalogue):
            i += 1
            continue
        formula = _longest_at(view, i, catalogue, declared)
        if formula is None:
            i += 1
            continue
        if _is_signature(view, formula):
            i = formula.end  # `def f(input, dim) -> Tensor`: the operator's signature, not a formula over its inputs
            continue
        if _in_shape_tuple(view, formula):
            i = formula.end  # `(out_channels, in_channels / groups, kH, kW)`: a size in a shape, not the operator
            continue
        found.append(formula)
        i = formula.end
    for f in found:
        f.expr = _e_powers_as_exp(f.expr)
        ledger.claim(f.start, f.end, "formula")
        _attach_lhs(f, ledger, view)
        f.constraint = f.lhs is None and isinstance(f.expr, Node) and f.expr.op in ("gt", "ge", "lt", "le", "ne") \
            and any(isinstance(a, Const) for a in f.expr.args)
    return found


_TUPLE_ITEM = r"\s*[A-Za-z_]\w*\s*"


def _in_shape_tuple(view: str, formula: Formula) -> bool:
    """Tell whether a formula is one item of a parenthesized list of dim names: `(N, C / groups, H)`."""
    before = re.search(rf"\((?:{_TUPLE_ITEM},)*\s*$", view[max(0, formula.start - 200):formula.start])
    after = re.match(rf"\s*(?:,{_TUPLE_ITEM})*\)", view[formula.end:formula.end + 200])
    return bool(before and after and (before.group(0).count(",") + after.group(0).count(",")) >= 1)


def _is_signature(view: str, formula: Formula) -> bool:
    """Tell whether a call is a signature: after `def`, or before `->` (the return type)."""
    return bool(re.search(r"\bdef\s+$", view[max(0, formula.start - 8):formula.start])
                or re.match(r"\s*->", view[formula.end:formula.end + 6]))


def unknown_calls(view: str) -> list[str]:
    """Return the names called in formula positions (`frobnicate(x)`) that neither the IR nor the catalogue know."""
    from agent.ir import registry

    catalogue_names = {"max", "min", "sum", "abs", "pow", "where", "float"}
    found = []
    for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\(", view):
        name = m.group(1)
        if registry.resolve(name) is None and name not in catalogue_names and name.lower() not in _catalogue_words():
            found.append(name)
    return list(dict.fromkeys(found))


def _catalogue_words() -> set[str]:
    from agent.catalogue import load_catalogue

    return set(load_catalogue().by_name)


def _longest_at(view: str, start: int, catalogue: Catalogue, declared: set[str]) -> Formula | None:
    for end in reversed(scan(view, start)):
        raw = view[start:end]
        if not re.search(r"[-+*/^×·@<>²³(|]", raw) or re.fullmatch(r"[\d.\s+-]+", raw):
            continue
        try:
            expr = parse_text(raw, euler="e" not in declared, macros=catalogue.macro)
        except MissingDim as exc:
            call = raw.strip()
            said = call[:-1] + ("dim=-1)" if call.endswith("()") else ", dim=-1)")
            raise SpecQuestion(str(exc), example=f"'{said}'") from None
        except (ParseError, IRError, RecursionError):
            continue
        if not isinstance(expr, Node) or not _plausible(expr, catalogue, declared) or _wordlike(raw):
            continue
        if expr.op == "neg" and isinstance(expr.args[0], Ref):
            continue
        return Formula(raw.strip(), expr, start + len(raw) - len(raw.lstrip()), start + len(raw.rstrip()),
                       spaced_call=_spaced_call(view, start))
    return None


def _table_row(view: str, i: int) -> bool:
    """Tell whether position i is on a markdown table row (`| x | [4, 8] | fp16 |`): its bars are cells, not |x|."""
    line_start = view.rfind("\n", 0, i) + 1
    line_end = view.find("\n", i)
    line = view[line_start:line_end if line_end >= 0 else len(view)].strip()
    return line.startswith("|") and line.endswith("|") and line.count("|") >= 3


def _bullet_at(view: str, i: int) -> bool:
    """Tell whether position i is a list bullet (`- x: ...`) at the start of a line, not a minus sign."""
    line_start = view.rfind("\n", 0, i) + 1
    return view[i] in "-*" and not view[line_start:i].strip() and view[i + 1:i + 2] == " "


def _after_operand(view: str, i: int, catalogue: Catalogue) -> bool:
    """Tell whether a formula would start right after an operand name (`x W^T + b`): only a fragment of one."""
    m = re.search(r"([A-Za-z_]\w*)[ \t]+$", view[max(0, i - 30):i])
    if not m or view[i] == "(":
        return False
    word = m.group(1)
    return len(word) <= 3 and word.lower() not in NOT_NAMES and (word.lower(),) not in catalogue.by_alias


def _wordlike(raw: str) -> bool:
    """Tell prose from formulas: `cross-entropy`, `L2-normalize`, `2-D`, `gate/up`, `fp16/bf16` are words or lists."""
    text = raw.strip()
    if re.fullmatch(r"[A-Za-z]\w*(?:-[A-Za-z]\w*)+", text) or re.fullmatch(r"\d+-[A-Za-z]", text):
        return True
    return bool(re.fullmatch(r"[A-Za-z_]\w*(?:/[A-Za-z_]\w*)+", text))


def _plausible(expr: Expr, catalogue: Catalogue, declared: set[str]) -> bool:
    """Tell whether every name in a formula can be a tensor or a scalar, not an English or operator word."""
    for name in names(expr):
        if name in declared:
            continue
        low = name.lower()
        if dtype_of(name):
            return False
        if len(name) == 1:
            continue  # `a`, `b`, `e`: in a formula a single letter is a variable, not an article
        if (low in NOT_NAMES or (low,) in catalogue.by_alias) and low not in NAMES_TOO or len(name) > 24:
            return False
    return any(isinstance(e, Ref) for e in walk(expr))


def _e_powers_as_exp(expr: Expr) -> Expr:
    """Read `e^(...)` (Euler's number to a power) as exp(...), the function the text names beside it."""
    from agent.ir.expr import transform

    def fix(e: Expr) -> Expr:
        if isinstance(e, Node) and e.op == "pow" and isinstance(e.args[0], Const) \
                and e.args[0].value == math.e and not e.attrs:
            return Node("exp", (e.args[1],), ())
        return e

    return transform(expr, fix)


def _spaced_call(view: str, start: int) -> str | None:
    """Return NAME when the formula is `(…)` written right after `NAME ` (a definition, not a call)."""
    if view[start:start + 1] != "(":
        return None
    m = re.search(r"([A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,3})\s+$", view[max(0, start - 40):start])
    if m and re.search(r"\b(?:of|on|to|onto|over)$", m.group(1), re.I):
        return None  # `the natural logarithm of (1 + input)`: applied to the formula, not defined by it
    return m.group(1) if m else None


def _attach_lhs(formula: Formula, ledger: Ledger, view: str) -> None:
    m = _ASSIGN.search(view[max(0, formula.start - 40):formula.start])
    if m:
        lhs = m.group("lhs")
        formula.lhs = lhs
        formula.lhs_start = max(0, formula.start - 40) + m.start()
        ledger.claim(formula.lhs_start, formula.start, "output name")


def output_name(formula: Formula, inputs: set[str]) -> str | None:
    """Return the formula's left-hand side when it names an output (not an input)."""
    if formula.lhs and formula.lhs not in inputs:
        return formula.lhs if formula.lhs.isascii() else "out"
    return None


__all__ = ["OUTPUT_NAMES", "Formula", "find_formulas", "formula_view", "output_name", "scan"]
