"""Integer inputs that index another input (class targets, gather indices): the range a random draw must keep to."""

from __future__ import annotations

from dataclasses import dataclass

from agent.ir.expr import Const, Expr, Node, Ref, walk
from agent.ir.types import TensorType, ValueType

_INDEXING = ("cross_entropy", "nll_loss", "gather", "index_select", "embedding")


@dataclass(frozen=True)
class IndexInput:
    """An input holding indices into dim `axis` of input `data`; `ignored` is a value that marks an entry skipped."""

    data: str
    axis: int
    ignored: int | None = None

    def high(self, shapes: dict[str, list[int]] | dict[str, tuple[int, ...]]) -> int:
        """Return the exclusive upper bound of a valid index for a shape case."""
        shape = shapes[self.data]
        return int(shape[self.axis]) if shape else 1


def index_inputs(expr: Expr, types: dict[str, ValueType]) -> dict[str, IndexInput]:
    """Find the inputs used as indices (a loss's class target, gather's index) and what they index."""
    found: dict[str, IndexInput] = {}
    for e in walk(expr):
        if not isinstance(e, Node) or e.op not in _INDEXING or len(e.args) < 2:
            continue
        data, index = (e.args[1], e.args[0]) if e.op == "embedding" else (e.args[0], e.args[1])
        if not isinstance(index, Ref) or not isinstance(data, Ref):
            continue
        data_type, index_type = types.get(data.name), types.get(index.name)
        if not isinstance(data_type, TensorType) or not data_type.shape:
            continue
        if e.op in ("cross_entropy", "nll_loss"):
            if isinstance(index_type, TensorType) and index_type.shape == data_type.shape:
                continue  # class probabilities, not class indices
            axis = 1 if len(data_type.shape) > 1 else 0
            ignored = e.attr("ignore_index", -100)
            value = ignored.value if isinstance(ignored, Const) else ignored
            found[index.name] = IndexInput(data.name, axis, value if isinstance(value, int) else None)
        else:
            dim = e.attr("dim", 0)
            dim = dim.value if isinstance(dim, Const) else dim
            axis = 0 if e.op == "embedding" or not isinstance(dim, int) else dim % len(data_type.shape)
            found[index.name] = IndexInput(data.name, axis)
    return found
