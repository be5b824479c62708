"""Shared assertions for the requirements-parser tests."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from agent.expr import parse_formula, to_torch
from agent.spec import OpSpec


def same_formula(spec: OpSpec, expected: str) -> bool:
    """Tell whether the spec's formula means the same expression as expected."""
    return parse_formula(spec.formula) == parse_formula(expected)


def inputs_of(spec: OpSpec) -> list[tuple[str, list[list[int]], list[str]]]:
    """Return (name, shapes, dtypes) per input, in spec order."""
    return [(t.name, t.shapes, list(t.dtypes)) for t in spec.inputs]


def evaluate(spec: OpSpec, **tensors: torch.Tensor) -> torch.Tensor:
    """Compute the spec's formula in PyTorch on the given tensors and its scalar parameters."""
    scope: dict[str, object] = {"torch": torch, "F": F, **tensors}
    scope.update({p.name: p.value for p in spec.params})
    return eval(to_torch(parse_formula(spec.formula)), scope)  # rendered by agent.expr
