"""Odd shapes for an operator's edge cases: every size mapped to an awkward one, consistently, kept where valid."""

from __future__ import annotations

import itertools
from collections.abc import Collection

from agent.ir.expr import Expr
from agent.ir.infer import infer
from agent.ir.types import IRError, ScalarType, TensorType, ValueType

# Size maps, each applied to the sizes of the spec's first case from the largest down: ones, small primes,
# a block size plus or minus one, long odd rows.
_PATTERNS: tuple[tuple[int, ...], ...] = ((1,), (3, 5, 7, 11, 13), (129, 127, 65, 63, 33), (257, 3, 5, 7), (1031, 1, 3))
# The Triton interpreter runs a case only up to this many elements (the accuracy files, the independent check and
# coverage use it): edge cases stay under it, so they always run.
CPU_MAX_ELEMENTS = 1 << 22


def edge_cases(expr: Expr, case: dict[str, list[int]], dtypes: dict[str, str], params: dict[str, float],
               limit: int = 4, fixed: Collection[int] = ()) -> list[dict[str, list[int]]]:
    """Return up to `limit` shape cases with odd sizes that the operator still accepts (`fixed` sizes stay)."""
    found: list[dict[str, list[int]]] = []
    for shapes in odd_sizes(case, fixed):
        types: dict[str, ValueType] = {n: TensorType(dtypes[n], tuple(s)) for n, s in shapes.items()}
        types.update({n: ScalarType(v) for n, v in params.items()})
        try:
            out = infer(expr, types)
        except IRError:
            continue
        if isinstance(out, TensorType):
            found.append(shapes)
        if len(found) == limit:
            break
    return found


def odd_sizes(case: dict[str, list[int]], fixed: Collection[int] = ()) -> list[dict[str, list[int]]]:
    """Return the case with each size mapped by every pattern, the same size to the same odd one everywhere; whether
    the operator accepts them is the caller's to check."""
    sizes = sorted({d for shape in case.values() for d in shape if d > 1 and d not in fixed}, reverse=True)
    variants: list[dict[str, list[int]]] = []
    for pattern in _PATTERNS:
        cycle = itertools.cycle(pattern)
        mapping = {size: next(cycle) for size in sizes}
        shapes = {name: [mapping.get(d, d) for d in shape] for name, shape in case.items()}
        if shapes not in variants and shapes != case and _elements(shapes) <= CPU_MAX_ELEMENTS:
            variants.append(shapes)
    return variants


def _elements(shapes: dict[str, list[int]]) -> int:
    total = 0
    for shape in shapes.values():
        count = 1
        for d in shape:
            count *= d
        total += count
    return total
