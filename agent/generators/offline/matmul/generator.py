"""Offline generator for matrix products (matmul, bmm, linear) with fused elementwise epilogues."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from agent.generators.base import SCHEDULE_NOTES, KernelFiles, LaunchConfig, Schedule
from agent.generators.offline.render import (
    FLOATS,
    code_context,
    output_dtype,
    pretty,
    render_files,
    sample_draw,
    signature,
    small_case,
    spec_flops,
    tuple_literal,
)
from agent.generators.offline.space import REFERENCE_MULTIPROCESSORS, Space
from agent.generators.offline.triton_ops import HELPERS
from agent.ir.printer import to_statements, to_text
from agent.reader.agreement import positive_inputs
from agent.runtime.devices import PEAKS, DeviceInfo
from agent.spec import OpSpec

from .graph import MatmulGraph, NotMatmulLowerable, matmul_graph
from .space import (
    SHORT_K_TILES,
    TMA_HOST_DESCRIPTORS_MIN_FLOPS_LOG2,
    TMA_MIN_FLOPS_LOG2,
    Epilogue,
    ProductFacts,
    default_product_config,
    product_space,
)

# The interpreter runs each tl.dot through numpy, one program after another: cases up to this many output
# elements are checked there (the spec's larger shapes are checked on an accelerator).
INTERPRETER_MAX_ELEMENTS = 1 << 16
_SMOKE_MAX_ELEMENTS = 1 << 16


# The wrapper's thresholds that choose the kernel and its split (module constants of the generated file).
_POLICY = ("MAX_SPLIT_K", "SPLIT_MIN_STEPS", "PAD_MIN_FLOPS", "PAD_ROWS", "PAD_COLS")
_TMA_POLICY = ("TMA_MIN_FLOPS", "TMA_HOST_DESCRIPTORS_MIN_FLOPS")


class MatmulGenerator:
    """Render the four files of a matrix product with its epilogue (bias, activation, residual, scale, cast)."""

    family = "matmul"

    def refusal(self, spec: OpSpec) -> str | None:
        """Say why the matmul engine cannot write the spec (None when it can)."""
        if spec.category == "custom":
            return "the spec is described in words only (no operator IR)"
        try:
            matmul_graph(spec)
        except NotMatmulLowerable as exc:
            return f"the offline matmul engine cannot write it: {exc}"
        ints = [t.name for t in spec.inputs if any(d not in FLOATS for d in t.dtypes)]
        if ints:
            return f"inputs {', '.join(ints)} are not floating point; the matmul engine reads float operands only"
        if output_dtype(spec) is None:
            return "the output dtype differs between dtype cases in a way the kernel wrapper cannot follow"
        return None

    def graph(self, spec: OpSpec) -> MatmulGraph:
        """Split the spec into its product and epilogue."""
        return matmul_graph(spec)

    def interpreter_max_elements(self, spec: OpSpec) -> int:
        """Return the largest case, in output elements, that the Triton interpreter checks."""
        return INTERPRETER_MAX_ELEMENTS

    def generate(self, spec: OpSpec, config: LaunchConfig) -> KernelFiles:
        """Write the four files for a spec at a launch configuration."""
        return render_files(spec, config, self.context(spec, config), "triton_matmul.py.j2")

    def category(self, spec: OpSpec) -> str:
        """Name the pattern category: matmul/<op>, with -epilogue when a chain follows the product."""
        graph = self.graph(spec)
        return f"matmul/{graph.op}" + ("" if graph.plain else "-epilogue")

    def schedules(self, spec: OpSpec) -> list[Schedule]:
        """List the schedules: output tiles over a K loop."""
        return ["tiled"]

    def default_config(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo) -> LaunchConfig:
        """Return the usual best tile for the operands' width and the matrix sizes."""
        return default_product_config(product_facts(spec, device), weigh_waves=True,
                                      epilogue=epilogue_kind(self.graph(spec)))

    def config_space(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo,
                     preferred: Sequence[LaunchConfig] = ()) -> Space:
        """Enumerate tiles, warps and stages, pruned by shared memory, registers, matrix size and wave fill."""
        return product_space(product_facts(spec, device), preferred)

    def context(self, spec: OpSpec, config: LaunchConfig) -> dict[str, Any]:
        """Compute everything the templates need from the spec."""
        graph = self.graph(spec)
        names = [t.name for t in spec.inputs]
        first_dtype = spec.dtype_cases()[0][names[0]]
        tolerance = spec.tolerances[first_dtype]
        positive = sorted(positive_inputs(spec.expr) & set(names))
        smoke = small_case(spec, _SMOKE_MAX_ELEMENTS)
        a_rank = len(spec.shape_cases()[0][graph.a.name])
        epilogue = epilogue_kind(graph)
        tma = epilogue != "tile"
        return {
            "op": spec.name,
            "output": spec.output,
            "formula": to_text(spec.expr),
            "schedule": config.schedule,
            "schedule_note": f"offline matmul engine; schedule `{config.schedule}`: {SCHEDULE_NOTES[config.schedule]}",
            "constants": config.constants(),
            "helpers": [HELPERS[h].source for h in graph.epilogue.helpers],
            "a": graph.a,
            "b": graph.b,
            "acc": graph.acc,
            "flattens_rows": graph.flattens_rows,
            "epilogue_inputs": [{"name": e.name, "kind": e.kind, "other": ", other=1.0" if e.positive else ""}
                                for e in graph.epilogue_inputs],
            # Which of the tile's row and column offsets the epilogue's loads read (the TMA store needs neither).
            "reads_rows": any(e.kind in ("col", "tile") for e in graph.epilogue_inputs),
            "reads_cols": any(e.kind in ("row", "tile") for e in graph.epilogue_inputs),
            "body": graph.epilogue.body,
            # Hopper's TMA path, where an epilogue reads no full tile: a residual tile converted through shared
            # memory overflowed it beside the operand ring (H100, x @ w + residual: pointers 0.444 ms, TMA 0.481).
            "tma": tma,
            "tma_min_flops_log2": TMA_MIN_FLOPS_LOG2,
            "tma_host_descriptors_min_flops_log2": TMA_HOST_DESCRIPTORS_MIN_FLOPS_LOG2,
            # An epilogue that reads an input (a bias) overlaps the next tile's product when the persistent loop is
            # warp-specialized (H200, gelu(linear) [8192, 1024] x [4096, 1024]ᵀ fp16: 0.171 -> 0.159 ms); a plain
            # product gains nothing measurable from it (within 3% at 4096³ and 8192x8192x4096). One without inputs
            # (gelu(x @ w)) keeps the flattened loop: untimed warp-specialized.
            "warp_specialize": not graph.plain,
            # Two programs per SM overlap it instead where the module's tile is the short-K one (decided at run time
            # from the tile constants, as a search sets them), with flattened loops (warp-specialized two per SM ran
            # 28-38% slower). Any epilogue with work (any file with this tile) stores its tile by TMA in halves,
            # through half the staging buffer (needed for two per SM; one per SM, timed only where warp-specialized,
            # it gained 1-5%).
            "two_programs_tile": SHORT_K_TILES["work"][0] if epilogue == "work" else None,
            "params": spec.params,
            "out_dtype": output_dtype(spec),
            "signature": signature(spec),
            "named_inputs": tuple_literal([f'("{n}", {n})' for n in names]),
            "dtypes_tuple": tuple_literal([f"{n}.dtype" for n in names]),
            "input_names": names,
            "inputs_tuple": tuple_literal(names),
            "epilogue_tuple": tuple_literal([e.name for e in graph.epilogue_inputs]),
            "params_tuple": tuple_literal([f"float({p.name})" for p in spec.params]),
            # What a launch plan and the tile sizing depend on besides the inputs: the launch constants (a search
            # sets them between calls) and the file's other thresholds, so an edit to any is never served a stale plan.
            "launch_constants": [*config.constants(), *_POLICY, *(_TMA_POLICY if tma else ()),
                                 *(["TWO_PROGRAMS_TILE"] if epilogue == "work" else [])],
            "inputs": [{"name": t.name, "sample": sample_draw(smoke[t.name], t.dtypes[0], t.name in positive)}
                       for t in spec.inputs],
            "torch_statements": to_statements(spec.expr, spec.output),
            "code": code_context(spec),
            "cpu_max_elements": INTERPRETER_MAX_ELEMENTS,
            "spec_cases": pretty(spec.shape_cases()),
            "edge_cases": pretty(spec.odd_shape_cases()),
            "dtype_cases": pretty(spec.dtype_cases()),
            "tolerances": pretty({d: (t.rtol, t.atol) for d, t in sorted(spec.tolerances.items())}),
            "positive": positive,
            "params_dict": repr({p.name: p.value for p in spec.params}),
            "spec_flops": spec_flops(spec),
            "device_peaks": pretty({k: PEAKS[k] for k in sorted(PEAKS, key=len, reverse=True)}),
            "first_rtol": tolerance.rtol,
            "first_atol": tolerance.atol,
            # Each output element sums K products: its rounding error grows like the square root of K.
            "length_scaled": {"input": graph.a.name, "dims": [a_rank - (2 if graph.a.transposed else 1)]},
            "rank": a_rank,
            "special_cases": False,
            "product_peak": True,
            "product_operand": graph.a.name,
        }


