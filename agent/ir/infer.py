"""Shape and dtype inference: each node runs on `meta` tensors, so the rules are PyTorch's own."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from agent.ir import registry
from agent.ir.evaluate import evaluate
from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.printer import to_text
from agent.ir.types import IRError, ScalarType, TensorType, ValueType

_TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                 "float64": torch.float64, "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}
_NAMES = {v: k for k, v in _TORCH_DTYPES.items()}


def torch_dtype(name: str) -> torch.dtype:
    """Return the torch dtype of an IR dtype name."""
    return _TORCH_DTYPES[name]


def infer(expr: Expr, types: dict[str, ValueType], memo: dict[Expr, ValueType] | None = None) -> ValueType:
    """Return the type of expr given its inputs' and parameters' types; IRError names the node that fails."""
    # A caller typing many expressions that share subtrees passes one memo for all (`types` may only grow).
    return _infer(expr, types, {} if memo is None else memo)


def _infer(expr: Expr, types: dict[str, ValueType], memo: dict[Expr, ValueType]) -> ValueType:
    if expr in memo:
        return memo[expr]
    if isinstance(expr, Ref):
        if expr.name not in types:
            raise IRError(f"{expr.name} is used but is neither an input nor a parameter")
        return types[expr.name]
    if isinstance(expr, Const):
        if expr.value is None:
            raise IRError("None is not a value")
        return ScalarType(expr.value)
    operands = [None if isinstance(a, Const) and a.value is None else _infer(a, types, memo) for a in expr.args]
    for _, value in expr.attrs:
        if isinstance(value, (Ref, Node)):
            found = _infer(value, types, memo)
            if not isinstance(found, ScalarType):
                raise IRError(f"{to_text(expr)}: {to_text(value)} must be a number, not a tensor ({found})")
    result = _apply(expr, operands, types)
    memo[expr] = result
    return result


def _apply(node: Node, operands: list[ValueType | None], types: dict[str, ValueType]) -> ValueType:
    _check(node, operands)
    env: dict[str, object] = {}
    args: list[Expr] = []
    for i, operand in enumerate(operands):
        if operand is None:
            args.append(Const(None))
        elif isinstance(operand, ScalarType):
            args.append(Const(operand.value))
        else:
            env[f"_a{i}"] = torch.empty(operand.shape, dtype=_TORCH_DTYPES[operand.dtype], device="meta")
            args.append(Ref(f"_a{i}"))
    scalars = {name: t.value for name, t in types.items() if isinstance(t, ScalarType)}
    stand_in = Node(node.op, tuple(args), node.attrs)
    if not any(isinstance(o, TensorType) for o in operands):
        return _scalar(stand_in, scalars)  # sqrt(d) with d a scalar parameter: a number
    try:
        result = evaluate(stand_in, {**scalars, **env})
    except Exception as exc:  # torch raises many types; each becomes a message naming the node
        shown = ", ".join(str(o) for o in operands if o is not None)
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise IRError(f"{to_text(node)} cannot apply to {shown}: {reason}") from None
    if result.dtype not in _NAMES:
        raise IRError(f"{to_text(node)} gives a {result.dtype} result, which the IR does not carry")
    return TensorType(_NAMES[result.dtype], tuple(result.shape))


def _scalar(node: Node, env: Mapping[str, object]) -> ScalarType:
    """Compute an op on numbers alone (a scalar parameter's function) as a number."""
    values: dict[str, object] = dict(env)
    args: list[Expr] = []
    for i, a in enumerate(node.args):
        if isinstance(a, Const) and isinstance(a.value, (int, float)):
            values[f"_s{i}"] = torch.tensor(float(a.value), dtype=torch.float64)
            args.append(Ref(f"_s{i}"))
        else:
            args.append(a)
    try:
        value = evaluate(Node(node.op, tuple(args), node.attrs), values)
    except Exception as exc:  # torch raises many types
        raise IRError(f"{to_text(node)}: {exc}") from None
    item = value.item()
    return ScalarType(bool(item) if isinstance(item, bool) else float(item))


def _check(node: Node, operands: list[ValueType | None]) -> None:
    """Refuse what PyTorch would accept but the IR does not mean (training-mode norms, dropout)."""
    op = registry.get(node.op)
    if op.name == "batch_norm" and node.attr("training"):
        raise IRError("batch_norm in training mode is not in the catalogue; use running statistics (inference)")
    dropout = node.attr("dropout_p")
    if isinstance(dropout, Const) and dropout.value:
        raise IRError("attention with dropout is random; the catalogue has dropout_p=0 only")
    first_tensor = next((o for o in operands if isinstance(o, TensorType)), None)
    if first_tensor is not None and op.family != "data-movement" or op.name in ("transpose", "gather", "flip"):
        rank = len(first_tensor.shape) if first_tensor is not None else 0
        for key in ("dim", "dim0", "dim1", "dims"):
            value = node.attr(key)
            values = value if isinstance(value, tuple) else (value,) if isinstance(value, int) else ()
            for d in values:
                if isinstance(d, int) and not -max(rank, 1) <= d < max(rank, 1):
                    raise IRError(f"{op.name}: {key}={d} is out of range for a tensor of rank {rank} "
                                  f"({first_tensor}); dims go from {-rank} to {rank - 1}")
    check = node.attr("normalized_shape")
    first = operands[0] if operands else None
    if isinstance(check, tuple) and isinstance(first, TensorType):
        tail = first.shape[-len(check):]
        if tuple(tail) != check:
            raise IRError(f"{op.name}: normalized_shape {list(check)} does not match the last dims "
                          f"{list(tail)} of the input {first}")
