"""Bookkeeping shared by the readers of a traced graph: node values, unmapped ops, problems, binding."""

from __future__ import annotations

from typing import Any

from agent.ir import registry
from agent.ir.bind import bind
from agent.ir.expr import Const, Expr
from agent.ir.infer import infer
from agent.ir.registry import OpDef
from agent.ir.types import IRError, TensorType, ValueType
from agent.reader.code.values import UNREAD, Marker, Reading, lift, plain

_DTYPED = ("reduction", "softmax", "scan")  # families whose torch calls take dtype= (a cast of the input first)
# Keywords torch functions pass along at values that change nothing; an op without them drops them.
_NEUTRAL: dict[str, object] = {"_stacklevel": 3, "inplace": False, "norm_type": 2.0, "scale_grad_by_freq": False,
                               "sparse": False, "enable_gqa": False}


class ReaderBase:
    """What each node stands for, what could not be read, and how calls are bound to IR ops."""

    def __init__(self) -> None:
        self.env: dict[str, Reading] = {}
        self.unmapped: list[str] = []
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.current: dict[str, Any] = {}
        self.types: dict[str, ValueType] = {}

    def module_tensor(self, path: str) -> Reading:
        """Return the IR input of a module tensor (defined by the walker)."""
        raise NotImplementedError

    def decode(self, data: Any) -> Reading:
        """Turn a JSON argument into a reading: node references become what the node stands for."""
        if isinstance(data, dict) and set(data) == {"node"}:
            return self.env.get(data["node"], UNREAD)
        if isinstance(data, list):
            items = tuple(self.decode(v) for v in data)
            return UNREAD if any(i is UNREAD for i in items) else items  # type: ignore[return-value]
        return lift(data)

    def where(self) -> str:
        """Name the node being read, with its line in the user's code."""
        line = self.current.get("line")
        target = self.current.get("target", "?")
        shown = f"{target}" if self.current.get("op") != "call_method" else f"Tensor.{target}"
        return f"{shown} (line {line})" if line else shown

    def problem(self, why: str) -> Reading:
        """Record a step that could not be read."""
        if why not in self.problems:
            self.problems.append(why)
        return UNREAD

    def unmapped_op(self, name: str) -> Reading:
        """Record an operation the IR does not have."""
        if name not in self.unmapped:
            self.unmapped.append(name)
        return UNREAD

    def call(self, op: OpDef | str, args: list[Any], kwargs: dict[str, Any]) -> Expr:
        """Bind an op, dropping keywords torch passes at neutral values (`dtype=None`, `inplace=False`)."""
        op = registry.get(op) if isinstance(op, str) else op
        known = {n for p in op.signature for n in (p.name, *p.aliases)}
        kwargs = dict(kwargs)
        if "unbiased" in kwargs and op.name in ("var", "std"):
            kwargs["correction"] = Const(1 if plain(kwargs.pop("unbiased")) else 0)
        if "dtype" in kwargs and "dtype" not in known and op.family in _DTYPED and plain(kwargs["dtype"]) is not None:
            args = [self.call("cast", [args[0], kwargs.pop("dtype")], {}), *args[1:]]  # torch.sum(dtype=) casts first
        kept: dict[str, Any] = {}
        for key, value in kwargs.items():
            if key not in known and (plain(value) is None or _NEUTRAL.get(key, ()) == plain(value)):
                continue
            kept[key] = value
        for value in (*args, *kept.values()):
            if isinstance(value, Marker):
                raise IRError(f"{self.where()}: {op.name} cannot take {value.kind} {value.value!r}")
        return bind(op, args, kept, self.where())

    def dtype_of(self, expr: Expr) -> str:
        """Return the dtype of a tensor expression."""
        found = infer(expr, self.types)
        assert isinstance(found, TensorType)
        return found.dtype

    def shape_of(self, expr: Expr) -> tuple[int, ...]:
        """Return the shape of a tensor expression."""
        found = infer(expr, self.types)
        assert isinstance(found, TensorType)
        return found.shape

    def _alias(self, result: Reading) -> None:
        """Make the node an in-place call changed stand for the new value in the nodes after it."""
        first = self.current["args"][0] if self.current.get("args") else None
        if isinstance(first, dict) and set(first) == {"node"}:
            self.env[first["node"]] = result
