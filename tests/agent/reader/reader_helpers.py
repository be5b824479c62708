"""Shared assertions for the reader tests: compare readings by the values they compute, not by their text."""

from __future__ import annotations

import torch

from agent.catalogue import load_catalogue
from agent.ir.evaluate import evaluate as evaluate_ir
from agent.ir.parse import parse_text
from agent.ir.types import TensorType
from agent.reader.agreement import agree
from agent.spec import OpSpec


def same_formula(spec: OpSpec, expected: str) -> bool:
    """Tell whether the spec computes the same values as the expected formula, at the spec's first shapes."""
    case, dtypes = spec.shape_cases()[0], spec.dtype_cases()[0]
    types = spec.input_types(case, dtypes)
    small = {n: TensorType(t.dtype, tuple(min(d, 33) for d in t.shape)) if isinstance(t, TensorType) else t
             for n, t in types.items()}
    same, _ = agree(spec.expr, parse_text(expected, macros=load_catalogue().macro), small)
    return same


def inputs_of(spec: OpSpec) -> list[tuple[str, list[list[int]], list[str]]]:
    """Return (name, shapes, dtypes) per input, in spec order."""
    return [(t.name, t.shapes, list(t.dtypes)) for t in spec.inputs]


def evaluate(spec: OpSpec, **tensors: torch.Tensor) -> torch.Tensor:
    """Compute the spec's operator in PyTorch on the given tensors and its scalar parameters."""
    env: dict[str, object] = dict(tensors)
    env.update({p.name: p.value for p in spec.params})
    return evaluate_ir(spec.expr, env)
