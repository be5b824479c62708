"""How a contiguous input, broadcast to the iteration shape, is addressed in the [outer, reduced, inner] view."""

from __future__ import annotations


def group_strides(shape: tuple[int, ...], iteration: tuple[int, ...], lo: int, hi: int) -> tuple[int, int, int]:
    """Return the element strides of a contiguous input along the outer, reduced and inner groups of dims."""
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
        if present and len(present) != len(dims):
            # Merging dims into one index needs the input to span all of them or none.
            raise ValueError(
                f"an input of shape {tuple(shape)} broadcasts along only some of dims {list(range(start, stop))} "
                f"of {tuple(iteration)}; this kernel needs each group of dims whole or broadcast"
            )
        found.append(strides[present[-1]] if present else 0)
    return found[0], found[1], found[2]
