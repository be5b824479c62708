"""The walk that rewrites an IR expression into the row engine's graph, and what every rule reads off a node."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from agent.generators.offline.lowering import Lowered, _apply, _view_of
from agent.generators.offline.triton_ops import TRITON
from agent.ir import registry
from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.infer import infer
from agent.ir.printer import to_text
from agent.ir.types import IRError, TensorType, ValueType

from .graph import RowNode, Total, code, number
from .views import viewed_shape

Space = Literal["full", "dropped", "any"]
Rules = Mapping[str, Callable[["Expander", Node], "Value"]]


class NotRowLowerable(ValueError):
    """An expression the row engine cannot write; the message says which node and why."""


@dataclass
class RowGraph:
    """The operator as the row engine sees it."""

    root: RowNode
    rank: int  # rank of the iteration space (the shape every reduced input shares)
    dims: tuple[int, ...]  # the reduced dims, contiguous and ascending, counted from 0
    # The output's shape: the iteration space, with 1s, without the reduced dims, or one number (a reduced loss).
    output: Literal["full", "kept", "dropped", "total"]
    tile_inputs: list[str] = field(default_factory=list)
    row_inputs: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    total: Total | None = None
    # Inputs seen through a view: "channel" (a per-channel vector lined up with dim 1) or "grouped" (a group norm's
    # [N, C, *S] input as [N, groups, C / groups, S]); `groups` is the group norm's group count, else 0.
    views: dict[str, str] = field(default_factory=dict)
    groups: int = 0

    def iteration_shapes(self, case: dict[str, list[int]]) -> dict[str, tuple[int, ...]]:
        """Return each input's shape in the iteration space (through its view) on a shape case."""
        return {n: viewed_shape(tuple(s), self.views.get(n, ""), self.rank, self.groups) for n, s in case.items()}


@dataclass
class Value:
    """A value met on the walk: its node, its space, and the inputs whose space the context still decides."""

    node: RowNode
    space: Space
    refs: frozenset[str] = frozenset()  # inputs whose space the context still decides


class Expander:
    """Walk an expression once, recording the reduced dims, each input's space and a loss's total."""

    def __init__(self, types: dict[str, ValueType], inputs: list[str], rules: Rules) -> None:
        self.rules = rules
        self.total: Total | None = None
        self.total_of: Expr | None = None  # the node whose result is the total: it must be the whole operator
        self.views: dict[str, str] = {}
        self.groups = 0
        self.types = types
        self.inputs = inputs
        self.spaces: dict[str, Space] = {}
        self.dims: tuple[int, ...] | None = None
        self.rank: int | None = None
        self.helpers: list[str] = []

    def value(self, e: Expr) -> Value:
        if isinstance(e, Ref):
            if e.name in self.inputs:
                return Value(RowNode("input", e.name), self.spaces.get(e.name, "any"), frozenset({e.name}))
            return Value(RowNode("param", e.name), "any")
        if isinstance(e, Const):
            if not isinstance(e.value, (int, float)) or isinstance(e.value, bool):
                raise NotRowLowerable(f"{e.value!r} is not a number the kernel can use")
            return Value(number(e.value), "any")
        if _view_of(e) is not None:
            raise NotRowLowerable(f"{to_text(e)}: a viewed input beside a reduction is not lowered yet")
        op = registry.get(e.op)
        if op.family == "elementwise":
            return self.elementwise(e)
        rule = self.rules.get(e.op)
        if rule is None:
            raise NotRowLowerable(f"{to_text(e)} ({e.op}: the row engine does not lower {op.family} op {e.op} yet)")
        return rule(self, e)

    def elementwise(self, e: Node) -> Value:
        if e.op not in TRITON:
            raise NotRowLowerable(f"{to_text(e)} ({e.op} has no Triton spelling)")
        if any(isinstance(v, Node) for _, v in e.attrs):
            raise NotRowLowerable(f"{to_text(e)}: an attribute computed from tensors is not lowered")
        values = [self.value(a) for a in e.args]
        lowered = Lowered(body=[], helpers=[])
        template = _apply(e, [f"{{{i}}}" for i in range(len(values))], lowered)
        self.helpers += lowered.helpers
        return self.combine(template, values, e)

    def combine(self, template: str, values: list[Value], e: Expr) -> Value:
        spaces = {v.space for v in values} - {"any"}
        if len(spaces) > 1:
            raise NotRowLowerable(f"{to_text(e)}: a value reduced without keepdim meets a full-size tensor "
                                  "(the broadcast would pair different dims)")
        space: Space = spaces.pop() if spaces else "any"
        refs = frozenset().union(*(v.refs for v in values))
        if space != "any":
            self.settle(refs, space)
            refs = frozenset()
        return Value(code(template, *(v.node for v in values)), space, refs)

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

    def row_operand(self, e: Expr) -> RowNode:
        """Expand an operand with one value per row (a class target): it lives in the reduced space."""
        found = self.value(e)
        if found.space == "full":
            raise NotRowLowerable(f"{to_text(e)}: a per-row operand that varies along the reduced dims")
        self.settle(found.refs, "dropped")
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
        self.fix_dims(e, wanted, rank)

    def view(self, e: Node, given: Expr, role: str, shape: tuple[int, ...]) -> None:
        """See an input through a view (role "channel" or "grouped"); it must be an input of the expected shape."""
        if not isinstance(given, Ref) or given.name not in self.inputs or self.shape(given) != shape:
            raise NotRowLowerable(f"{to_text(e)}: {to_text(given)} must be an input of shape {list(shape)}")
        if self.views.setdefault(given.name, role) != role:
            raise NotRowLowerable(f"{to_text(e)}: {given.name} is used both as a channel vector and as data")

    def fix_dims(self, e: Node, wanted: tuple[int, ...], rank: int) -> None:
        """Record the reduced dims and the iteration rank; every reduction of the operator must share them."""
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


def attr(e: Node, name: str) -> object:
    op = registry.get(e.op)
    param = op.param(name)
    default = None if param is None or param.default == registry.REQUIRED else param.default
    value = e.attr(name, default)
    return value.value if isinstance(value, Const) else value


def operand(e: Node, name: str) -> Expr | None:
    names = [p.name for p in registry.get(e.op).operands]
    index = names.index(name) if name in names else len(e.args)
    if index >= len(e.args):
        return None
    found = e.args[index]
    return None if isinstance(found, Const) and found.value is None else found


def scalar(x: Expander, e: Node, name: str) -> RowNode:
    given = e.attr(name, None)
    value: object = attr(e, name) if given is None else given.value if isinstance(given, Const) else given
    if isinstance(value, Ref):
        return RowNode("param", value.name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number(value)
    raise NotRowLowerable(f"{to_text(e)}: {name}={value!r} is not a number the kernel can use")


def full_rule(build: Callable[[Expander, Node, RowNode], RowNode], dims: Callable[[Expander, Node], object]
              ) -> Callable[..., Value]:
    """Return the rule of an op whose result has the input's shape (softmax, a norm): dims say what it reduces."""

    def rule(x: Expander, e: Node) -> Value:
        x.reduced_dims(e, e.args[0], dims(x, e))
        return Value(build(x, e, x.tile(e.args[0])), "full")

    return rule
