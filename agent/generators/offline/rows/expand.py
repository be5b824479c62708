"""Rewrite an IR expression into the row engine's graph: every reduction, softmax, norm, scan and loss along one
dim set."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from agent.generators.offline.triton_ops import nan_max
from agent.ir.expr import Expr, Node, Ref
from agent.ir.printer import to_text
from agent.ir.types import ValueType

from .expander import Expander, NotRowLowerable, RowGraph, Space, Value, attr, full_rule, scalar
from .graph import EXP_DIFF, INDEX, LENGTH, RowNode, Total, code, mean, reduce, scan
from .losses import LOSS_RULES
from .norms import NORM_RULES

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
    total = reduce("sum", code(EXP_DIFF, v, shift))
    return code("(tl.log({0}) + {1})", total, shift)


def _softmax(v: RowNode) -> RowNode:
    shifted = code(EXP_DIFF, v, reduce("shift_max", v))
    return code("({0} / {1})", shifted, reduce("sum", shifted))


def _log_softmax(v: RowNode) -> RowNode:
    top = reduce("shift_max", v)
    # The sum of exp(v - max) is an online sum: the looped schedule takes it in the same pass as the max.
    return code("({0} - {1} - tl.log({2}))", v, top, reduce("sum", code(EXP_DIFF, v, top)))


def _normalize(x: Expander, e: Node, v: RowNode) -> RowNode:
    length = _p_norm(e, v, attr(e, "p"))
    return code("({0} / " + nan_max("{1}", "{2}") + ")", v, length, scalar(x, e, "eps"))


def _cosine(x: Expander, e: Node) -> Value:
    first, second = e.args[0], e.args[1]
    if x.shape(first) != x.shape(second):
        raise NotRowLowerable(f"{to_text(e)}: x1 and x2 of different shapes (broadcast) are not lowered yet")
    x.reduced_dims(e, first, attr(e, "dim"))
    a, b = x.tile(first), x.tile(second)
    eps = scalar(x, e, "eps")
    clamped = nan_max("tl.sqrt({0})", "{1}")  # a NaN row stays NaN
    norm_a = code(clamped, reduce("sum", code("({0} * {0})", a)), eps)
    norm_b = code(clamped, reduce("sum", code("({0} * {0})", b)), eps)
    return Value(code("({0} / ({1} * {2}))", reduce("sum", code("({0} * {1})", a, b)), norm_a, norm_b), "dropped")


def _scan_rule(x: Expander, e: Node) -> Value:
    x.reduced_dims(e, e.args[0], attr(e, "dim"))
    return Value(scan(e.op, x.tile(e.args[0])), "full")


_RULES: dict[str, Callable[[Expander, Node], Value]] = LOSS_RULES | NORM_RULES | {
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
    "softmax": full_rule(lambda x, e, v: _softmax(v), lambda x, e: attr(e, "dim")),
    "log_softmax": full_rule(lambda x, e, v: _log_softmax(v), lambda x, e: attr(e, "dim")),
    "softmin": full_rule(lambda x, e, v: _softmax(code("(-{0})", v)), lambda x, e: attr(e, "dim")),
    "normalize": full_rule(_normalize, lambda x, e: attr(e, "dim")),
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
    if expander.groups:
        _group_views(expander)
    total = expander.total
    if total is not None and total.denominator is not None:
        total = Total(total.mean, _retag(total.denominator, expander.spaces), total.count)
    return RowGraph(
        root=_retag(found.node, expander.spaces), rank=expander.rank, dims=expander.dims, output=output,
        tile_inputs=[n for n in inputs if expander.spaces.get(n) == "full"],
        row_inputs=[n for n in inputs if expander.spaces.get(n) == "dropped"],
        helpers=sorted(set(expander.helpers)), total=total,
        views=dict(expander.views), groups=expander.groups,
    )


def _group_views(expander: Expander) -> None:
    """See the group norm's other full-size inputs (a residual, say) through the same view as its input."""
    grouped = next(n for n, role in expander.views.items() if role == "grouped")
    shape = expander.shape(Ref(grouped))
    for name, space in expander.spaces.items():
        if space == "full" and name not in expander.views:
            if expander.shape(Ref(name)) != shape:
                raise NotRowLowerable(f"{name} of shape {list(expander.shape(Ref(name)))} beside a group norm of "
                                      f"{grouped} {list(shape)}: only inputs of the same shape are lowered with it")
            expander.views[name] = "grouped"


def _retag(node: RowNode, spaces: dict[str, Space]) -> RowNode:
    """Rebuild the graph with each input marked as a tile or a per-row vector."""
    memo: dict[RowNode, RowNode] = {}

    def visit(n: RowNode) -> RowNode:
        if n in memo:
            return memo[n]
        if n.kind == "input":
            built = RowNode("input", n.text, tile_input=spaces.get(n.text, "full") != "dropped")
        else:
            built = RowNode(n.kind, n.text, tuple(visit(a) for a in n.args))
        memo[n] = built
        return built

    return visit(node)
