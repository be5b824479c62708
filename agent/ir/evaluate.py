"""Evaluate IR expressions with PyTorch: the reference every kernel is checked against."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.printer import to_torch


def fold_scalars(expr: Expr, scalars: dict[str, float]) -> Expr:
    """Replace every sub-expression over numbers and scalar parameters alone by its value (`sqrt(d)` -> 8.0)."""
    def numeric(e: Expr) -> bool:
        if isinstance(e, Const):
            return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
        if isinstance(e, Ref):
            return e.name in scalars
        return isinstance(e, Node) and bool(e.args) and all(numeric(a) for a in e.args) and not any(
            isinstance(v, (Ref, Node)) for _, v in e.attrs)

    def fold(e: Expr) -> Expr:
        if isinstance(e, Node) and numeric(e):
            env = {n: torch.tensor(float(v), dtype=torch.float64) for n, v in scalars.items()}
            args = tuple(Ref(f"_n{i}") for i in range(len(e.args)))
            env.update({f"_n{i}": _number(a, scalars) for i, a in enumerate(e.args)})
            return Const(float(evaluate(Node(e.op, args, e.attrs), env).item()))
        if isinstance(e, Node):
            return Node(e.op, tuple(fold(a) for a in e.args), e.attrs)
        return e

    return fold(expr)


def _number(e: Expr, scalars: dict[str, float]) -> torch.Tensor:
    value = scalars[e.name] if isinstance(e, Ref) else e.value if isinstance(e, Const) else None
    if value is None and isinstance(e, Node):
        folded = fold_scalars(e, scalars)
        value = folded.value if isinstance(folded, Const) else None
    return torch.tensor(float(value), dtype=torch.float64)  # type: ignore[arg-type]


def evaluate(expr: Expr, env: dict[str, Any]) -> torch.Tensor:
    """Compute expr on tensors (and scalar parameters) by name, exactly as its PyTorch rendering does."""
    code = compile(to_torch(expr), "<ir>", "eval")
    # The code is rendered from the IR (validated names, numbers and quoted choices), never user text.
    result = eval(code, {"torch": torch, "F": F, "math": math}, dict(env))
    if not isinstance(result, torch.Tensor):
        result = torch.tensor(result)
    return result
