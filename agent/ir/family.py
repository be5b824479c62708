"""The family of an operator: what its most demanding op is."""

from __future__ import annotations

from agent.ir import registry
from agent.ir.expr import Expr, Node, walk

# Most demanding first: the family that decides how the kernel is written.
ORDER = ("attention", "conv", "matmul", "loss", "norm", "softmax", "scan", "reduction", "data-movement", "elementwise")


# Views that only line shapes up for a broadcast (`scale.unsqueeze(-1)`): they move no data of their own.
VIEWS = frozenset({"reshape", "flatten", "unsqueeze", "squeeze"})


def family_of(expr: Expr) -> str:
    """Name the family of an operator (attention > conv > matmul > loss > ... > elementwise)."""
    applied = [e.op for e in walk(expr) if isinstance(e, Node)]
    computed = [op for op in applied if op not in VIEWS] or applied  # a view alone is data movement
    families = {registry.get(op).family for op in computed}
    return next((f for f in ORDER if f in families), "elementwise")
