"""Bind a call's arguments to an op's signature, checking each value's kind; fold calls on numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from agent.ir import registry
from agent.ir.expr import Const, Expr, Node, Ref, Static
from agent.ir.registry import REQUIRED, OpDef, Param, is_default
from agent.ir.types import IRError

DTYPE_NAMES = {
    "float32": "float32", "float": "float32", "fp32": "float32", "f32": "float32",
    "float16": "float16", "half": "float16", "fp16": "float16", "f16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float64": "float64", "double": "float64", "fp64": "float64",
    "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "bool": "bool",
}
# Keywords torch functions take that change nothing about the value computed.
IGNORED_KEYWORDS = ("inplace", "_stacklevel")


@dataclass(frozen=True)
class DType:
    """A dtype named in a call (`torch.float16`, `'half'`)."""

    name: str


@dataclass(frozen=True)
class ShapeTail:
    """`x.shape[-k:]`: the last k sizes of a tensor, as layer_norm's normalized_shape."""

    ndim: int


Value = Expr | DType | ShapeTail | str | tuple[Any, ...]


def bind(op: OpDef, positional: list[Value], keywords: dict[str, Value], call: str) -> Expr:
    """Return the node for op applied to these arguments, or raise IRError naming what is wrong."""
    slots = [p for p in op.signature if not p.keyword_only]
    if len(positional) > len(slots):
        raise IRError(f"{call}: {op.name} takes at most {len(slots)} positional arguments, got {len(positional)}")
    given: dict[str, Value] = {p.name: v for p, v in zip(slots, positional, strict=False)}
    shape_given = "normalized_ndim" in given or "normalized_shape" in keywords  # torch's normalized_shape
    for key, value in keywords.items():
        if key in IGNORED_KEYWORDS:
            continue
        param = next((p for p in op.signature if key == p.name or key in p.aliases), None)
        if param is None:
            known = ", ".join(p.name for p in op.signature)
            raise IRError(f"{call}: {op.name} has no argument {key!r} (it takes {known})")
        if param.name in given:
            both = _ndim_and_shape(given[param.name], value)
            if param.name != "normalized_ndim" or both is None:
                raise IRError(f"{call}: {op.name} got {param.name} twice")
            value = both  # the IR's own form (`normalized_ndim=2, normalized_shape=(128, 1024)`) read back
        given[param.name] = value
    args: list[Expr] = []
    attrs: list[tuple[str, Expr | Static]] = []
    for param in op.signature:
        if param.name not in given:
            if param.required:
                raise IRError(f"{call}: {op.name} needs {param.name}")
            if param.operand:
                args.append(Const(None))
            continue
        value = given[param.name]
        if param.kind == "tensors":
            args.extend(_tensors(value, param, call))
        elif param.operand:
            args.append(_operand(value, param, call))
        elif param.name == "normalized_ndim":
            attrs.extend(_normalized(value, call, as_shape=shape_given))
        else:
            attrs.extend(_attribute(op, param, value, call))
    while args and isinstance(args[-1], Const) and args[-1].value is None:
        args.pop()
    return fold(Node(op.name, tuple(args), tuple(attrs)))


def _ndim_and_shape(first: Value, second: Value) -> Value | None:
    """Return the literal shape when one value is a normalized ndim and the other a shape of that many dims."""
    plain = [_plain(first), _plain(second)]
    shapes = [v for v in plain if isinstance(v, tuple)]
    counts = [v for v in plain if _integral(v)]
    if len(shapes) == 1 and len(counts) == 1 and len(shapes[0]) == _as_int(counts[0]):
        return shapes[0]
    return None


def _tensors(value: Value, param: Param, call: str) -> list[Expr]:
    if not isinstance(value, tuple) or not value:
        raise IRError(f"{call}: {param.name} must be a list of tensors")
    return [_operand(v, param, call) for v in value]


def _operand(value: Value, param: Param, call: str) -> Expr:
    if isinstance(value, (Ref, Node)) or isinstance(value, Const) and (
            value.value is not None or param.kind == "tensor?"):
        return value
    raise IRError(f"{call}: {param.name} must be a tensor expression, got {_show(value)}")


def _attribute(op: OpDef, param: Param, value: Value, call: str) -> list[tuple[str, Expr | Static]]:
    """Check an attribute's value; drop it when it equals the default, so equal calls give equal nodes."""
    static = _static(param, value, call)
    if op.family == "data-movement" and param.kind == "ints" and isinstance(static, int):
        static = (static,)  # torch.flip(x, dims=1) raises: flip, permute and reshape take a tuple of one
    if param.default != REQUIRED and is_default(static, param.default):
        return []
    return [(param.name, static)]


