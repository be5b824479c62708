"""The row engine's graph: an operator as loads, float32 code, reductions and scans along one set of dims."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

Kind = Literal["input", "number", "param", "code", "reduce", "scan", "index", "length", "pick"]
Level = Literal["tile", "row", "scalar"]
# What a reduction or a scan combines with, and the value a masked-out element stands for.
# "shift_max" is a max that may skip NaN: the shift before exp in softmax and logsumexp, where a NaN in the row
# turns the result NaN through the sum anyway.
IDENTITY = {"sum": "0.0", "prod": "1.0", "max": '-float("inf")', "min": 'float("inf")', "shift_max": '-float("inf")',
            "logaddexp": '-float("inf")'}
# exp(a - b) of softmax, logsumexp and cross-entropy, as ex2.approx.ftz: tl.exp lowers to ex2.approx.f32, which keeps
# denormal results at extra instructions an element (cross-entropy over 32000 fp16 columns 84% -> 86% of copy on an
# H200). A term under 2^-126 of the row's max is flushed to 0, far inside every tolerance. The difference is taken
# first: x*log2(e) - max*log2(e) in one FMA was up to 2% faster but lost log_softmax's accuracy at magnitudes of 1e4.
EXP_DIFF = "tl.exp2(({0} - {1}) * 1.4426950408889634)"
SCAN_REDUCER = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min", "logcumsumexp": "logaddexp"}


@dataclass(frozen=True)
class RowNode:
    """One value of the kernel: a load, a number, code over other values, a reduction or a scan."""

    kind: Kind
    text: str = ""  # input or parameter name, a literal, a format string over {0}, {1}, ... or a reducer name
    args: tuple[RowNode, ...] = ()
    tile_input: bool = field(default=True, compare=False)  # inputs: varies along the reduced dims (else per row)

    @cached_property
    def level(self) -> Level:
        """Say where the value lives: a [rows, chunk] tile, a per-row vector, or a scalar."""
        if self.kind == "input":
            return "tile" if self.tile_input else "row"
        if self.kind in ("number", "param", "length"):
            return "scalar"
        if self.kind in ("index", "scan"):
            return "tile"
        if self.kind in ("reduce", "pick"):
            return "row"
        levels = {a.level for a in self.args}
        return "tile" if "tile" in levels else "row" if "row" in levels else "scalar"


@dataclass(frozen=True)
class Total:
    """A loss reduced to one number: the per-row values are added up, then divided for a mean.

    `denominator` is a per-row value whose total divides (a loss's weights of the rows it does not ignore);
    without one, a mean divides by `count`: every element, every row, or the first dim (kl_div's batchmean).
    """

    mean: bool
    denominator: RowNode | None = None
    count: Literal["elements", "rows", "batch"] = "elements"


LENGTH = RowNode("length")
INDEX = RowNode("index")


def number(value: float) -> RowNode:
    """Return a float literal."""
    return RowNode("number", repr(float(value)))


def code(template: str, *args: RowNode) -> RowNode:
    """Return code over the arguments ({0}, {1}, ... in the template); the graph holds the helpers it calls."""
    return RowNode("code", template, args)


def reduce(reducer: str, arg: RowNode) -> RowNode:
    """Return the reduction of a tile value along the reduced dims (sum, prod, max, min)."""
    return RowNode("reduce", reducer, (arg,))


def scan(op: str, arg: RowNode) -> RowNode:
    """Return an inclusive scan along the reduced dims (cumsum, cumprod, cummax, cummin, logcumsumexp)."""
    return RowNode("scan", op, (arg,))


def pick(values: RowNode, index: RowNode) -> RowNode:
    """Return each row's element of a loaded tile input at a per-row index along the reduced dims (else 0)."""
    return RowNode("pick", "", (values, index))


def mean(arg: RowNode) -> RowNode:
    """Return the mean along the reduced dims."""
    return code("({0} / {1})", reduce("sum", arg), LENGTH)


def topological(*roots: RowNode) -> list[RowNode]:
    """List every node once, arguments before their users."""
    order: list[RowNode] = []
    seen: set[RowNode] = set()

    def visit(node: RowNode) -> None:
        if node in seen:
            return
        seen.add(node)
        for arg in node.args:
            visit(arg)
        order.append(node)

    for root in roots:
        visit(root)
    return order


def depth(node: RowNode) -> int:
    """Count the reductions nested in a value (a reduction over a mean-centred tile has depth 2)."""
    inner = max((depth(a) for a in node.args), default=0)
    return inner + 1 if node.kind == "reduce" else inner


def reductions_at(roots: tuple[RowNode, ...], level: int) -> list[RowNode]:
    """List the reductions of a given depth under the roots, in evaluation order."""
    return [n for n in topological(*roots) if n.kind == "reduce" and depth(n) == level]
