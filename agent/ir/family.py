"""The family of an operator: what its most demanding op is."""

from __future__ import annotations

from agent.ir import registry
from agent.ir.expr import Expr, Node, walk

# Most demanding first: the family that decides how the kernel is written.
ORDER = ("attention", "conv", "matmul", "loss", "norm", "softmax", "scan", "reduction", "data-movement", "elementwise")


def family_of(expr: Expr) -> str:
    """Name the family of an operator (attention > conv > matmul > loss > ... > elementwise)."""
    families = {registry.get(e.op).family for e in walk(expr) if isinstance(e, Node)}
    return next((f for f in ORDER if f in families), "elementwise")
