"""What an attention operator is made of: query, key, value, an optional additive mask, causality and scale."""

from __future__ import annotations

from dataclasses import dataclass

from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.printer import to_text
from agent.spec import OpSpec


class NotAttentionLowerable(ValueError):
    """An operator the attention engine cannot write; the message says which part."""


@dataclass(frozen=True)
class AttentionGraph:
    """softmax(q kᵀ · scale + mask) v over the last two dims, the leading dims all batch."""

    q: str
    k: str
    v: str
    mask: str | None
    causal: bool
    scale: float | None  # None: 1 / sqrt(head dim), as PyTorch
    cast: str | None  # a dtype the output is cast to


def attention_graph(spec: OpSpec) -> AttentionGraph:
    """Read the spec as one scaled_dot_product_attention (NotAttentionLowerable otherwise)."""
    expr: Expr = spec.expr
    cast = None
    if isinstance(expr, Node) and expr.op == "cast":
        cast, expr = str(expr.attr("dtype")), expr.args[0]
    if not (isinstance(expr, Node) and expr.op == "scaled_dot_product_attention"):
        raise NotAttentionLowerable(f"the attention engine writes one scaled_dot_product_attention; "
                                    f"{to_text(spec.expr)} has more around it (an epilogue after attention is not "
                                    "written offline yet)")
    operands = list(expr.args)
    if not all(isinstance(a, Ref) for a in operands if a is not None):
        raise NotAttentionLowerable("query, key, value and the mask must be inputs (a projection before attention is a "
                                    "matmul of its own: write it as a separate job)")
    names = [a.name for a in operands if isinstance(a, Ref)]
    mask = names[3] if len(names) > 3 else None
    dropout = expr.attr("dropout_p", 0.0)
    if _number(dropout) not in (0.0, None):
        raise NotAttentionLowerable("dropout_p must be 0: a random dropout cannot be checked against a reference")
    if expr.attr("enable_gqa", False):
        raise NotAttentionLowerable("grouped-query attention (enable_gqa) is not written offline yet")
    causal = bool(_number(expr.attr("is_causal", False)))
    if causal and mask is not None:
        raise NotAttentionLowerable("is_causal with an attn_mask is an error in PyTorch; give one of them")
    scale = _number(expr.attr("scale", None))
    for name in names:
        tensor = next(t for t in spec.inputs if t.name == name)
        if name == mask and any(d not in ("float32", "float16", "bfloat16") for d in tensor.dtypes):
            raise NotAttentionLowerable(f"{name} must be an additive float mask (a boolean mask is not written "
                                        "offline yet: give 0 and -inf)")
    for case in spec.shape_cases():
        q, k, v = (case[n] for n in names[:3])
        if len(q) < 2 or len(q) != len(k) or len(k) != len(v):
            raise NotAttentionLowerable("query, key and value must have the same rank, at least 2")
        if q[:-2] != k[:-2] or k[:-2] != v[:-2]:
            raise NotAttentionLowerable("query, key and value must share their leading (batch, head) dims; "
                                        "broadcast heads are not written offline yet")
        if q[-1] != k[-1] or k[-2] != v[-2]:
            raise NotAttentionLowerable(f"the shapes do not fit attention: q {q}, k {k}, v {v}")
        if max(q[-1], v[-1]) > 256:
            raise NotAttentionLowerable("head dims above 256 are not written offline")
    return AttentionGraph(names[0], names[1], names[2], mask, causal, scale, cast)


def _number(value: object) -> float | None:
    if isinstance(value, Const):
        value = value.value
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        return float(value)
    raise NotAttentionLowerable(f"{value} must be a number here")