def _static(param: Param, value: Value, call: str) -> Expr | Static:
    wrong = f"{call}: {param.name} must be {_KIND_WORDS[param.kind]}, got {_show(value)}"
    plain = value.value if isinstance(value, Const) else value
    if param.kind == "scalar":
        if isinstance(value, Ref) or isinstance(value, Const) and not isinstance(value.value, bool):
            return value
        raise IRError(wrong)
    if param.kind == "int":
        if plain is None and param.default is None:
            return None
        if _integral(plain):
            return _as_int(plain)
        raise IRError(wrong)
    if param.kind == "dims":
        if plain is None:
            return None
        if _integral(plain):
            return _as_int(plain)
        if isinstance(plain, tuple) and plain and all(_integral(_plain(v)) for v in plain):
            return tuple(_as_int(_plain(v)) for v in plain)
        raise IRError(wrong)
    if param.kind == "ints":
        if isinstance(plain, str) and plain in param.choices:
            return plain
        if _integral(plain):
            return _as_int(plain)
        if isinstance(plain, tuple) and plain and all(_integral(_plain(v)) for v in plain):
            return tuple(_as_int(_plain(v)) for v in plain)
        raise IRError(wrong)
    if param.kind == "bool":
        if isinstance(plain, bool) or plain is None and param.default is None:
            return plain
        if plain in (0, 1):
            return bool(plain)
        raise IRError(wrong)
    if param.kind == "str":
        if isinstance(plain, str) and plain in param.choices:
            return plain
        raise IRError(f"{call}: {param.name} must be one of {', '.join(map(repr, param.choices))}, "
                      f"got {_show(value)}")
    if param.kind == "dtype":
        name = (plain.name if isinstance(plain, DType)
                else DTYPE_NAMES.get(str(plain)) if isinstance(plain, str) else None)
        if name:
            return name
        raise IRError(wrong)
    raise IRError(wrong)


def _normalized(value: Value, call: str, *, as_shape: bool) -> list[tuple[str, Expr | Static]]:
    """Read layer_norm's normalized shape: `x.shape[-k:]`, a literal shape (checked later), or the IR's ndim."""
    plain = value.value if isinstance(value, Const) else value
    check: tuple[int, ...] | None = None
    if isinstance(plain, ShapeTail):
        ndim = plain.ndim
    elif _integral(plain) and not as_shape:
        ndim = _as_int(plain)
    elif _integral(plain):
        ndim, check = 1, (_as_int(plain),)
    elif isinstance(plain, tuple) and plain and all(_integral(_plain(v)) for v in plain):
        check = tuple(_as_int(_plain(v)) for v in plain)
        ndim = len(check)
    else:
        raise IRError(f"{call}: normalized_shape must be a shape such as (768,) or x.shape[-1:], got {_show(value)}")
    attrs: list[tuple[str, Expr | Static]] = [] if ndim == 1 else [("normalized_ndim", ndim)]
    return attrs + ([("normalized_shape", check)] if check else [])


def _plain(value: Value) -> object:
    return value.value if isinstance(value, Const) else value


def _as_int(value: object) -> int:
    assert isinstance(value, (int, float)), value
    return int(value)


def _integral(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer()


def _show(value: Value) -> str:
    if isinstance(value, Const):
        return repr(value.value)
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, Node):
        return f"an expression ({value.op})"
    if isinstance(value, DType):
        return f"torch.{value.name}"
    return repr(value)


_KIND_WORDS = {
    "scalar": "a number or a scalar parameter", "int": "an integer", "dims": "a dim or a tuple of dims",
    "ints": "an integer or a tuple of integers", "bool": "True or False", "str": "a string", "dtype": "a dtype",
    "tensor": "a tensor", "tensor?": "a tensor or None", "tensors": "a list of tensors",
}


def fold(node: Node) -> Expr:
    """Replace an elementwise op on numbers alone by its value (sqrt(2 / pi) -> 0.7978...)."""
    op = registry.get(node.op)
    if op.family != "elementwise" or not node.args or op.name == "cast":
        return node
    values = [a.value for a in node.args if isinstance(a, Const)]
    if len(values) != len(node.args) or any(v is None for v in values):
        return node
    if any(isinstance(v, (Ref, Node)) for _, v in node.attrs):
        return node
    from agent.ir.evaluate import evaluate  # the evaluator imports the printer, which needs the registry

    env = {f"_c{i}": torch.tensor(v, dtype=torch.float64) for i, v in enumerate(values)}
    stand_in = Node(node.op, tuple(Ref(f"_c{i}") for i in range(len(values))), node.attrs)
    try:
        result = evaluate(stand_in, env)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise IRError(f"cannot evaluate {node.op} of {values}: {exc}") from None
    item = result.item()
    return Const(bool(item) if result.dtype == torch.bool else float(item))
