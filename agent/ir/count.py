"""Count the FLOPs and the minimal bytes of an operator for one shape and dtype case."""

from __future__ import annotations

from agent.ir import registry
from agent.ir.expr import Const, Expr, Node, walk
from agent.ir.infer import infer
from agent.ir.types import ScalarType, TensorType, ValueType


def total_flops(expr: Expr, types: dict[str, ValueType]) -> int:
    """Sum each distinct node's FLOPs (its op's rule over its operand and output types)."""
    total = 0
    for node in dict.fromkeys(e for e in walk(expr) if isinstance(e, Node)):
        out = infer(node, types)
        if not isinstance(out, TensorType):
            continue
        operands = [ScalarType(0.0) if isinstance(a, Const) else infer(a, types) for a in node.args]
        total += registry.get(node.op).flops(operands, out, dict(node.attrs))
    return total


def flops_per_output(expr: Expr, types: dict[str, ValueType]) -> float:
    """Return the FLOPs per output element."""
    out = infer(expr, types)
    numel = out.numel if isinstance(out, TensorType) else 1
    return total_flops(expr, types) / max(1, numel)


def minimal_bytes(expr: Expr, types: dict[str, ValueType]) -> tuple[int, int]:
    """Return (bytes read, bytes written) when each input is read once and the output written once."""
    read = sum(t.nbytes for t in types.values() if isinstance(t, TensorType))
    out = infer(expr, types)
    return read, out.nbytes if isinstance(out, TensorType) else 0