def epilogue_kind(graph: MatmulGraph) -> Epilogue:
    """Say what the product's epilogue does: reads a whole output tile, other work, or only stores (a cast)."""
    if any(e.kind == "tile" for e in graph.epilogue_inputs):
        return "tile"
    return "" if graph.stores_product else "work"


def product_facts(spec: OpSpec, device: DeviceInfo | None = None) -> ProductFacts:
    """Gather the largest case's M, N, K and batch, and the narrowest operand width."""
    graph = matmul_graph(spec)
    sizes = []
    for case in spec.shape_cases():
        a, b = list(case[graph.a.name]), list(case[graph.b.name])
        if graph.a.transposed:
            a[-2:] = a[-1], a[-2]
        if graph.b.transposed:
            b[-2:] = b[-1], b[-2]
        m = math.prod(a[:-1]) if graph.flattens_rows or len(b) == 2 else a[-2]
        batch = 1 if graph.flattens_rows or len(b) == 2 else max(a[0] if len(a) == 3 else 1, b[0])
        sizes.append((m, b[-1], a[-1], batch))
    m, n, k, batch = max(sizes, key=lambda s: s[0] * s[1] * s[2] * s[3])
    itemsize = min(2 if case[side] in ("float16", "bfloat16") else 4
                   for case in spec.dtype_cases() for side in (graph.a.name, graph.b.name))
    return ProductFacts(m=m, n=n, k=k, batch=batch, itemsize=itemsize,
                        multiprocessors=(device.multiprocessors if device else 0) or REFERENCE_MULTIPROCESSORS)
