"""Axis phrases: `over the last dim`, `dim=1`, `dims (1, 2)`, `each row`, `沿最后一维`, `all elements`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.reader.lexer import inside_call
from agent.reader.text import Ledger

ALL = "all"  # every dimension (a full reduction), said explicitly
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1, "final": -1,
             "innermost": -1, "trailing": -1, "penultimate": -2, "second-to-last": -2, "second to last": -2,
             "一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "1": 0, "2": 1, "3": 2, "4": 3}
_AXIS = r"(?:dim(?:ension)?s?|ax(?:is|es))"
_INT = r"-?\d+"
_TUPLE = rf"[\[(]\s*{_INT}(?:\s*,\s*{_INT})*\s*,?\s*[\])]"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{_AXIS}\s*(?:=|:)?\s*(?P<tuple>{_TUPLE})", re.I), "tuple"),
    (re.compile(rf"\b{_AXIS}\s*(?:=|:)\s*(?P<int>{_INT})\b", re.I), "int"),
    (re.compile(rf"\b(?:over|along|across|on|in|reduce|reducing|at)\s+(?:the\s+)?{_AXIS}\s+(?P<int>{_INT})\b"
                rf"(?:\s*(?:and|,|&)\s*(?P<int2>{_INT})\b)?", re.I), "int"),
    # `dim 1` but not `dim 1024]` or `dim 3x`; a CJK word after it (`在 dim 1 上`) is not part of the number.
    (re.compile(rf"\b{_AXIS}\s+(?P<int>{_INT})(?!\s*[\]A-Za-z0-9_.])(?:\s*(?:and|,|&)\s*(?P<int2>{_INT})\b)?",
                re.I), "int"),
    (re.compile(r"\blastdim\b|\blast_dim\b", re.I), "last"),
    (re.compile(r"\b(?:dimension\s+)?order\s*(?:of\s+)?(?:=|:|to|is)?\s*(?P<tuple>[\[(]\s*\d+(?:\s*,\s*\d+)+\s*[\])])"
                r"|\bpermute\w*\b[^.;\n\[(]{0,60}?\bto\s+(?:the\s+)?(?:dimension\s+order\s+)?(?P<tuple2>[\[(]\s*\d+"
                r"(?:\s*,\s*\d+)+\s*[\])])", re.I), "order"),
    (re.compile(r"(?:\b(?:over|along|across|on|in|reduce|reducing)\s+(?:the\s+|its\s+)?)?\b(?P<ord>last|final|innermost|"
                rf"trailing|penultimate|second[- ]to[- ]last|first|second|third|fourth|fifth)\s+{_AXIS}\b", re.I),
     "ordinal"),
    (re.compile(r"(?:沿着?|在|对|按)?\s*(?:最后一个?|末|最内|最内侧)\s*(?:维度?|轴)(?:上)?"), "last"),
    (re.compile(rf"(?:沿着?|在|对|按)?\s*第\s*(?P<num>{_INT})\s*(?:个)?\s*(?:维度?|轴)(?:上)?"), "int-zh"),
    (re.compile(r"(?:沿着?|在|对|按)?\s*第\s*(?P<ord>[一二三四五])\s*(?:个)?\s*(?:维度?|轴)(?:上)?"), "ordinal"),
    (re.compile(rf"(?:沿着?|在|对|按)?\s*(?:维度|轴)\s*(?:=|:|为)?\s*(?P<num>{_INT})(?:\s*(?:上))?"), "int-zh"),
    (re.compile(r"\b(?:for\s+)?(?:each|every|per)\s+row\b|\brow[- ]?wise\b|\bof\s+each\s+row\b|\bwithin\s+(?:each\s+)?"
                r"rows?\b|\bacross\s+(?:the\s+)?columns\b|\bover\s+(?:the\s+)?columns\b|\bper[- ]row\b"
                r"|每一?行|按行|逐行|行内",
                re.I), "row"),
    (re.compile(r"\b(?:over|along|across)\s+(?:the\s+)?(?:vocab(?:ulary)?|classes|class\s+dim(?:ension)?|hidden"
                r"(?:\s+(?:dim|dimension|size))?|features?(?:\s+dim(?:ension)?)?|head[_ ]dim|keys|tokens?\s+dim)\b",
                re.I), "last"),
    (re.compile(r"\b(?:for\s+)?(?:each|every|per)\s+column\b|\bcolumn[- ]?wise\b|\bof\s+each\s+column\b|"
                r"\bover\s+(?:the\s+)?rows\b|\bacross\s+(?:the\s+)?rows\b|\bper[- ]column\b|每一?列|按列|逐列", re.I),
     "column"),
    (re.compile(r"\b(?:over|along|across)\s+(?:the\s+)?(?:channels?|channel\s+dim(?:ension)?)\b|通道维|沿通道",
                re.I), "channel"),
    (re.compile(r"\b(?:over|along|across)\s+(?:the\s+)?(?:spatial\s+dim(?:ension)?s|h\s*(?:and|,|&)\s*w|height\s+"
                r"and\s+width)\b|空间维", re.I), "spatial"),
    (re.compile(r"\b(?:over|along|across)\s+(?:the\s+)?batch(?:\s+dim(?:ension)?)?\b|沿批次维|沿批维", re.I), "batch"),
    (re.compile(r"\b(?:over|of|across)\s+(?:all|every)\s+(?:the\s+)?(?:elements|entries|values|dims|dimensions|axes)"
                r"\b|\b(?:all|every)\s+elements\b|\b(?:entire|whole|full)\s+tensor\b|\bglobal(?:ly)?\b|所有元素|"
                r"全部元素|整个张量|全体元素|全局", re.I), "all"),
]
_KEEPDIM_TRUE = re.compile(r"\bkeep[_ ]?dims?\s*=\s*true\b|\bkeep[_ ]?dims?\b(?!\s*=\s*false)"
                           r"|\bkeep(?:ing)?\s+(?:the\s+)?"
                           r"(?:reduced\s+)?dim(?:ension)?s?\b|\bkeep\s+the\s+rank\b|\bkeepdim\b|"
                           r"(?:保持|保留)(?:该|这个|被归约的|归约的)?(?:维度?|轴)", re.I)
_KEEPDIM_FALSE = re.compile(r"\bkeep[_ ]?dims?\s*=\s*false\b|不保留维度|不保持维度", re.I)


@dataclass
class DimPhrase:
    """An axis the text names, and where."""

    dims: int | tuple[int, ...] | str  # an int, a tuple of ints, or ALL
    start: int
    end: int
    kind: str = ""  # how it was said: row, column, channel, spatial, batch, last, all, ...


def find_dims(ledger: Ledger) -> list[DimPhrase]:
    """Find every axis phrase, claiming it; resolve `column`, `channel`, `spatial`, `batch` to dims."""
    found: list[DimPhrase] = []
    for pattern, kind in _PATTERNS:
        text = ledger.masked()
        for m in pattern.finditer(text):
            if not ledger.free(m.start(), m.end()):
                continue
            if kind in ("int", "tuple") and inside_call(text, m.start()):
                continue  # `softmax(x, dim=-1)`: the formula reads its own keywords
            dims = _resolve(m, kind)
            if dims is None:
                continue
            found.append(DimPhrase(dims, m.start(), m.end(), kind))
            ledger.claim(m.start(), m.end(), "dim")
    # A `Parameters: dim = 0` line states the axis; prose around it ("the sum of each row") describes the op.
    lines = [(m.start(), m.end()) for m in _PARAMETERS_LINE.finditer(ledger.text)]
    stated = [d for d in found if any(s <= d.start < e for s, e in lines)]
    return sorted(stated or found, key=lambda d: d.start)


_PARAMETERS_LINE = re.compile(r"(?im)^[ \t#*-]*(?:parameters?|params|参数)\s*[:：].*$")


def find_keepdim(ledger: Ledger) -> bool | None:
    """Return True or False when the text says whether reduced dims are kept, else None."""
    text = ledger.masked()
    for pattern, value in ((_KEEPDIM_FALSE, False), (_KEEPDIM_TRUE, True)):
        m = pattern.search(text)
        if m:
            ledger.claim(m.start(), m.end(), "keepdim")
            return value
    return None


def _resolve(m: re.Match[str], kind: str) -> int | tuple[int, ...] | str | None:
    groups = m.groupdict()
    if kind == "tuple":
        values = tuple(int(v) for v in re.findall(_INT, groups["tuple"]))
        return values[0] if len(values) == 1 else values
    if kind == "order":
        return tuple(int(v) for v in re.findall(_INT, groups["tuple"] or groups["tuple2"]))
    if kind == "int":
        first = int(groups["int"])
        second = groups.get("int2")
        if abs(first) > 8 or second and abs(int(second)) > 8:
            return None  # `head dim 128` is a size, not an axis
        return (first, int(second)) if second else first
    if kind == "int-zh":
        return int(groups["num"]) if abs(int(groups["num"])) <= 8 else None
    if kind == "ordinal":
        key = groups["ord"].lower().replace("-", " ")
        return _ORDINALS.get(key, _ORDINALS.get(groups["ord"]))
    named: dict[str, int | tuple[int, ...] | str] = {"last": -1, "row": -1, "column": -2, "channel": 1,
                                                    "spatial": (-2, -1), "batch": 0, "all": ALL}
    return named[kind]
