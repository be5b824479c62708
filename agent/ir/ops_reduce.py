"""Axis reductions, the softmax family and scans."""

from __future__ import annotations

from agent.ir.costs import per_input
from agent.ir.registry import OpDef, Param, register

X = Param("input", "tensor")
DIMS = Param("dim", "dims", None, aliases=("axis",))  # None: every dimension
DIM = Param("dim", "int", aliases=("axis",))  # one dimension, required
KEEPDIM = Param("keepdim", "bool", False)


def _reduce(name: str, torch: str, flops: float, *params: Param, spellings: tuple[str, ...] = ()) -> OpDef:
    return OpDef(name, "reduction", (X, *params), torch, per_input(flops), spellings=spellings)


register(
    _reduce("sum", "torch.sum", 1, DIMS, KEEPDIM),
    _reduce("mean", "torch.mean", 1, DIMS, KEEPDIM, spellings=("average",)),
    _reduce("amax", "torch.amax", 1, DIMS, KEEPDIM),
    _reduce("amin", "torch.amin", 1, DIMS, KEEPDIM),
    _reduce("prod", "torch.prod", 1, Param("dim", "int", None, aliases=("axis",)), KEEPDIM),
    _reduce("argmax", "torch.argmax", 1, Param("dim", "int", None, aliases=("axis",)), KEEPDIM),
    _reduce("argmin", "torch.argmin", 1, Param("dim", "int", None, aliases=("axis",)), KEEPDIM),
    _reduce("var", "torch.var", 3, DIMS, Param("correction", "int", 1, keyword_only=True), KEEPDIM),
    _reduce("std", "torch.std", 4, DIMS, Param("correction", "int", 1, keyword_only=True), KEEPDIM),
    _reduce("vector_norm", "torch.linalg.vector_norm", 2, Param("ord", "scalar", 2.0, aliases=("p",)), DIMS, KEEPDIM,
            spellings=("norm",)),
    OpDef("logsumexp", "softmax", (X, DIM, KEEPDIM), "torch.logsumexp", per_input(4)),
    OpDef("softmax", "softmax", (X, DIM), "torch.softmax", per_input(5)),
    OpDef("log_softmax", "softmax", (X, DIM), "torch.log_softmax", per_input(5)),
    OpDef("softmin", "softmax", (X, DIM), "F.softmin", per_input(6)),
    OpDef("cumsum", "scan", (X, DIM), "torch.cumsum", per_input(1)),
    OpDef("cumprod", "scan", (X, DIM), "torch.cumprod", per_input(1)),
    OpDef("cummax", "scan", (X, DIM), "torch.cummax({input}, dim={dim}).values", per_input(1)),
    OpDef("cummin", "scan", (X, DIM), "torch.cummin({input}, dim={dim}).values", per_input(1)),
    OpDef("logcumsumexp", "scan", (X, DIM), "torch.logcumsumexp", per_input(5)),
)
