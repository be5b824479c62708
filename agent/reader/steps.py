"""Read step chains: "first clamp x, then multiply by 3", "先取绝对值再开平方", "bias-add + GELU", "x @ w then relu"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agent.ir.expr import Const, Expr, Ref
from agent.reader.formulas import Formula
from agent.reader.lexer import Token
from agent.reader.phrases import Hit

_THEN_WORDS = {"then", "afterwards", "finally", "next", "thereafter", "subsequently"}
_THEN_CJK = {"然后", "再", "之后", "最后", "接着", "随后", "再对", "后再", "然后再", "并且再", "后接", "再接", "之后接",
             "后跟", "接"}
_AFTER_VERBS = {"做", "再", "接", "进行", "过", "求", "取", "应用", "计算", "乘", "加", "除"}
_FIRST_WORDS = {"first", "firstly", "先", "首先"}
_RESULT_WORDS = {"result", "it", "its", "that", "this", "output", "结果", "它", "其"}


@dataclass
class Item:
    """One meaningful thing in reading order: an operator, a formula, an input, a number, a connector."""

    kind: str  # hit | formula | name | number | result | then | and | plus
    start: int
    value: Any = None


def items_of(tokens: list[Token], hits: list[Hit], formulas: list[Formula], inputs: set[str]) -> list[Item]:
    """List hits, formulas, input mentions, free numbers and step connectors in text order."""
    items = [Item("hit", h.start, h) for h in hits] + [Item("formula", f.start, f) for f in formulas]
    covered = [(h.start, h.end) for h in hits] + [(f.start, f.end) for f in formulas]
    previous: Token | None = None
    for k, token in enumerate(tokens):
        if any(s <= token.start < e for s, e in covered):
            previous = token
            continue
        low = token.text.lower()
        nxt = tokens[k + 1] if k + 1 < len(tokens) else None
        if token.kind == "word" and token.text in inputs:
            if not _declared_here(tokens, k):
                items.append(Item("name", token.start, token.text))
        elif token.kind == "punct" and token.text in "*/+-" and nxt is not None and nxt.kind in ("number", "word") \
                and previous is not None and previous.kind in ("punct", "sep", "conj") and previous.text not in ")]":
            items.append(Item("arith", token.start, token.text))  # `-> *2`, `, /2`: a step of arithmetic
        elif token.kind == "word" and low in _THEN_WORDS or token.kind == "cjk" and token.text in _THEN_CJK:
            items.append(Item("then", token.start))
        elif token.kind == "cjk" and token.text == "后" and previous is not None and nxt is not None \
                and nxt.text in _AFTER_VERBS:
            items.append(Item("then", token.start))  # `x 加上 bias 后做 SiLU`: after …, do …
        elif token.kind == "word" and low == "followed" and nxt is not None and nxt.text.lower() == "by":
            items.append(Item("then", token.start))
        elif token.kind == "word" and low in ("after", "afterward") and nxt is not None and nxt.text.lower() == "that":
            items.append(Item("then", token.start))
        elif token.kind == "punct" and token.text in ("→", ">") and previous is not None \
                and previous.text in ("-", "="):
            items.append(Item("then", token.start))
        elif token.kind == "punct" and token.text in ("→", "⇒", "|"):
            items.append(Item("then", token.start))
        elif token.kind == "punct" and token.text == "+":
            items.append(Item("plus", token.start))
        elif token.kind == "conj" and low in ("and", "和", "与", "及", "以及", "、"):
            items.append(Item("and", token.start))
        elif (token.kind == "word" and low in _FIRST_WORDS) or token.kind == "cjk" and token.text in _FIRST_WORDS:
            items.append(Item("first", token.start))
        elif token.kind in ("word", "cjk") and (low in _RESULT_WORDS or token.text in _RESULT_WORDS):
            items.append(Item("result", token.start))
        elif token.kind == "number":
            items.append(Item("number", token.start, token.value))
        elif token.kind == "sep":
            items.append(Item("sep", token.start))
        previous = token
    return sorted(items, key=lambda i: i.start)


def _declared_here(tokens: list[Token], k: int) -> bool:
    """Tell whether the name at k is declared right there (`x: fp16 [2048, 1024]`), not used as an operand."""
    j = k + 1
    while j < len(tokens) and (tokens[j].kind == "dtype" or tokens[j].text in (":", "=", "(")):
        j += 1
    return j < len(tokens) and tokens[j].kind == "shape"


def split_steps(items: list[Item], fused: bool) -> list[list[Item]] | None:
    """Split items into ordered steps at connectors; None when the text gives no order between operations."""
    ops = [i for i in items if i.kind in ("hit", "formula", "arith")]
    if len(ops) < 2:
        return None
    steps: list[list[Item]] = [[]]
    ordered = False
    for index, item in enumerate(items):
        between_ops = _between_ops(items, index)
        if item.kind == "then" or item.kind == "plus" and between_ops or item.kind == "and" and fused and between_ops:
            ordered = True
            if steps[-1]:
                steps.append([])
            continue
        if item.kind == "sep" and ordered and steps[-1]:
            steps.append([item])  # the sentence break stays as the step's first item: see drop_restatements
            continue
        steps[-1].append(item)
    steps = [s for s in steps if any(i.kind in ("hit", "formula", "arith") for i in s)]
    if not ordered or len(steps) < 2:
        return None
    return steps


_AGAIN = re.compile(r"\b(?:twice|again|two times|2 times|repeated(?:ly)?|iterated|once more)\b|两次|再次|重复", re.I)


def drop_restatements(steps: list[list[Item]], text: str) -> tuple[list[list[Item]], list[str], list[Hit]]:
    """Leave out a later sentence that only names again, in order, operations the chain before it already applies
    (`Applies a linear transformation followed by tanh. ... non-linearity after a linear transformation`).

    A sentence counts as a restatement only when it does not open with a connector ("Then ..."), holds no formula,
    arithmetic or number, and every operation it names is one the sentences before it applied, in the same order.
    """
    groups: list[list[list[Item]]] = []
    for step in steps:
        if not groups or step[0].kind == "sep":
            groups.append([step])
        else:
            groups[-1].append(step)
    if len(groups) < 2 or _AGAIN.search(text):
        return steps, [], []
    applied = [h.entry.name for step in groups[0] for h in _hits(step)]
    kept, notes, restated = list(groups[0]), [], []
    for group in groups[1:]:
        items = [i for step in group for i in step]
        named = [h.entry.name for step in group for h in _hits(step)]
        plain = not any(i.kind in ("formula", "arith", "number") for i in items)
        if plain and named and _subsequence(named, applied):
            said = ", ".join(h.text for step in group for h in _hits(step))
            notes.append(f"a later sentence names {said} again: read as the same steps, not new ones (say 'twice' "
                         "to apply them twice)")
            restated += [h for step in group for h in _hits(step)]
            continue
        kept.extend(group)
        applied += named
    return kept, notes, restated


_LISTED = re.compile(r"^(?:\s*(?:activations?|functions?|operations?|layers?|steps?))?\s*(?:,\s*(?:and\s+)?|and\s+)"
                     r"(?:(?:then|finally)\s+)?(?:(?:applies|applying|apply)\s+)?(?:(?:an?|the)\s+)?$", re.I)


def split_listed(steps: list[list[Item]], text: str) -> list[list[Item]]:
    """Split a later step that lists operations (`conv, followed by layer norm and SiLU`) into one step each, in the
    order written: after a connector, `A and B` / `A, B, and C` continues the chain. Only one-tensor operations
    after the first are split off, so `then add x and y` keeps its operands."""
    out: list[list[Item]] = []
    for index, step in enumerate(steps):
        hits = _hits(step)
        if index == 0 or len(hits) < 2 or any(len([r for r in h.entry.roles if not r.optional]) != 1
                                              for h in hits[1:]) \
                or not all(_LISTED.match(text[a.end:b.start]) for a, b in zip(hits, hits[1:], strict=False)):
            out.append(step)
            continue
        cuts = [h.start for h in hits[1:]]
        parts: list[list[Item]] = [[] for _ in range(len(hits))]
        for item in step:
            parts[sum(1 for c in cuts if item.start >= c)].append(item)
        out.extend(parts)
    return out


def _hits(step: list[Item]) -> list[Hit]:
    return [i.value for i in step if i.kind == "hit"]


def _subsequence(named: list[str], applied: list[str]) -> bool:
    it = iter(applied)
    return all(any(n == a for a in it) for n in named)


def _between_ops(items: list[Item], index: int) -> bool:
    """Tell whether the item sits between two operators with nothing but fillers between."""
    before = next((i for i in reversed(items[:index]) if i.kind not in ("and", "plus", "first")), None)
    after = next((i for i in items[index + 1:] if i.kind not in ("and", "plus", "first")), None)
    return bool(before and after and before.kind in ("hit", "formula", "name") and after.kind in ("hit", "formula"))


ARITH_OPS = {"*": "mul", "/": "div", "+": "add", "-": "sub"}


def step_operands(step: list[Item]) -> tuple[list[Hit], list[Formula], list[str], list[Expr], bool]:
    """Return a step's hits, formulas, input names, numbers (as constants) and whether it names the result."""
    hits = [i.value for i in step if i.kind == "hit"]
    formulas = [i.value for i in step if i.kind == "formula"]
    names = list(dict.fromkeys(i.value for i in step if i.kind == "name"))
    numbers: list[Expr] = [Const(i.value) for i in step if i.kind == "number"]
    mentions_result = any(i.kind == "result" for i in step)
    return hits, formulas, names, numbers, mentions_result


__all__ = ["Item", "Ref", "drop_restatements", "split_listed", "items_of", "split_steps", "step_operands"]
