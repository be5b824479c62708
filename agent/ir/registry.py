"""Operator definitions: each op's torch signature, spelling, family and cost, looked up by name."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from agent.ir.expr import Static
from agent.ir.types import TensorType, ValueType

Family = Literal["elementwise", "reduction", "softmax", "norm", "scan", "loss", "matmul", "conv", "attention",
                 "data-movement"]
ParamKind = Literal["tensor", "tensor?", "tensors", "scalar", "int", "dims", "bool", "str", "dtype", "ints"]
REQUIRED = "<required>"

# FLOPs of one application, from the operand types, the output type and the attributes.
FlopRule = Callable[[list[ValueType], TensorType, dict[str, object]], int]


@dataclass(frozen=True)
class Param:
    """One parameter of an op's torch signature, in torch's order: an operand or an attribute."""

    name: str
    kind: ParamKind
    default: Static = REQUIRED
    choices: tuple[str, ...] = ()
    keyword_only: bool = False  # torch takes it by keyword only (no positional slot)
    aliases: tuple[str, ...] = ()  # other keyword names torch spellings use (`p` for `ord`)

    @property
    def operand(self) -> bool:
        """Tell whether the parameter is a tensor operand rather than an attribute."""
        return self.kind in ("tensor", "tensor?", "tensors")

    @property
    def required(self) -> bool:
        """Tell whether a call must give this parameter."""
        return self.default == REQUIRED and self.kind != "tensor?"


@dataclass(frozen=True)
class OpDef:
    """An IR operator: how PyTorch computes it (the reference), how people spell it, what it costs."""

    name: str
    family: Family
    signature: tuple[Param, ...]
    torch: str  # a format string over the signature's names: the PyTorch rendering and the evaluator
    flops: FlopRule
    spellings: tuple[str, ...] = ()  # other call names that mean this op (torch.*, F.*, Tensor methods)
    infix: str | None = None  # "+" for add: rendered and read as an operator
    positive: tuple[str, ...] = ()  # operands on which the op is defined only for positive values
    summary: str = ""
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def operands(self) -> tuple[Param, ...]:
        """Return the tensor operands, in order."""
        return tuple(p for p in self.signature if p.operand)

    @property
    def attributes(self) -> tuple[Param, ...]:
        """Return the attributes, in order."""
        return tuple(p for p in self.signature if not p.operand)

    def param(self, name: str) -> Param | None:
        """Return the signature parameter of that name."""
        return next((p for p in self.signature if p.name == name), None)


def is_default(value: object, default: Static) -> bool:
    """Tell whether an attribute value equals its default (1 and 1.0 alike; True and 1 not)."""
    from agent.ir.expr import Const, Node, Ref

    if isinstance(value, Const):
        value = value.value
    if isinstance(value, (Ref, Node)):
        return False
    if isinstance(value, bool) or isinstance(default, bool) or value is None or default is None:
        return type(value) is type(default) and value == default
    return bool(value == default)


_OPS: dict[str, OpDef] = {}
_SPELLINGS: dict[str, str] = {}


def register(*defs: OpDef) -> None:
    """Add op definitions to the registry (each name and spelling once)."""
    for op in defs:
        if op.name in _OPS:
            raise ValueError(f"op {op.name} is registered twice")
        _OPS[op.name] = op
        for spelling in (op.name, *op.spellings):
            if _SPELLINGS.setdefault(spelling, op.name) != op.name:
                raise ValueError(f"spelling {spelling} names both {_SPELLINGS[spelling]} and {op.name}")


def get(name: str) -> OpDef:
    """Return the op of that name; KeyError if it is not registered."""
    _load()
    return _OPS[name]


def resolve(spelling: str) -> OpDef | None:
    """Return the op a call name means (`gelu`, `F.gelu` after its prefix is dropped, `amax`, ...)."""
    _load()
    name = _SPELLINGS.get(spelling) or _SPELLINGS.get(spelling.lower())
    return _OPS[name] if name else None


def all_ops() -> list[OpDef]:
    """Return every registered op, in registration order."""
    _load()
    return list(_OPS.values())


_LOAD_LOCK = threading.RLock()  # an op module that looks an op up while it registers re-enters
_loaded = False


def _load() -> None:
    # Not `if _OPS`: while one job's thread imports the op modules, _OPS fills up module by module, and another
    # thread reading it then found `sum` missing (a spec read as a KeyError and rejected, one CI run in three).
    global _loaded
    if _loaded:
        return
    with _LOAD_LOCK:
        if not _loaded:
            from agent.ir import ops_elementwise, ops_linalg, ops_movement, ops_nn, ops_reduce  # noqa: F401
            _loaded = True
