"""Place measured cases on the device roofline and name what bounds them."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel

Bound = Literal["memory", "compute", "latency/launch", "under-utilized"]

# Below this kernel time, launch and host overhead dominate any schedule change.
LAUNCH_BOUND_MS = 0.010
# Fewer tiles than this many per SM leave SMs idle at the tail.
MIN_TILES_PER_SM = 2
# ncu figures that mark a kernel as limited by its instructions rather than by DRAM.
COMPUTE_SM_PCT = 70.0
COMPUTE_DRAM_PCT = 60.0


class MeasuredCase(BaseModel):
    """One timed case against the roofline: the measured copy bandwidth and the fp32 vector peak."""

    shapes: dict[str, list[int]]
    dtypes: dict[str, str]
    triton_ms: float
    gbs: float
    tflops: float
    pct_of_copy: float
    intensity: float  # FLOP per byte moved
    attainable_ms: float  # the roofline's time: bytes at copy bandwidth or FLOPs at peak, whichever is longer
    pct_of_roofline: float
    peak_tflops: float | None = None  # the compute peak the case is held to (the tensor cores for 16-bit products)


class Placement(BaseModel):
    """The roofline reading of a version: every case, the worst one, and the bound class."""

    cases: list[MeasuredCase]
    worst: MeasuredCase
    bound: Bound
    ridge: float | None  # FLOP per byte where the copy bandwidth and the compute peak meet
    tiles: int | None  # programs the largest case launches (ncu's grid size when measured)
    multiprocessors: int | None
    why: str  # the evidence for the bound, in words


def place(
    performance: dict[str, Any], peak_tflops: float | None, multiprocessors: int | None,
    tiles: int | None, counters: dict[str, float] | None = None, tensor_tflops: float | None = None,
) -> Placement | None:
    """Read the performance result against the roofline; None when nothing was measured.

    tensor_tflops, given for matrix products, is the peak of their 16-bit cases.
    """
    from agent.analysis import on_tensor_cores

    copy_gbs = performance.get("copy_gbs")
    raw = performance.get("cases") or []
    if not copy_gbs or not raw:
        return None
    cases = [_case(c, copy_gbs, tensor_tflops if tensor_tflops and on_tensor_cores(c["dtypes"]) else peak_tflops)
             for c in raw]
    worst = min(cases, key=lambda c: c.pct_of_roofline)
    ridge = worst.peak_tflops * 1e12 / (copy_gbs * 1e9) if worst.peak_tflops else None
    bound, why = _bound(worst, ridge, multiprocessors, tiles, counters or {})
    return Placement(cases=cases, worst=worst, bound=bound, ridge=ridge, tiles=tiles,
                     multiprocessors=multiprocessors, why=why)


def _case(raw: dict[str, Any], copy_gbs: float, peak_tflops: float | None) -> MeasuredCase:
    ms, n_bytes = raw["triton_ms"], raw["bytes"]
    flops = raw.get("tflops", 0.0) * 1e12 * ms * 1e-3
    memory_ms = n_bytes / (copy_gbs * 1e9) * 1e3
    compute_ms = flops / (peak_tflops * 1e12) * 1e3 if peak_tflops else 0.0
    attainable = max(memory_ms, compute_ms)
    return MeasuredCase(
        shapes=raw["shapes"], dtypes=raw["dtypes"], triton_ms=ms, gbs=raw["gbs"], tflops=raw.get("tflops", 0.0),
        pct_of_copy=raw["pct_of_copy"], intensity=flops / n_bytes if n_bytes else 0.0,
        attainable_ms=attainable, pct_of_roofline=100.0 * attainable / ms if ms > 0 else 0.0, peak_tflops=peak_tflops,
    )


def _bound(
    case: MeasuredCase, ridge: float | None, multiprocessors: int | None, tiles: int | None,
    counters: dict[str, float],
) -> tuple[Bound, str]:
    if case.triton_ms < LAUNCH_BOUND_MS:
        return "latency/launch", f"the kernel runs {case.triton_ms * 1e3:.1f} µs: launch overhead dominates"
    if tiles is not None and multiprocessors and tiles < MIN_TILES_PER_SM * multiprocessors:
        return "under-utilized", f"{tiles} programs for {multiprocessors} SMs: SMs idle at the tail"
    occupancy = counters.get("occupancy_pct")
    if occupancy is not None and occupancy < 30.0 and case.pct_of_roofline < 60.0:
        return "under-utilized", f"achieved occupancy {occupancy:.0f}% with {case.pct_of_roofline:.0f}% of roofline"
    if ridge is not None and case.intensity >= ridge:
        return "compute", f"intensity {case.intensity:.2f} FLOP/B is above the ridge {ridge:.1f}"
    sm_pct, dram_pct = counters.get("sm_throughput_pct"), counters.get("dram_pct")
    if sm_pct is not None and dram_pct is not None and sm_pct >= COMPUTE_SM_PCT and dram_pct < COMPUTE_DRAM_PCT:
        return "compute", (f"SM throughput {sm_pct:.0f}% of peak while DRAM runs at {dram_pct:.0f}%: "
                           f"instruction issue (the formula's math and index arithmetic) limits it")
    return "memory", (f"intensity {case.intensity:.2f} FLOP/B is below the ridge"
                      + (f" {ridge:.1f}" if ridge else "") + f"; {case.pct_of_copy:.1f}% of the copy bandwidth")


def launched_tiles(config_constants: dict[str, int], elements: int, multiprocessors: int | None) -> int:
    """Count the programs a configuration launches for a case (what the wrapper computes)."""
    tile = config_constants.get("BLOCK_SIZE") or config_constants.get("BLOCK_M", 1) * config_constants.get("BLOCK_N", 1)
    tiles = math.ceil(elements / tile)
    if "PROGRAMS_PER_SM" in config_constants and multiprocessors:
        grid = config_constants["PROGRAMS_PER_SM"] * multiprocessors
        # A persistent grid caps the programs; a split row deals each row out to at least that many.
        tiles = max(tiles, grid) if "BLOCK_K" in config_constants else min(tiles, grid)
    return tiles
