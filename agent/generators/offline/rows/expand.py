"""Rewrite an IR expression into the row engine's graph: every reduction, softmax, norm and scan along one dim set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch

from agent.generators.offline.lowering import Lowered, _apply, _view_of
from agent.generators.offline.triton_ops import TRITON
from agent.ir import registry
from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.infer import infer, torch_dtype
from agent.ir.printer import to_text
from agent.ir.types import IRError, TensorType, ValueType

from .graph import INDEX, LENGTH, RowNode, code, mean, number, reduce, scan

Space = Literal["full", "dropped", "any"]
# Index past any row: argmax and argmin take the smallest index that qualifies.
_NO_INDEX = "2147483648.0"


class NotRowLowerable(ValueError):
    """An expression the row engine cannot write; the message says which node and why."""


@dataclass
class RowGraph:
    """The operator as the row engine sees it."""

    root: RowNode
    rank: int  # rank of the iteration space (the shape every reduced input shares)
    dims: tuple[int, ...]  # the reduced dims, contiguous and ascending, counted from 0
    output: Literal["full", "kept", "dropped"]  # the output's shape: the iteration space, with 1s, or without dims
    tile_inputs: list[str] = field(default_factory=list)
    row_inputs: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)


@dataclass
class _Value:
    node: RowNode
    space: Space
    refs: frozenset[str] = frozenset()  # inputs whose space the context still decides


class _Expander:
    def __init__(self, types: dict[str, ValueType], inputs: list[str]) -> None:
        self.types = types
        self.inputs = inputs
        self.spaces: dict[str, Space] = {}
        self.dims: tuple[int, ...] | None = None
        self.rank: int | None = None
        self.helpers: list[str] = []

    def value(self, e: Expr) -> _Value:
        if isinstance(e, Ref):
            if e.name in self.inputs:
                return _Value(RowNode("input", e.name), self.spaces.get(e.name, "any"), frozenset({e.name}))
            return _Value(RowNode("param", e.name), "any")
        if isinstance(e, Const):
            if not isinstance(e.value, (int, float)) or isinstance(e.value, bool):
                raise NotRowLowerable(f"{e.value!r} is not a number the kernel can use")
            return _Value(number(e.value), "any")
        if _view_of(e) is not None:
            raise NotRowLowerable(f"{to_text(e)}: a viewed input beside a reduction is not lowered yet")
        op = registry.get(e.op)
        if op.family == "elementwise":
            return self.elementwise(e)
        rule = _RULES.get(e.op)
        if rule is None:
            raise NotRowLowerable(f"{to_text(e)} ({e.op}: the row engine does not lower {op.family} op {e.op} yet)")
        return rule(self, e)

    def elementwise(self, e: Node) -> _Value:
        if e.op not in TRITON:
            raise NotRowLowerable(f"{to_text(e)} ({e.op} has no Triton spelling)")
        if any(isinstance(v, Node) for _, v in e.attrs):
            raise NotRowLowerable(f"{to_text(e)}: an attribute computed from tensors is not lowered")
        values = [self.value(a) for a in e.args]
        lowered = Lowered(body=[], helpers=[])
        template = _apply(e, [f"{{{i}}}" for i in range(len(values))], lowered)
        self.helpers += lowered.helpers
        return self.combine(template, values, tuple(lowered.helpers), e)

    def combine(self, template: str, values: list[_Value], helpers: tuple[str, ...], e: Expr) -> _Value:
        spaces = {v.space for v in values} - {"any"}
        if len(spaces) > 1:
            raise NotRowLowerable(f"{to_text(e)}: a value reduced without keepdim meets a full-size tensor "
                                  "(the broadcast would pair different dims)")
        space: Space = spaces.pop() if spaces else "any"
        refs = frozenset().union(*(v.refs for v in values))
        if space != "any":
            self.settle(refs, space)
            refs = frozenset()
        return _Value(code(template, *(v.node for v in values), helpers=helpers), space, refs)

    def settle(self, names: frozenset[str], space: Space) -> None:
        for name in names:
            if self.spaces.setdefault(name, space) != space:
                raise NotRowLowerable(f"{name} is used both at full size and per reduced row")

    def tile(self, e: Expr) -> RowNode:
        """Expand an operand of a reduction: it lives in the full iteration space."""
        found = self.value(e)
        if found.space == "dropped":
            raise NotRowLowerable(f"{to_text(e)}: reducing an already reduced value (a second reduction over "
                                  "other dims) is not lowered yet")
        self.settle(found.refs, "full")
        return found.node

    def reduced_dims(self, e: Node, operand: Expr, dims: object) -> None:
        """Record the dims a reduction runs along; every reduction of the operator must share them."""
        shape = self.shape(operand)
        rank = len(shape)
        if dims is None or dims == ():
            wanted = tuple(range(rank))
        else:
            listed = dims if isinstance(dims, tuple) else (dims,)
            if not all(isinstance(d, int) and -max(rank, 1) <= d < max(rank, 1) for d in listed):
                raise NotRowLowerable(f"{to_text(e)}: dims {dims} do not fit rank {rank}")
            wanted = tuple(sorted({d % rank for d in listed})) if rank else ()
        if wanted and wanted != tuple(range(wanted[0], wanted[-1] + 1)):
            raise NotRowLowerable(f"{to_text(e)}: the reduced dims {list(wanted)} are not adjacent")
        if self.dims is None:
            self.dims, self.rank = wanted, rank
        elif (self.dims, self.rank) != (wanted, rank):
            raise NotRowLowerable(f"{to_text(e)}: reduces dims {list(wanted)} of a rank-{rank} tensor while another "
                                  f"reduction of the operator reduces {list(self.dims)} of rank {self.rank}")

    def tensor(self, e: Expr) -> TensorType:
        """Return the type of a tensor operand on the first spec case."""
        try:
            found = infer(e, self.types)
        except IRError as exc:
            raise NotRowLowerable(str(exc)) from None
        if not isinstance(found, TensorType):
            raise NotRowLowerable(f"{to_text(e)} is a scalar, not a tensor")
        return found

    def shape(self, e: Expr) -> tuple[int, ...]:
        return self.tensor(e).shape


def _attr(e: Node, name: str) -> object:
    op = registry.get(e.op)
    param = op.param(name)
    default = None if param is None or param.default == registry.REQUIRED else param.default
    value = e.attr(name, default)
    return value.value if isinstance(value, Const) else value


def _operand(e: Node, name: str) -> Expr | None:
    names = [p.name for p in registry.get(e.op).operands]
    index = names.index(name) if name in names else len(e.args)
    if index >= len(e.args):
        return None
    found = e.args[index]
    return None if isinstance(found, Const) and found.value is None else found


def _scalar(x: _Expander, e: Node, name: str) -> RowNode:
    given = e.attr(name, None)
    value: object = _attr(e, name) if given is None else given.value if isinstance(given, Const) else given
    if isinstance(value, Ref):
        return RowNode("param", value.name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number(value)
    raise NotRowLowerable(f"{to_text(e)}: {name}={value!r} is not a number the kernel can use")


def _reduction(build: Callable[[_Expander, Node, RowNode], RowNode], dim_attr: str = "dim") -> Callable[..., _Value]:
    def rule(x: _Expander, e: Node) -> _Value:
        x.reduced_dims(e, e.args[0], _attr(e, dim_attr))
        node = build(x, e, x.tile(e.args[0]))
        return _Value(node, "full" if _attr(e, "keepdim") else "dropped")

    return rule


def _arg(best: str) -> Callable[[_Expander, Node, RowNode], RowNode]:
    def build(x: _Expander, e: Node, v: RowNode) -> RowNode:
        # The first index holding the extreme, or the first NaN (PyTorch counts NaN as the extreme).
        extreme = reduce(best, v)
        hit = code(f"tl.where(({{0}} == {{1}}) | ({{0}} != {{0}}), {{2}}, {_NO_INDEX})", v, extreme, INDEX)
        return reduce("min", hit)

    return build


def _var(x: _Expander, e: Node, v: RowNode) -> RowNode:
    centred = code("({0} - {1})", v, mean(v))
    correction = _attr(e, "correction")
    if not isinstance(correction, (int, float)) or isinstance(correction, bool):
        raise NotRowLowerable(f"{to_text(e)}: correction={correction!r} must be a number")
    return code(f"({{0}} / tl.maximum({{1}} - {float(correction)!r}, 0.0))", reduce("sum", code("({0} * {0})",
                                                                                                centred)), LENGTH)


def _norm(x: _Expander, e: Node, v: RowNode) -> RowNode:
    order = _attr(e, "ord")
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
    centred = code("({0} - {1})", v, reduce("shift_max", v))
    return code("({0} - tl.log({1}))", centred, reduce("sum", code("tl.exp({0})", centred)))


def _full_rule(build: Callable[[_Expander, Node, RowNode], RowNode], dims: Callable[[_Expander, Node], object]
               ) -> Callable[..., _Value]:
    def rule(x: _Expander, e: Node) -> _Value:
        x.reduced_dims(e, e.args[0], dims(x, e))
        return _Value(build(x, e, x.tile(e.args[0])), "full")

    return rule


def _last_dims(x: _Expander, e: Node) -> object:
    count = _attr(e, "normalized_ndim")
    if not isinstance(count, int) or count < 1:
        raise NotRowLowerable(f"{to_text(e)}: normalized_ndim={count!r} must be a positive integer")
    return tuple(range(-count, 0))


def _affine(x: _Expander, e: Node, v: RowNode) -> RowNode:
    for name in ("weight", "bias"):
        operand = _operand(e, name)
        if operand is not None:
            v = code("({0} * {1})" if name == "weight" else "({0} + {1})", v, x.tile(operand))
    return v


def _layer_norm(x: _Expander, e: Node, v: RowNode) -> RowNode:
    centred = code("({0} - {1})", v, mean(v))
    variance = mean(code("({0} * {0})", centred))
    return _affine(x, e, code("({0} * tl.rsqrt({1} + {2}))", centred, variance, _scalar(x, e, "eps")))


def _rms_norm(x: _Expander, e: Node, v: RowNode) -> RowNode:
    eps = e.attr("eps", None)
    if eps is None or (isinstance(eps, Const) and eps.value is None):
        # PyTorch takes the machine epsilon of the input's dtype when eps is not given.
        eps_node = number(torch.finfo(torch_dtype(x.tensor(e.args[0]).dtype)).eps)
    else:
        eps_node = _scalar(x, e, "eps")
    return _affine(x, e, code("({0} * tl.rsqrt({1} + {2}))", v, mean(code("({0} * {0})", v)), eps_node))


def _normalize(x: _Expander, e: Node, v: RowNode) -> RowNode:
    length = _p_norm(e, v, _attr(e, "p"))
    return code("({0} / tl.maximum({1}, {2}))", v, length, _scalar(x, e, "eps"))


def _cosine(x: _Expander, e: Node) -> _Value:
    first, second = e.args[0], e.args[1]
    if x.shape(first) != x.shape(second):
        raise NotRowLowerable(f"{to_text(e)}: x1 and x2 of different shapes (broadcast) are not lowered yet")
    x.reduced_dims(e, first, _attr(e, "dim"))
    a, b = x.tile(first), x.tile(second)
    eps = _scalar(x, e, "eps")
    norm_a = code("tl.maximum(tl.sqrt({0}), {1})", reduce("sum", code("({0} * {0})", a)), eps)
    norm_b = code("tl.maximum(tl.sqrt({0}), {1})", reduce("sum", code("({0} * {0})", b)), eps)
    return _Value(code("({0} / ({1} * {2}))", reduce("sum", code("({0} * {1})", a, b)), norm_a, norm_b), "dropped")


def _scan_rule(x: _Expander, e: Node) -> _Value:
    x.reduced_dims(e, e.args[0], _attr(e, "dim"))
    return _Value(scan(e.op, x.tile(e.args[0])), "full")


_RULES: dict[str, Callable[[_Expander, Node], _Value]] = {
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
    "softmax": _full_rule(lambda x, e, v: _softmax(v), lambda x, e: _attr(e, "dim")),
    "log_softmax": _full_rule(lambda x, e, v: _log_softmax(v), lambda x, e: _attr(e, "dim")),
    "softmin": _full_rule(lambda x, e, v: _softmax(code("(-{0})", v)), lambda x, e: _attr(e, "dim")),
    "layer_norm": _full_rule(_layer_norm, _last_dims),
    "rms_norm": _full_rule(_rms_norm, _last_dims),
    "normalize": _full_rule(_normalize, lambda x, e: _attr(e, "dim")),
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
    expander = _Expander(types, inputs)
    found = expander.value(expr)
    if expander.dims is None or expander.rank is None:
        raise NotRowLowerable("the operator reduces nothing: it is elementwise")
    expander.settle(found.refs, "full")
    if found.node.level == "scalar":
        raise NotRowLowerable("the operator's result does not depend on any input")
    output: Literal["full", "kept", "dropped"] = (
        "dropped" if found.space == "dropped" else "full" if found.node.level == "tile" else "kept")
    return RowGraph(
        root=_retag(found.node, expander.spaces), rank=expander.rank, dims=expander.dims, output=output,
        tile_inputs=[n for n in inputs if expander.spaces.get(n) == "full"],
        row_inputs=[n for n in inputs if expander.spaces.get(n) == "dropped"],
        helpers=sorted(set(expander.helpers)),
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
