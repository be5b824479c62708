"""Rewrite an IR expression into the row engine's graph: every reduction, softmax, norm, scan and loss along one
dim set."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch

from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.infer import torch_dtype
from agent.ir.printer import to_text
from agent.ir.types import ValueType

from .expander import Expander, NotRowLowerable, RowGraph, Space, Value, attr, operand, scalar
from .graph import INDEX, LENGTH, RowNode, Total, code, mean, number, reduce, scan
from .losses import LOSS_RULES

# Index past any row: argmax and argmin take the smallest index that qualifies.
_NO_INDEX = "2147483648.0"


def _reduction(build: Callable[[Expander, Node, RowNode], RowNode], dim_attr: str = "dim") -> Callable[..., Value]:
    def rule(x: Expander, e: Node) -> Value:
        x.reduced_dims(e, e.args[0], attr(e, dim_attr))
        node = build(x, e, x.tile(e.args[0]))
        return Value(node, "full" if attr(e, "keepdim") else "dropped")

    return rule


def _arg(best: str) -> Callable[[Expander, Node, RowNode], RowNode]:
    def build(x: Expander, e: Node, v: RowNode) -> RowNode:
        # The first index holding the extreme, or the first NaN (PyTorch counts NaN as the extreme).
        extreme = reduce(best, v)
        hit = code(f"tl.where(({{0}} == {{1}}) | ({{0}} != {{0}}), {{2}}, {_NO_INDEX})", v, extreme, INDEX)
        return reduce("min", hit)

    return build


def _var(x: Expander, e: Node, v: RowNode) -> RowNode:
    centred = code("({0} - {1})", v, mean(v))
    correction = attr(e, "correction")
    if not isinstance(correction, (int, float)) or isinstance(correction, bool):
        raise NotRowLowerable(f"{to_text(e)}: correction={correction!r} must be a number")
    return code(f"({{0}} / tl.maximum({{1}} - {float(correction)!r}, 0.0))", reduce("sum", code("({0} * {0})",
                                                                                                centred)), LENGTH)


def _norm(x: Expander, e: Node, v: RowNode) -> RowNode:
    order = attr(e, "ord")
    return _p_norm(e, v, order)


def _p_norm(e: Node, v: RowNode, order: object) -> RowNode:
    if not isinstance(order, (int, float)) or isinstance(order, bool):
        raise NotRowLowerable(f"{to_text(e)}: ord={order!r} must be a number")
    magnitude = code("tl.abs({0})", v)
    if order == float("inf"):
        return reduce("max", magnitude)
    if order == float("-inf"):
        return reduce("min", magnitude)
    if order == 0:
        return reduce("sum", code("tl.where({0} != 0.0, 1.0, 0.0)", v))
    if order == 1:
        return reduce("sum", magnitude)
    if order == 2:
        return code("tl.sqrt({0})", reduce("sum", code("({0} * {0})", v)))
    powered = reduce("sum", code(f"tl.exp({float(order)!r} * tl.log({{0}}))", magnitude))
    return code(f"tl.exp(tl.log({{0}}) / {float(order)!r})", powered)


def _logsumexp(v: RowNode) -> RowNode:
    top = reduce("shift_max", v)
    # A row of -inf (or one holding +inf) keeps its max as the result instead of inf - inf.
    shift = code('tl.where(tl.abs({0}) == float("inf"), 0.0, {0})', top)
    total = reduce("sum", code("tl.exp({0} - {1})", v, shift))
    return code("(tl.log({0}) + {1})", total, shift)


def _softmax(v: RowNode) -> RowNode:
    shifted = code("tl.exp({0} - {1})", v, reduce("shift_max", v))
    return code("({0} / {1})", shifted, reduce("sum", shifted))


def _log_softmax(v: RowNode) -> RowNode:
    top = reduce("shift_max", v)
    # The sum of exp(v - max) is an online sum: the looped schedule takes it in the same pass as the max.
    return code("({0} - {1} - tl.log({2}))", v, top, reduce("sum", code("tl.exp({0} - {1})", v, top)))


def _full_rule(build: Callable[[Expander, Node, RowNode], RowNode], dims: Callable[[Expander, Node], object]
               ) -> Callable[..., Value]:
    def rule(x: Expander, e: Node) -> Value:
        x.reduced_dims(e, e.args[0], dims(x, e))
        return Value(build(x, e, x.tile(e.args[0])), "full")

    return rule


def _last_dims(x: Expander, e: Node) -> object:
    count = attr(e, "normalized_ndim")
    if not isinstance(count, int) or count < 1:
        raise NotRowLowerable(f"{to_text(e)}: normalized_ndim={count!r} must be a positive integer")
    return tuple(range(-count, 0))


def _affine(x: Expander, e: Node, v: RowNode) -> RowNode:
    for name in ("weight", "bias"):
        given = operand(e, name)
        if given is not None:
            v = code("({0} * {1})" if name == "weight" else "({0} + {1})", v, x.tile(given))
    return v


def _layer_norm(x: Expander, e: Node, v: RowNode) -> RowNode:
    centred = code("({0} - {1})", v, mean(v))
    variance = mean(code("({0} * {0})", centred))
    return _affine(x, e, code("({0} * tl.rsqrt({1} + {2}))", centred, variance, scalar(x, e, "eps")))


def _rms_norm(x: Expander, e: Node, v: RowNode) -> RowNode:
    eps = e.attr("eps", None)
    if eps is None or (isinstance(eps, Const) and eps.value is None):
        # PyTorch takes the machine epsilon of the input's dtype when eps is not given.
        eps_node = number(torch.finfo(torch_dtype(x.tensor(e.args[0]).dtype)).eps)
    else:
        eps_node = scalar(x, e, "eps")
    return _affine(x, e, code("({0} * tl.rsqrt({1} + {2}))", v, mean(code("({0} * {0})", v)), eps_node))


def _batch_norm(x: Expander, e: Node) -> Value:
    """Lower batch_norm with running statistics: per-channel vectors read along dim 1, no reduction."""
    shape = x.shape(e.args[0])
    if len(shape) < 2:
        raise NotRowLowerable(f"{to_text(e)}: batch_norm needs a channel dim (input of rank 2 or more)")
    x.reduced_dims(e, e.args[0], 1)
    v = x.tile(e.args[0])
    channel: dict[str, RowNode] = {}
    for name in ("running_mean", "running_var", "weight", "bias"):
        given = operand(e, name)
        if given is None:
            continue
        if not isinstance(given, Ref) or x.shape(given) != (shape[1],):
            raise NotRowLowerable(f"{to_text(e)}: {name} must be an input of shape [{shape[1]}]")
        x.channel_inputs.add(given.name)
        channel[name] = x.tile(given)
    if "running_mean" not in channel or "running_var" not in channel:
        raise NotRowLowerable(f"{to_text(e)}: inference batch_norm needs running_mean and running_var")
    out = code("(({0} - {1}) * tl.rsqrt({2} + {3}))", v, channel["running_mean"], channel["running_var"],
               scalar(x, e, "eps"))
    if "weight" in channel:
        out = code("({0} * {1})", out, channel["weight"])
    if "bias" in channel:
        out = code("({0} + {1})", out, channel["bias"])
    return Value(out, "full")


def _instance_norm(x: Expander, e: Node, v: RowNode) -> RowNode:
    for name in ("running_mean", "running_var", "weight", "bias"):
        if operand(e, name) is not None:
            raise NotRowLowerable(f"{to_text(e)}: instance_norm with {name} (a per-channel vector beside rows of "
                                  "spatial positions) is not lowered yet")
    if attr(e, "use_input_stats") is not True:
        raise NotRowLowerable(f"{to_text(e)}: instance_norm with use_input_stats=False is not lowered")
    centred = code("({0} - {1})", v, mean(v))
    return code("({0} * tl.rsqrt({1} + {2}))", centred, mean(code("({0} * {0})", centred)), scalar(x, e, "eps"))


def _spatial_dims(x: Expander, e: Node) -> object:
    rank = len(x.shape(e.args[0]))
    if rank < 3:
        raise NotRowLowerable(f"{to_text(e)}: instance_norm needs spatial dims (input of rank 3 or more)")
    return tuple(range(2, rank))


def _normalize(x: Expander, e: Node, v: RowNode) -> RowNode:
    length = _p_norm(e, v, attr(e, "p"))
    return code("({0} / tl.maximum({1}, {2}))", v, length, scalar(x, e, "eps"))


def _cosine(x: Expander, e: Node) -> Value:
    first, second = e.args[0], e.args[1]
    if x.shape(first) != x.shape(second):
        raise NotRowLowerable(f"{to_text(e)}: x1 and x2 of different shapes (broadcast) are not lowered yet")
    x.reduced_dims(e, first, attr(e, "dim"))
    a, b = x.tile(first), x.tile(second)
    eps = scalar(x, e, "eps")
    norm_a = code("tl.maximum(tl.sqrt({0}), {1})", reduce("sum", code("({0} * {0})", a)), eps)
    norm_b = code("tl.maximum(tl.sqrt({0}), {1})", reduce("sum", code("({0} * {0})", b)), eps)
    return Value(code("({0} / ({1} * {2}))", reduce("sum", code("({0} * {1})", a, b)), norm_a, norm_b), "dropped")


def _scan_rule(x: Expander, e: Node) -> Value:
    x.reduced_dims(e, e.args[0], attr(e, "dim"))
    return Value(scan(e.op, x.tile(e.args[0])), "full")


_RULES: dict[str, Callable[[Expander, Node], Value]] = LOSS_RULES | {
    "sum": _reduction(lambda x, e, v: reduce("sum", v)),
    "mean": _reduction(lambda x, e, v: mean(v)),
    "amax": _reduction(lambda x, e, v: reduce("max", v)),
    "amin": _reduction(lambda x, e, v: reduce("min", v)),
    "prod": _reduction(lambda x, e, v: reduce("prod", v)),
    "argmax": _reduction(_arg("max")),
    "argmin": _reduction(_arg("min")),
    "var": _reduction(_var),
    "std": _reduction(lambda x, e, v: code("tl.sqrt({0})", _var(x, e, v))),
    "vector_norm": _reduction(_norm),
    "logsumexp": _reduction(lambda x, e, v: _logsumexp(v)),
    "softmax": _full_rule(lambda x, e, v: _softmax(v), lambda x, e: attr(e, "dim")),
    "log_softmax": _full_rule(lambda x, e, v: _log_softmax(v), lambda x, e: attr(e, "dim")),
    "softmin": _full_rule(lambda x, e, v: _softmax(code("(-{0})", v)), lambda x, e: attr(e, "dim")),
    "layer_norm": _full_rule(_layer_norm, _last_dims),
    "rms_norm": _full_rule(_rms_norm, _last_dims),
    "normalize": _full_rule(_normalize, lambda x, e: attr(e, "dim")),
    "batch_norm": _batch_norm,
    "instance_norm": _full_rule(_instance_norm, _spatial_dims),
    "cosine_similarity": _cosine,
    "cumsum": _scan_rule,
    "cumprod": _scan_rule,
    "cummax": _scan_rule,
    "cummin": _scan_rule,
    "logcumsumexp": _scan_rule,
}
LOWERED_OPS = frozenset(_RULES)


def expand(expr: Expr, types: dict[str, ValueType], inputs: list[str]) -> RowGraph:
    """Rewrite expr for the row engine; NotRowLowerable names what it cannot write."""
    expander = Expander(types, inputs, _RULES)
    found = expander.value(expr)
    if expander.dims is None or expander.rank is None:
        raise NotRowLowerable("the operator reduces nothing: it is elementwise")
    if expander.total is not None and expander.total_of is not expr:
        raise NotRowLowerable(f"{to_text(expr)}: a loss reduced to one number must be the whole operator "
                              "(use reduction='none' to combine per-row losses)")
    expander.settle(found.refs, "full")
    if found.node.level == "scalar":
        raise NotRowLowerable("the operator's result does not depend on any input")
    output: Literal["full", "kept", "dropped", "total"] = (
        "total" if expander.total else "dropped" if found.space == "dropped"
        else "full" if found.node.level == "tile" else "kept")
    total = expander.total
    if total is not None and total.denominator is not None:
        total = Total(total.mean, _retag(total.denominator, expander.spaces), total.count)
    return RowGraph(
        root=_retag(found.node, expander.spaces), rank=expander.rank, dims=expander.dims, output=output,
        tile_inputs=[n for n in inputs if expander.spaces.get(n) == "full"],
        row_inputs=[n for n in inputs if expander.spaces.get(n) == "dropped"],
        helpers=sorted(set(expander.helpers)), total=total,
        channel_inputs=[n for n in inputs if n in expander.channel_inputs],
    )


def _retag(node: RowNode, spaces: dict[str, Space]) -> RowNode:
    """Rebuild the graph with each input marked as a tile or a per-row vector."""
    memo: dict[RowNode, RowNode] = {}

    def visit(n: RowNode) -> RowNode:
        if n in memo:
            return memo[n]
        if n.kind == "input":
            built = RowNode("input", n.text, tile_input=spaces.get(n.text, "full") != "dropped")
        else:
            built = RowNode(n.kind, n.text, tuple(visit(a) for a in n.args), n.helpers)
        memo[n] = built
        return built

    return visit(node)
