"""How the row kernel addresses each input: the groups of dims it wraps, each row's base, which inputs stream."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import torch

from agent.spec import OpSpec

from .emit import Layout, index_term
from .expander import RowGraph
from .views import group_views, viewed_shape, wraps


def views_source(graph: RowGraph) -> str:
    """Return the source of the view functions the generated launch plan calls."""
    return "\n\n\n".join([_source(group_views), _source(wraps)] + ([_source(viewed_shape)] if graph.views else []))


def streamed_inputs(spec: OpSpec, graph: RowGraph) -> frozenset[str]:
    """Name the tile inputs as large as the iteration shape (on the first case): they are read once per pass."""
    case = spec.shape_cases()[0]
    sizes = {n: math.prod(case[n]) for n in graph.tile_inputs}
    largest = max(sizes.values(), default=0)
    return frozenset(n for n, size in sizes.items() if size == largest)


def _source(function: Callable[..., Any]) -> str:
    return inspect.getsource(function).rstrip()


def wrapped_groups(spec: OpSpec, graph: RowGraph) -> dict[str, str]:
    """Name, per input, the groups of dims (m, k, n) it spans only in part on any case (ValueError: none fits)."""
    # A weight spans all of a group when the batch is 1 (the dim drops out) and part of it otherwise: a group
    # that wraps on any case is addressed with its divisor and modulus on all of them.
    found: dict[str, str] = {}
    for case in spec.shape_cases():
        for name, groups in _wrapped_on(graph, graph.iteration_shapes(case)).items():
            found[name] = "".join(g for g in "mkn" if g in groups or g in found.get(name, ""))
    return {n: w for n, w in found.items() if w}


def _wrapped_on(graph: RowGraph, shapes: dict[str, tuple[int, ...]]) -> dict[str, str]:
    iteration = tuple(torch.broadcast_shapes(*(shapes[n] for n in graph.tile_inputs)))
    lo, hi = graph.dims[0], graph.dims[-1] + 1
    sizes = (math.prod(iteration[:lo]), math.prod(iteration[lo:hi]), math.prod(iteration[hi:]))
    found = {}
    for name in graph.tile_inputs:
        views = group_views(shapes[name], iteration, lo, hi)
        found[name] = "".join(g for g, v, n in zip("mkn", views, sizes, strict=True) if wraps(v, n))
    reduced = iteration[:lo] + iteration[hi:]
    for name in graph.row_inputs:
        padded = (1,) * (len(reduced) - len(shapes[name])) + shapes[name]
        views = group_views(padded[:lo] + (1,) * (hi - lo) + padded[lo:], iteration, lo, hi)
        found[name] = "".join(g for g, v, n in zip("mkn", views, sizes, strict=True) if g != "k" and wraps(v, n))
    return found


def lane_bases(graph: RowGraph, layout: Layout, wrapped: dict[str, str], output: str,
               aligned: frozenset[str] = frozenset()) -> dict[str, str]:
    """Return each tensor's offset of its lanes (the start of each row's elements).

    Rows of the `aligned` tensors start at a multiple of ROW_ALIGN elements, which the wrapper works out: said to
    the compiler, it lets a row of 5000 fp16 values load 16 bytes at a time (Triton only sees strides divisible
    by 16 itself).
    """
    bases = {}
    for name in graph.tile_inputs + graph.row_inputs + ([] if graph.total else [output]):
        own = wrapped.get(name, "")
        if layout == "last":
            bases[name] = index_term(name, "m", "lanes", own)
            if name in aligned:
                bases[name] = f"tl.multiple_of({bases[name]}, ROW_ALIGN)"
        else:
            bases[name] = f"{index_term(name, 'm', 'outer', own)} + {index_term(name, 'n', 'lanes', own)}"
    return bases
