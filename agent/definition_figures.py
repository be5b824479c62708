"""Figures of the definition document's strategy sections: launch geometry, data reuse, the change plan."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

from agent.analysis import BYTES_PER_ELEMENT, Analysis
from agent.diagnosis import NEAR_ROOFLINE_PCT, ROW_SCHEDULES, PatternHint, search_key, switch_key
from agent.documents import shown_shapes
from agent.generators.base import SCHEDULE_NOTES, Generator, LaunchConfig
from agent.generators.offline.attention.generator import attention_facts
from agent.generators.offline.attention.graph import attention_graph
from agent.generators.offline.attention.space import walks_tiles
from agent.generators.offline.render import next_pow2
from agent.generators.offline.rows.expander import NotRowLowerable, RowGraph
from agent.generators.offline.rows.generator import RowGenerator, launched_on
from agent.generators.offline.rows.passes import looped_passes
from agent.generators.offline.space import REFERENCE_MULTIPROCESSORS
from agent.ir.family import family_of
from agent.roofline import COMPUTE_DRAM_PCT, COMPUTE_SM_PCT, LAUNCH_BOUND_MS, MIN_TILES_PER_SM, launched_tiles
from agent.runtime.devices import REFERENCE_DEVICE, DeviceInfo
from agent.spec import OpSpec
from agent.targets import LIMIT_PCT, NOISE, STALLED_ROUNDS

THREADS_PER_WARP = 32
# Rows of the reuse table shown; a spec with many cases lists the first ones and says how many more.
MAX_REUSE_ROWS = 12


class LaunchRow(BaseModel):
    """How one shape case is cut into programs at the starting configuration."""

    shapes: str
    programs: int
    tile: int  # elements one program's tile holds
    threads: int  # threads per program (warps x 32)
    per_thread: int  # tile elements each thread holds
    per_sm: float  # programs per SM (or per multiprocessor of the reference device)


class Launch(BaseModel):
    """The starting configuration's launch geometry on every shape case."""

    multiprocessors: int
    reference: bool  # True when the SM count is the reference device's (no accelerator here)
    device: str
    rows: list[LaunchRow]


class ReuseRow(BaseModel):
    """How often the formula needs each element of one input, and the bytes that reuse saves."""

    shapes: str
    dtypes: str
    name: str
    elements: int
    uses: float  # times the formula needs each element (broadcast fan-out, or passes over a row)
    min_bytes: int  # each element read from memory once
    no_reuse_bytes: int  # every use read from memory
    where: str  # where the schedule keeps the element between uses


class SizeRow(BaseModel):
    """One case's element counts and the memory its tensors take (the complexity table)."""

    shapes: str
    dtypes: str
    input_elements: int
    output_elements: int
    footprint: int  # bytes of every input and the output, each held once


class ChangeOption(BaseModel):
    """One change the optimization loop can make to this operator."""

    key: str
    edit: str
    what: str


def sizes(analysis: Analysis) -> list[SizeRow]:
    """Count each case's input and output elements and the bytes its tensors hold."""
    return [SizeRow(shapes=shown_shapes(c.shapes), dtypes="/".join(dict.fromkeys(c.dtypes.values())),
                    input_elements=sum(math.prod(s) for s in c.shapes.values()), output_elements=c.elements,
                    footprint=c.bytes_read + c.bytes_written) for c in analysis.cases]


