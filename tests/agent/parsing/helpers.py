"""Shared assertions for the requirements-parser tests."""

from __future__ import annotations

from agent.expr import parse_formula
from agent.spec import OpSpec


def same_formula(spec: OpSpec, expected: str) -> bool:
    """Tell whether the spec's formula means the same expression as expected."""
    return parse_formula(spec.formula) == parse_formula(expected)


def inputs_of(spec: OpSpec) -> list[tuple[str, list[list[int]], list[str]]]:
    """Return (name, shapes, dtypes) per input, in spec order."""
    return [(t.name, t.shapes, list(t.dtypes)) for t in spec.inputs]
