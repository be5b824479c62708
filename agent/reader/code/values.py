"""Values a traced graph's nodes stand for while it is read into the IR, besides IR expressions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.ir.bind import DType, Value
from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.types import IR_DTYPES


@dataclass(frozen=True)
class Extreme:
    """`torch.max(x, dim)`: a pair whose item 0 (`.values`) is amax and item 1 (`.indices`) argmax."""

    values: Expr
    indices: Expr


@dataclass(frozen=True)
class Pieces:
    """`x.chunk(n, dim)` / `x.split(size, dim)`: the pieces, read only when one is taken."""

    method: str
    input: Expr
    dim: int
    bounds: tuple[tuple[int, int], ...]  # (start, length) of each piece along dim


@dataclass(frozen=True)
class Unread:
    """A node that could not be read (the reason was recorded once, where it arose)."""


@dataclass(frozen=True)
class Marker:
    """An argument the IR has no value for: a device, a slice, `...`, or an object shown by its repr."""

    kind: str
    value: Any = None


UNREAD = Unread()
# What a node of the graph stands for.
Reading = Value | Extreme | Pieces | Unread | Marker | dict[str, Any]


def is_tensor(value: object) -> bool:
    """Tell whether a reading is a tensor expression (not a number)."""
    return isinstance(value, (Ref, Node))


def lift(data: Any) -> Reading:
    """Turn a constant of the trace's JSON (a size, a shape, a dtype, a number) into a bind value."""
    if isinstance(data, list):
        return tuple(lift(v) for v in data)  # type: ignore[misc]
    if isinstance(data, dict):
        if len(data) != 1:
            return Marker("other", data)
        key, value = next(iter(data.items()))
        if key == "dtype":
            return DType(value) if value in IR_DTYPES else Marker("dtype", value)
        if key == "float":
            return Const(float(value))
        if key == "slice":
            return Marker("slice", tuple(_plain(lift(v)) for v in value))
        if key == "ellipsis":
            return Marker("ellipsis")
        if key == "dict":
            return {k: lift(v) for k, v in value.items()}
        return Marker(key, value)
    if isinstance(data, str):
        return data
    return Const(data)


def _plain(value: Reading) -> Any:
    return value.value if isinstance(value, Const) else value


def plain(value: Reading) -> Any:
    """Return the Python number of a Const (tuples element by element), else the value itself."""
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return _plain(value)