def launch_geometry(spec: OpSpec, config: LaunchConfig, device: DeviceInfo) -> Launch:
    """Count programs, threads and elements per thread of the starting configuration on every shape case."""
    sms = device.multiprocessors or REFERENCE_MULTIPROCESSORS
    reference = not device.multiprocessors
    graph = _graph(spec) if config.schedule in ROW_SCHEDULES else None
    threads = config.num_warps * THREADS_PER_WARP
    rows = []
    for shapes in spec.shape_cases():
        programs, tile = (launched_on(spec, config, shapes, device) if graph is not None
                          else tiled_launch(spec, shapes, config, sms))
        rows.append(LaunchRow(shapes=shown_shapes(shapes), programs=programs, tile=tile, threads=threads,
                              per_thread=max(1, tile // threads), per_sm=programs / sms))
    return Launch(multiprocessors=sms, reference=reference, rows=rows,
                  device=f"{REFERENCE_DEVICE} (reference)" if reference else device.name)


def _graph(spec: OpSpec) -> RowGraph | None:
    try:
        return RowGenerator().graph(spec)
    except NotRowLowerable:
        return None


def tiled_launch(spec: OpSpec, shapes: dict[str, list[int]], config: LaunchConfig, sms: int) -> tuple[int, int]:
    """Count an elementwise schedule's programs and tile the way its wrapper does."""
    out_shape = spec.output_shape(shapes)
    elements = math.prod(out_shape)
    if config.schedule == "tiled":
        # One program per BLOCK_M x BLOCK_N output tile of each matrix (the wrapper shrinks a tile past a small one);
        # a convolution's matrix is pixels x output channels.
        if spec.category != "custom" and family_of(spec.expr) == "conv":
            m, n, batch = elements // out_shape[1], out_shape[1], 1
        else:
            m, n = (out_shape[-2], out_shape[-1]) if len(out_shape) >= 2 else (1, out_shape[-1])
            batch = math.prod(out_shape[:-2])
        block_m = min(config.block_m, max(16, next_pow2(m)))
        block_n = min(config.block_size, max(16, next_pow2(n)))
        return math.ceil(m / block_m) * math.ceil(n / block_n) * batch, block_m * block_n
    if config.schedule == "flash":
        # A tile is BLOCK_M queries of one (batch, head): a program each, or one per SM walking them.
        block_m = min(config.block_m, max(16, next_pow2(out_shape[-2])))
        tiles = math.ceil(out_shape[-2] / block_m) * math.prod(out_shape[:-2])
        if sms and walks_tiles(config, attention_facts(spec), block_m, attention_graph(spec).causal):
            tiles = min(tiles, sms)
        return tiles, block_m * out_shape[-1]
    if config.schedule == "rows":
        # A short last dimension gets narrower, taller tiles of the same size.
        n_cols = out_shape[-1] if out_shape else 1
        block_n = min(config.block_size, next_pow2(n_cols))
        block_m = config.block_m * (config.block_size // block_n)
        return math.ceil(elements // max(1, n_cols) / block_m) * math.ceil(n_cols / block_n), block_m * block_n
    tile = config.block_m * config.block_size if config.schedule == "tiled" else config.block_size
    return launched_tiles(config.constants(), elements, sms), tile


def data_reuse(spec: OpSpec, analysis: Analysis, config: LaunchConfig | None) -> tuple[list[ReuseRow], int]:
    """List each input's reuse on every case (the first MAX_REUSE_ROWS rows, and how many more there are)."""
    schedule = config.schedule if config is not None else None
    graph = _graph(spec) if schedule in ROW_SCHEDULES else None
    passes = looped_passes(graph.root, graph.total) if graph is not None else 1
    rows = []
    for case in analysis.cases:
        for t in spec.inputs:
            elements = math.prod(case.shapes[t.name])
            streamed = graph is not None and t.name in graph.tile_inputs
            uses = float(passes) if streamed else max(1.0, case.elements / max(1, elements))
            size = BYTES_PER_ELEMENT.get(case.dtypes[t.name], 4)
            rows.append(ReuseRow(
                shapes=shown_shapes(case.shapes), dtypes="/".join(dict.fromkeys(case.dtypes.values())), name=t.name,
                elements=elements, uses=uses, min_bytes=elements * size, no_reuse_bytes=round(uses * elements * size),
                where=_where(schedule, streamed, uses, config, passes)))
    return rows[:MAX_REUSE_ROWS], max(0, len(rows) - MAX_REUSE_ROWS)


def _where(schedule: str | None, streamed: bool, uses: float, config: LaunchConfig | None, passes: int) -> str:
    """Say where the schedule keeps an element between its uses (what the generated kernel does)."""
    if schedule is None or config is None:
        return "set by the kernel the model writes"
    if streamed:
        if schedule == "whole_row":
            return f"the row is held in registers: one read from memory serves all {passes} pass(es)"
        if schedule == "looped_row":
            return (f"read in BLOCK_K chunks once per pass ({passes}); earlier passes load with evict_last so "
                    "the next pass can hit L2, the last with evict_first")
        return "each chunk read once by one program; float32 partials go to a workspace and are folded once"
    if uses <= 1.0:
        return "streamed once: each element feeds one output"
    if schedule == "rows":
        return (f"loaded once per [BLOCK_M, BLOCK_N] tile and reused by its {config.block_m} row(s) in registers; "
                "evict_last keeps it in L2 for the other tiles")
    if schedule in ROW_SCHEDULES:
        return "loaded per row tile (default cache policy): every row tile shares it through L1/L2"
    return "re-addressed per element ((i // inner) % size): repeats are served by L1/L2, not re-read from DRAM"


def change_options(generator: Generator, spec: OpSpec, config: LaunchConfig, device: DeviceInfo) -> list[ChangeOption]:
    """List the searches and schedule switches the loop can make for this operator, starting schedule first."""
    options = []
    for schedule in generator.schedules(spec):
        space = generator.config_space(spec, schedule, device)
        if schedule == config.schedule:
            options.append(ChangeOption(key=search_key(schedule), edit="parameter (`_triton.py` only)",
                                        what=f"measure {len(space.kept)} configurations in one run: {space.summary()}"))
        else:
            options.append(ChangeOption(key=switch_key(config.schedule, schedule),
                                        edit="logic (all four files regenerated)",
                                        what=f"{SCHEDULE_NOTES[schedule]}; then " + (
                                            f"its {len(space.kept)} configurations are searched" if space.kept else
                                            f"nothing to search: {space.summary()}")))
    return options


def known_patterns(patterns: Sequence[PatternHint]) -> list[str]:
    """Describe what earlier jobs on this device and category learned, one line per change."""
    return [f"`{p.change}`: helped {p.times_helped} of {p.times_applied} times"
            + (f", best x{p.best_speedup:.2f} with `{p.params_after}`" if p.best_speedup else "")
            for p in patterns]


def limits() -> dict[str, float]:
    """Return the thresholds the diagnosis and the stop rules use, for section 4.1."""
    return {"launch_us": LAUNCH_BOUND_MS * 1e3, "tiles_per_sm": MIN_TILES_PER_SM, "compute_sm_pct": COMPUTE_SM_PCT,
            "compute_dram_pct": COMPUTE_DRAM_PCT, "limit_pct": LIMIT_PCT, "near_pct": NEAR_ROOFLINE_PCT,
            "noise": NOISE, "stalled": STALLED_ROUNDS}
