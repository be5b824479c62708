"""Merge the phrases that name one operation twice (`指数 exp`, `GELU (erf-based)`)."""

from __future__ import annotations

import re

from agent.ir.expr import Expr, Node, Ref
from agent.ir.types import IRError, TensorType
from agent.reader.agreement import agree
from agent.reader.phrases import Hit
from agent.reader.scene import Scene


def dedupe(hits: list[Hit], scene: Scene) -> list[Hit]:
    """Merge hits that name one operation twice (`指数 exp`, `MSE, 均方误差`, `HardTanh (clip to [-1, 1])`)."""
    kept: list[Hit] = []
    for hit in hits:
        if any(k.entry is hit.entry for k in kept) and _names_a_result(hit, scene):
            continue  # `sqrt, then tanh of the square-rooted values`: the earlier step's result, not a new step
        previous = kept[-1] if kept else None
        if previous is not None and _same_operation(previous, hit, scene):
            previous.values = hit.values | previous.values
            continue
        if previous is not None and _qualifies(previous, hit, scene):
            continue  # `GELU (erf-based)`, `suffix sum (a cumulative sum from the right)`: a description
        if previous is not None and _qualifies(hit, previous, scene):
            kept[-1] = hit  # `exact (erf-based) GELU`: the description came first
            continue
        kept.append(hit)
    return kept


_RESULT_NOUN = re.compile(r"\s*(?:values?|results?|outputs?)\b", re.I)


def _names_a_result(hit: Hit, scene: Scene) -> bool:
    """Tell whether a hit names a result (`the square-rooted values`, `the convolution output`), not a new step."""
    return bool(_RESULT_NOUN.match(scene.text, hit.end)) and bool(re.search(r"\bthe\s+$", scene.text[:hit.start]))


def _adjacent(a: Hit, b: Hit, scene: Scene) -> bool:
    between = scene.text[a.end:b.start]
    return len(between) <= 40 and not re.search(r"\b(?:then|and then|followed)\b|然后|再|之后|->|→", between) and \
        not any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", between) for n in scene.inputs)


def _same_operation(a: Hit, b: Hit, scene: Scene) -> bool:
    if a.entry.name == b.entry.name:
        return True
    if not _adjacent(a, b, scene) or len(a.entry.roles) != len(b.entry.roles):
        return False
    probe = [f"p{i}" for i in range(len(a.entry.roles))]
    try:
        left = a.entry.build({r.name: Ref(p) for r, p in zip(a.entry.roles, probe, strict=True)}, dict(a.values))
        right = b.entry.build({r.name: Ref(p) for r, p in zip(b.entry.roles, probe, strict=True)},
                              dict(b.values) | {k: v for k, v in a.values.items() if b.entry.param(k)})
    except (IRError, ValueError):
        return False
    same, _ = agree(left, right, {p: TensorType("float32", (5, 7)) for p in probe})
    return same


def _qualifies(a: Hit, b: Hit, scene: Scene) -> bool:
    """Tell whether b only describes a (`erf` in `GELU (erf-based)`): b's op is part of a's own definition."""
    if not _adjacent(a, b, scene) or b.entry.op is None:
        return False
    definition = a.entry.check or a.entry.formula or ""
    return bool(re.search(rf"(?<![\w.]){re.escape(b.entry.op)}\s*\(", definition))


_AGAIN = re.compile(r"\b(?:twice|again|two times|2 times|repeated(?:ly)?|iterated)\b|两次|再次|重复", re.I)


def collapse_restated_chain(expr: Expr, text: str) -> tuple[Expr, list[str]]:
    """Read a chain the text states twice (`exp followed by sqrt ... Returns the exponential followed by square
    root`) once: a description that restates its steps asks for them once, unless it says twice."""
    chain: list[Node] = []
    node: Expr = expr
    while isinstance(node, Node) and len([a for a in node.args if isinstance(a, (Node, Ref))]) == 1:
        chain.append(node)
        node = next(a for a in node.args if isinstance(a, (Node, Ref)))
    half = len(chain) // 2
    if half < 2 or len(chain) % 2 or _AGAIN.search(text):
        return expr, []
    outer, inner = chain[:half], chain[half:]
    if [(n.op, n.attrs) for n in outer] != [(n.op, n.attrs) for n in inner]:
        return expr, []
    steps = " then ".join(n.op for n in reversed(inner))
    return inner[0], [f"the text states the chain {steps} twice; read as one chain (say 'twice' to apply it twice)"]
