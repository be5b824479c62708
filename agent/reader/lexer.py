"""Split spec text into typed tokens: shapes, ranges, dtypes, numbers, words and punctuation."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent.reader.text import Ledger
from agent.reader.vocabulary import CJK_DTYPES, dtype_of

Dim = int | str  # a size, or a symbol bound elsewhere (`batch`, `N`)
_SIZE = r"\d+(?:\.\d+)?\s*[kKmM]?(?![\w.])|\d+(?:\s*\*\s*\d+)+|\d+\s*\*\*\s*\d+|2\^\d+"
# `seq=2048`, and a product of names sized at once (`bs*seq=4096`: the flattened batch and sequence)
_ITEM = rf"(?:[A-Za-z_]\w*(?:\s*\*\s*[A-Za-z_]\w*)*\s*=\s*(?:{_SIZE})|{_SIZE}|[A-Za-z_]\w*)"
_LIST = rf"\s*{_ITEM}(?:\s*,\s*{_ITEM})*\s*,?\s*"
_BRACKET = re.compile(rf"\[(?P<items>{_LIST})\]")
_PAREN = re.compile(rf"\((?P<items>{_LIST})\)")
_TIMES = re.compile(r"(?<![\w.\-])(?P<items>\d+\s*[kK]?(?:\s*[x×X]\s*\d+\s*[kK]?)+)(?![\w.])")
_ROWS_COLS = re.compile(
    r"(?P<rows>\d+)\s*(?:rows?|行)\s*(?:,|and|和|by|x|×|乘)?\s*(?P<cols>\d+)\s*(?:columns?|cols?|列)", re.I)
_VECTOR = re.compile(
    r"(?:(?:vector|array|tensor)\s+of\s+(?:length|size)\s+(?P<a>\d+)|(?P<b>\d+)[\s-]*(?:element|elem|dim)s?\s+"
    r"(?:vector|array|tensor)|(?:length|size)[\s-]+(?P<c>\d+)\s+(?:vector|array|tensor)|长度为?\s*(?P<d>\d+)\s*的"
    r"(?:向量|张量|数组))", re.I)
_RANGE_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"[\[(]\s*(?P<lo>{_RANGE_NUMBER})\s*,\s*(?P<hi>{_RANGE_NUMBER})\s*[\])]")
_BETWEEN = re.compile(rf"\bbetween\s+(?P<lo>{_RANGE_NUMBER})\s+and\s+(?P<hi>{_RANGE_NUMBER})", re.I)
_RANGE_CUE = re.compile(
    r"(?:\bto|\binto|\bwithin|\bin|\brange|\binterval|\bclamp\w*|\bclip\w*|\bbounds?|\blimits?|区间|范围|到|至|在|"
    r"限制|截断|裁剪|限幅|钳位|hardtanh|min_val\s*,\s*max_val|\(min,\s*max\))\s*(?:of|the|to|is|=|:|为)?\s*$", re.I)
_KERNEL_SIZE = re.compile(r"\s*(?:-|\s)?\s*(?:conv\w*|kernels?|filters?|depthwise|pointwise|卷积)", re.I)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")  # CJK ends a name: x形状 is x
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_CJK_DTYPE = re.compile("|".join(CJK_DTYPES))


@dataclass(frozen=True)
class Shape:
    """One written shape: sizes and symbols, with where it was written."""

    dims: tuple[Dim, ...]
    start: int
    end: int

    @property
    def symbols(self) -> list[str]:
        """Return the symbolic dims, in order."""
        return [d for d in self.dims if isinstance(d, str)]


@dataclass
class Token:
    """A piece of text with its kind and, for shapes, ranges, numbers and dtypes, its value."""

    kind: str  # shape | range | number | dtype | word | cjk | punct | sep | conj
    text: str
    start: int
    end: int
    value: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def size_value(raw: str) -> int | None:
    """Read a size: 4096, 4k (4096), 1M, 4*1024, 2**12, 2^12; None for anything else."""
    raw = raw.strip().replace(" ", "")
    try:
        if re.fullmatch(r"\d+", raw):
            return int(raw)
        if re.fullmatch(r"\d+(?:\.\d+)?[kK]", raw):
            return int(round(float(raw[:-1]) * 1024))
        if re.fullmatch(r"\d+(?:\.\d+)?[mM]", raw):
            return int(round(float(raw[:-1]) * 1024 * 1024))
        if re.fullmatch(r"\d+(?:\*\d+)+", raw):
            value = 1
            for part in raw.split("*"):
                value *= int(part)
            return value
        if re.fullmatch(r"\d+(?:\*\*|\^)\d+", raw):
            base, power = re.split(r"\*\*|\^", raw)
            return int(base) ** int(power)
    except ValueError:
        return None
    return None


def _dims(items: str, separator: str = ",") -> tuple[Dim, ...] | None:
    parts = [p.strip() for p in re.split(separator, items) if p.strip()]
    dims: list[Dim] = []
    for part in parts:
        if "=" in part:  # `[B=32, N=1024]`: a size named inline
            part = part.split("=", 1)[1].strip()
        size = size_value(part)
        if size is not None:
            dims.append(size)
        elif re.fullmatch(r"[A-Za-z_]\w*", part):
            dims.append(part)
        else:
            return None
    return tuple(dims) if dims else None


def _range_context(text: str, start: int) -> bool:
    """Tell whether the words just before a bracket introduce a value range (clamp to [-1, 1])."""
    return bool(_RANGE_CUE.search(text[max(0, start - 40):start]))


def find_ranges(ledger: Ledger) -> list[Token]:
    """Find value ranges: `[-2.5, 2.5]` or `(0, 6)` after range words, and `between a and b`."""
    text = ledger.masked()
    found = []
    for m in _RANGE.finditer(text):
        lo, hi = m.group("lo"), m.group("hi")
        numeric_only = re.fullmatch(r"\d+", lo.lstrip("+")) and re.fullmatch(r"\d+", hi.lstrip("+"))
        if _range_context(text, m.start()) or not numeric_only and "." in lo + hi or lo.startswith("-"):
            found.append(Token("range", m.group(0), m.start(), m.end(), (float(lo), float(hi))))
    for m in _BETWEEN.finditer(text):
        found.append(Token("range", m.group(0), m.start(), m.end(), (float(m.group("lo")), float(m.group("hi")))))
    for token in found:
        ledger.claim(token.start, token.end, "range")
    return found


# Words of a signature's type annotations (`dim (int, optional)`, `out (Tensor, optional)`): never dim names.
TYPE_WORDS = {"tensor", "tensors", "bool", "boolean", "int", "integer", "float", "str", "string", "optional",
              "list", "tuple", "dtype", "callable", "number", "scalar", "sequence", "dict", "none", "any",
              "required", "keyword", "positional", "default", "ndarray", "array", "module", "generator"}


def find_shapes(ledger: Ledger) -> list[Token]:
    """Find written shapes: [a, b], (a, b), a x b, `N rows and M columns`, `vector of length N`."""
    text = ledger.masked()
    tokens: list[Token] = []
    for m in _ROWS_COLS.finditer(text):
        tokens.append(_shape_token((int(m.group("rows")), int(m.group("cols"))), m, "rows and columns"))
    for m in _VECTOR.finditer(text):
        size = next(int(g) for g in m.groups() if g)
        tokens.append(_shape_token((size,), m, "vector"))
    for m in _BRACKET.finditer(text):
        glued = m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_]")
        dims = _dims(m.group("items"))
        if dims is None:
            continue
        if any(isinstance(d, str) for d in dims) and _range_context(text, m.start()):
            tokens.append(Token("symbolic-range", m.group(0), m.start(), m.end(), dims))  # `裁剪到 [min, max] 区间`
            continue
        if glued and all(isinstance(d, str) for d in dims):
            tokens.append(Token("index", m.group(0), m.start(), m.end(), dims))  # scale[c]: a role, not a shape
            continue
        tokens.append(_shape_token(dims, m, "brackets"))
    for m in _PAREN.finditer(text):
        items = m.group("items")
        dims = _dims(items)
        glued = m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_")
        if dims is None or glued and not re.search(r"(?:shape|size|dims?)\s*$", text[:m.start()], re.I):
            continue
        if all(isinstance(d, str) for d in dims) and re.search(r"[\])]\s*$", text[:m.start()]):
            ledger.claim(m.start(), m.end(), "dim names")  # `[2, 8, 128, 64] (batch, heads, seq, head_dim)`
            continue
        if any(isinstance(d, str) and d.lower() in TYPE_WORDS for d in dims):
            ledger.claim(m.start(), m.end(), "type annotation")  # `input (Tensor, optional)`: a type, not a shape
            continue
        single = len(dims) == 1 and not items.rstrip().endswith(",")
        cue = re.search(r"(?:shape|size|形状|大小|尺寸|dims?)\s*(?:=|:|is|为|of)?\s*$",
                        text[max(0, m.start() - 20):m.start()], re.I)
        if single and not cue or all(isinstance(d, str) for d in dims) and not cue and len(dims) < 2:
            continue
        if all(isinstance(d, str) for d in dims) and re.search(r"\bin\s*$|∈\s*$", text[m.end():m.end() + 5]):
            continue  # (rows, cols) in {...} is a binding, read elsewhere
        tokens.append(_shape_token(dims, m, "parentheses"))
    for m in _TIMES.finditer(text):
        dims = _dims(m.group("items"), r"[x×X]")
        after_conv = re.search(r"(?:conv\w*|卷积)\s*$", text[max(0, m.start() - 12):m.start()], re.I)
        if dims is not None and not _KERNEL_SIZE.match(text, m.end()) and not after_conv:
            tokens.append(_shape_token(dims, m, "a x b"))
        elif dims is not None:
            tokens.append(Token("kernel", m.group(0), m.start(), m.end(), dims))  # `3x3 conv`: a kernel size
    tokens.sort(key=lambda t: t.start)
    kept: list[Token] = []
    for token in tokens:
        if kept and token.start < kept[-1].end or token.kind == "shape" and inside_call(text, token.start):
            continue
        kept.append(token)
        ledger.claim(token.start, token.end, "shape")
    return kept


def inside_call(text: str, position: int) -> bool:
    """Tell whether position lies inside a call's parentheses (`F.layer_norm(x, (768,))`): an argument, not a shape."""
    depth = 0
    for i in range(position - 1, max(-1, position - 200), -1):
        ch = text[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                return ch == "(" and _callee_known(text[:i])
            depth -= 1
        elif ch == "\n":
            return False
    return False


def _callee_known(before: str) -> bool:
    """Tell whether the identifier right before `(` is a function: an IR op, a catalogue name or a dotted path."""
    m = re.search(r"([A-Za-z_][\w.]*)$", before)
    if not m:
        return False
    name = m.group(1)
    if "." in name:
        return True
    from agent.catalogue import load_catalogue
    from agent.ir import registry

    return registry.resolve(name) is not None or name.lower() in load_catalogue().by_name or name in (
        "max", "min", "sum", "abs", "pow", "where")


def _shape_token(dims: tuple[Dim, ...], m: re.Match[str], how: str) -> Token:
    return Token("shape", m.group(0), m.start(), m.end(), Shape(dims, m.start(), m.end()), {"how": how})


def tokenize(text: str, specials: list[Token], cjk_words: set[str],
             fillers: frozenset[str] = frozenset()) -> list[Token]:
    """Return every token in reading order: the special tokens found already, then words and punctuation.

    `text` is the ledger's masked text (read spans are blank); CJK runs are split into the known words of
    `cjk_words` by longest match, else into single characters.
    """
    taken = sorted(specials, key=lambda t: t.start)
    tokens: list[Token] = list(taken)
    spans = [(t.start, t.end) for t in taken]
    longest = max((len(w) for w in cjk_words), default=1)
    i = 0
    while i < len(text):
        inside = next((e for s, e in spans if s <= i < e), None)
        if inside is not None:
            i = inside
            continue
        ch = text[i]
        if ch.isspace() and ch != "\n":
            i += 1
            continue
        cjk_dtype = _CJK_DTYPE.match(text, i)
        word = _WORD.match(text, i)
        number = _NUMBER.match(text, i)
        if cjk_dtype:
            tokens.append(Token("dtype", cjk_dtype.group(0), i, cjk_dtype.end(), CJK_DTYPES[cjk_dtype.group(0)]))
            i = cjk_dtype.end()
        elif word:
            raw = word.group(0).rstrip(".")
            end = i + len(raw)
            dtype = dtype_of(raw)
            kind = "dtype" if dtype else "conj" if raw.lower() in ("and", "or", "vs", "versus") else "word"
            tokens.append(Token(kind, raw, i, end, dtype or raw.lower()))
            i = end
        elif number:
            tokens.append(Token("number", number.group(0), i, number.end(), float(number.group(0))))
            i = number.end()
        elif "\u3400" <= ch <= "\u9fff":
            size = next((n for n in range(min(longest, len(text) - i), 1, -1) if text[i:i + n] in cjk_words), 1)
            piece = text[i:i + size]
            kind = "conj" if piece in ("和", "与", "及", "或", "、", "跟", "以及") else "cjk"
            tokens.append(Token(kind, piece, i, i + size, piece, {"filler": piece in fillers}))
            i += size
        elif ch in "\n;!?" or ch == "." and (i + 1 == len(text) or text[i + 1].isspace()):
            tokens.append(Token("sep", ch, i, i + 1))
            i += 1
        elif ch in "&/、":
            tokens.append(Token("conj", ch, i, i + 1, ch))
            i += 1
        else:
            tokens.append(Token("punct", ch, i, i + 1, ch))
            i += 1
    tokens.sort(key=lambda t: t.start)
    return tokens
