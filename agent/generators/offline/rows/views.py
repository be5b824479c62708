"""How a contiguous input, broadcast to the iteration shape, is addressed in the [outer, reduced, inner] view."""

from __future__ import annotations

import math


def group_views(shape: tuple[int, ...], iteration: tuple[int, ...], lo: int, hi: int) -> list[tuple[int, int, int]]:
    """Return (stride, divisor, modulus) of a contiguous input along the outer, reduced and inner groups of dims.

    Along a group of dims merged into one index i, the input's element offset is (i // divisor % modulus) * stride.
    """
    rank = len(iteration)
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    strides, step = [0] * rank, 1
    for dim in reversed(range(rank)):
        strides[dim] = step if padded[dim] != 1 else 0
        step *= padded[dim]
    found = []
    for start, stop in ((0, lo), (lo, hi), (hi, rank)):
        dims = [d for d in range(start, stop) if iteration[d] != 1]
        present = [d for d in dims if padded[d] != 1]
        if not present:
            found.append((0, 1, 1))
            continue
        first, last = dims.index(present[0]), dims.index(present[-1])
        if dims[first:last + 1] != present:
            # A per-channel vector inside a group of dims is one run of them; two runs need two indices.
            raise ValueError(
                f"an input of shape {tuple(shape)} broadcasts along dims between its own within dims "
                f"{list(range(start, stop))} of {tuple(iteration)}; this kernel needs each group's dims in one run"
            )
        divisor = math.prod(iteration[d] for d in dims[last + 1:])
        found.append((strides[present[-1]], divisor, math.prod(iteration[d] for d in present)))
    return found


def wraps(view: tuple[int, int, int], size: int) -> bool:
    """Say whether a group's addressing needs the divisor and modulus (the input spans only part of the group)."""
    stride, divisor, modulus = view
    return stride != 0 and (divisor != 1 or modulus != size)


def viewed_shape(shape: tuple[int, ...], role: str, rank: int, groups: int) -> tuple[int, ...]:
    """Return the shape an input takes in the iteration space: as given, or one of the norms' views of it."""
    if role == "channel" and groups:
        # A group norm's per-channel vector [C], lined up with the input's [N, groups, C / groups, S] view.
        return (1, groups, shape[0] // groups, 1)
    if role == "channel":
        # One value per channel, lined up with dim 1 (batch_norm's statistics and affine).
        return (1,) + tuple(shape) + (1,) * (rank - 2)
    if role == "grouped":
        if len(shape) < 2 or shape[1] % groups:
            raise ValueError(f"an input of shape {tuple(shape)} has no channel dim that {groups} groups divide")
        return (shape[0], groups, shape[1] // groups, math.prod(shape[2:]))
    return tuple(shape)
