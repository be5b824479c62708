"""How a broadcast input is addressed from a flat output index."""

from __future__ import annotations


def broadcast_runs(shape: tuple[int, ...], out_shape: tuple[int, ...], runs: int) -> list[int]:
    """Describe a contiguous input broadcast to out_shape as (inner, size, stride) runs."""
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    found: list[list[int]] = []
    out_inner, in_stride, extending = 1, 1, False
    for dim in reversed(range(len(out_shape))):
        if out_shape[dim] == 1:
            continue
        if padded[dim] == out_shape[dim]:
            if extending:
                found[-1][1] *= out_shape[dim]
            else:
                found.append([out_inner, out_shape[dim], in_stride])
            in_stride *= padded[dim]
            extending = True
        else:
            extending = False
        out_inner *= out_shape[dim]
    if len(found) > runs:
        raise ValueError(
            f"input of shape {tuple(shape)} broadcasts to {tuple(out_shape)} in {len(found)} "
            f"separate runs; this kernel was generated for at most {runs}"
        )
    found += [[1, 1, 0]] * (runs - len(found))
    return [value for run in found for value in run]


def count_runs(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> int:
    """Count the runs an input needs (at least one: a single-element input has stride 0)."""
    values = broadcast_runs(shape, out_shape, runs=len(out_shape) + 1)
    return max(1, sum(1 for i in range(2, len(values), 3) if values[i] != 0))
