"""What the row engine's rules know of a spec's rows: their count, length, layout, dtype and the machine."""

from __future__ import annotations

import math
from dataclasses import dataclass

from agent.generators.offline.space import REFERENCE_MULTIPROCESSORS
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec

from .emit import Layout
from .expand import RowGraph
from .passes import looped_passes, reduction_levels


@dataclass(frozen=True)
class RowFacts:
    """What pruning needs: the rows, their length, the narrowest dtype and the machine."""

    n_reduce: int  # elements along the reduced dims (the row length)
    n_lanes: int  # rows (outer x inner positions) of the largest case
    itemsize: int
    strided: bool  # the reduced dims are not the last: lanes run along the inner dims
    multiprocessors: int
    ascend: bool = False
    passes: int = 2  # the looped schedule's passes over each row (cross-entropy: 1, softmax: 2, layer_norm: 3)
    n_inner: int = 1  # strided: positions along the dims after the reduced ones (the lanes of one outer index)
    levels: int = 1  # levels of nested reductions (l2 normalize: 1, layer_norm's mean then variance: 2)
    online: bool = False  # the looped schedule carries a softmax's running max and sum in one pass
    total: bool = False  # the kernel sums its rows' results per program (a loss's mean or sum)
    streams: int = 1  # tensors read along each row (the row's input, then weights and biases)
    widest: int = 4  # the widest input dtype's bytes


def row_layout(graph: RowGraph) -> Layout:
    """Say whether the reduced dims are the last ("last") or lie before others ("strided")."""
    return "last" if graph.dims[-1] == graph.rank - 1 else "strided"


def row_facts(spec: OpSpec, graph: RowGraph, device: DeviceInfo | None = None,
              cases: list[dict[str, list[int]]] | None = None) -> RowFacts:
    """Gather what pruning needs, on the largest of the cases (the spec's when none are given)."""
    sizes = []
    for case in spec.shape_cases() if cases is None else cases:
        shape = graph.iteration_shapes(case)[graph.tile_inputs[0]] if graph.tile_inputs else spec.output_shape(case)
        padded = [1] * (graph.rank - len(shape)) + list(shape)
        reduce = math.prod(padded[d] for d in graph.dims)
        sizes.append((math.prod(padded) // max(1, reduce), reduce, math.prod(padded[graph.dims[-1] + 1:])))
    lanes, n_reduce, n_inner = max(sizes, key=lambda s: s[0] * s[1])
    sizes_of = [2 if d in ("float16", "bfloat16") else 4 for case in spec.dtype_cases() for d in case.values()]
    itemsize = min(sizes_of)
    levels, online = reduction_levels(graph.root, graph.total)
    return RowFacts(
        n_reduce=n_reduce, n_lanes=lanes, itemsize=itemsize, strided=row_layout(graph) == "strided",
        multiprocessors=(device.multiprocessors if device else 0) or REFERENCE_MULTIPROCESSORS,
        ascend=bool(device and device.kind == "npu"), passes=looped_passes(graph.root, graph.total), n_inner=n_inner,
        levels=levels, online=online, total=graph.total is not None,
        streams=len(graph.tile_inputs) + len(graph.row_inputs), widest=max(sizes_of),
    )
