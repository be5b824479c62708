"""FLOP rules shared by op definitions."""

from __future__ import annotations

import math

from agent.ir.registry import FlopRule
from agent.ir.types import TensorType, ValueType


def per_output(k: float) -> FlopRule:
    """Cost k operations per output element."""
    return lambda args, out, attrs: int(round(k * out.numel))


def per_input(k: float) -> FlopRule:
    """Cost k operations per element of the first operand."""
    return lambda args, out, attrs: int(round(k * _numel(args[0])))


def free() -> FlopRule:
    """Cost nothing (views, copies, casts)."""
    return lambda args, out, attrs: 0


def _numel(value: ValueType) -> int:
    return value.numel if isinstance(value, TensorType) else 1


def matmul_flops(args: list[ValueType], out: TensorType, attrs: dict[str, object]) -> int:
    """Cost 2·K multiply-adds per output element, K the contracted size."""
    first = args[0]
    k = first.shape[-1] if isinstance(first, TensorType) and first.shape else 1
    return 2 * k * out.numel


def conv_flops(args: list[ValueType], out: TensorType, attrs: dict[str, object]) -> int:
    """Cost 2·(C/groups)·R·S per output element."""
    weight = args[1]
    assert isinstance(weight, TensorType)
    return 2 * math.prod(weight.shape[1:]) * out.numel


def attention_flops(args: list[ValueType], out: TensorType, attrs: dict[str, object]) -> int:
    """Cost QKᵀ and PV (4·S_q·S_k·D per head), halved when causal."""
    q, k = args[0], args[1]
    assert isinstance(q, TensorType) and isinstance(k, TensorType)
    heads = math.prod(q.shape[:-2])
    total = 4 * heads * q.shape[-2] * k.shape[-2] * q.shape[-1]
    return total // 2 if attrs.get("is_causal") else total
