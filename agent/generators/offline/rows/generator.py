"""Offline generator for reductions, softmax, normalizations and scans: the row engine, written from the IR."""

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
from agent.generators.offline.space import Space
from agent.generators.offline.triton_ops import HELPERS
from agent.ir.edges import CPU_MAX_ELEMENTS
from agent.ir.index_inputs import IndexInput
from agent.ir.printer import to_statements, to_text
from agent.reader.agreement import positive_inputs, product_inputs
from agent.runtime.devices import PEAKS, DeviceInfo
from agent.spec import OpSpec

from .addressing import lane_bases, streamed_inputs, views_source, wrapped_groups
from .emit import NotEmittable, shifted_store, stride_params, unwrapped_streamed
from .expand import NotRowLowerable, RowGraph, expand
from .facts import RowFacts, row_facts, row_layout
from .graph import topological
from .helpers import ROW_HELPERS
from .lanes import narrow_strided_row
from .passes import emit_body, unmasks_shifted_rows
from .pipelined import pipelines
from .space import (
    MAX_TILE_ELEMENTS,
    default_row_config,
    few_long_rows,
    launched,
    row_programs,
    row_space,
    streamed_norm_row,
)
from .split import emit_split, split_refusal

_SMOKE_MAX_ELEMENTS = 1 << 20
# Rows shorter than this are not split across programs: the partials and the fold would cost more than they spread.
_SPLIT_FROM = 4096
# Below this many elements one launch beats two however few programs run: the split is offered, not first.
_SPLIT_FIRST_FROM = 1 << 20
INDEX_DTYPES = ("int64", "int32")
# Rows longer than this start looped when the looped schedule reads them once.
_ONE_PASS_LOOPED_FROM = 8192
# What a mean divides by when no per-row denominator is given, as Python over the iteration shape in launch_plan.
_TOTAL_COUNT = {"elements": "math.prod(iteration)", "rows": "n_outer * n_inner", "batch": "iteration[0]"}
# The Triton interpreter runs tl.reduce and tl.associative_scan with a custom combine one element at a time
# (~0.1 ms each): kernels that use one are checked there on cases up to this size only.
_ELEMENT_BY_ELEMENT_MAX_ELEMENTS = 1 << 15
_ELEMENT_BY_ELEMENT = {("reduce", "prod"), ("reduce", "logaddexp"), ("scan", "cumprod"), ("scan", "cummax"),
                       ("scan", "cummin"), ("scan", "logcumsumexp")}


class RowGenerator:
    """Render the four files of a reduction-family kernel (sum, softmax, layer_norm, cumsum, ...)."""

    family = "rows"

    def refusal(self, spec: OpSpec) -> str | None:
        """Say why the row engine cannot write the spec (None when it can)."""
        if spec.category == "custom":
            return "the spec is described in words only (no operator IR)"
        try:
            graph = self.graph(spec)
        except NotRowLowerable as exc:
            return f"the offline row engine (reductions, softmax, norms, scans) cannot write it: {exc}"
        for name in graph.tile_inputs:
            ranks = sorted({len(case[name]) for case in spec.shape_cases()})
            if len(ranks) > 1:
                return (f"the shape cases give {name} ranks {ranks}; a row kernel is written for one rank "
                        "(give one job per rank)")
        indices = spec.index_inputs()
        others = [t.name for t in spec.inputs if any(d not in FLOATS for d in t.dtypes)
                  and not (t.name in indices and t.name in graph.row_inputs and set(t.dtypes) <= set(INDEX_DTYPES))]
        if others:
            return (f"inputs {', '.join(others)} are not floating point; the offline row engine reads float inputs "
                    "and int64/int32 class targets only")
        try:
            wrapped = wrapped_groups(spec, graph)
        except ValueError as exc:
            return f"the offline row engine cannot address an input: {exc}"
        for schedule in ("whole_row", "looped_row"):
            try:
                emit_body(graph.root, row_layout(graph), schedule == "looped_row", spec.output, graph.total,
                          wrapped=wrapped)
            except NotEmittable as exc:
                return f"the offline row engine cannot schedule it: {exc}"
        if output_dtype(spec) is None:
            return "the output dtype differs between dtype cases in a way the kernel wrapper cannot follow"
        return None

    def graph(self, spec: OpSpec) -> RowGraph:
        """Expand the spec's IR on its first case (NotRowLowerable when the engine cannot write it)."""
        case = spec.shape_cases()[0]
        return expand(spec.expr, spec.input_types(case, spec.dtype_cases()[0]), [t.name for t in spec.inputs])

    def interpreter_max_elements(self, spec: OpSpec) -> int:
        """Return the largest case, in output elements, that the Triton interpreter checks for this kernel."""
        slow = any((n.kind, n.text) in _ELEMENT_BY_ELEMENT for n in topological(self.graph(spec).root))
        return _ELEMENT_BY_ELEMENT_MAX_ELEMENTS if slow else CPU_MAX_ELEMENTS

    def generate(self, spec: OpSpec, config: LaunchConfig) -> KernelFiles:
        """Write the four files for a spec at a launch configuration."""
        return render_files(spec, config, self.context(spec, config), "triton_rows.py.j2")

    def category(self, spec: OpSpec) -> str:
        """Name the pattern category: rows/<layout>-<output> (rows/last-dropped is a row sum, say)."""
        graph = self.graph(spec)
        return f"rows/{row_layout(graph)}-{graph.output}"

    def schedules(self, spec: OpSpec) -> list[Schedule]:
        """List the schedules: split rows first when too few rows fill the machine, then by row length."""
        graph = self.graph(spec)
        facts = row_facts(spec, graph)
        split: list[Schedule] = []
        if split_refusal(graph.root, graph.total) is None and facts.n_reduce >= _SPLIT_FROM:
            if row_programs(facts) < facts.multiprocessors and facts.n_lanes * facts.n_reduce >= _SPLIT_FIRST_FROM:
                # Fewer row programs than SMs leave most of the machine idle: cut each row into spans.
                return ["split_row", "looped_row"]
            if row_programs(facts) < 4 * facts.multiprocessors:
                split = ["split_row"]
        return self._row_schedules(facts) + split

    def _row_schedules(self, facts: RowFacts) -> list[Schedule]:
        """List the unsplit schedules: rows in registers first when they fit, else only the looped row."""
        # A row longer than one tile spills when held whole (measured on the H100: 50257 fp32 columns ran at 25%
        # of the roofline with 128 registers/thread and spills, against 35% looped), so it is not offered.
        if facts.n_reduce > MAX_TILE_ELEMENTS:
            return ["looped_row"]
        if narrow_strided_row(facts):
            # The order has no device: an Ascend NPU takes it too, with its own looped default (unmeasured there).
            return ["looped_row", "whole_row"]
        if few_long_rows(facts):
            # A normalization of few long rows: the whole row is held through three passes (H100, group_norm of
            # [8, 256, 64, 64] fp16, 256 rows of 32768: 48.5 us whole with 32 warps, 25.7 us looped).
            return ["looped_row", "whole_row"]
        if streamed_norm_row(facts):
            return ["looped_row", "whole_row"]
        # A whole-row tile of 8192 for 5000 columns idles 39% of its lanes, yet reads the row once: with the rows'
        # alignment told to the compiler it is the faster (H100, softmax over 5000 fp16 columns: 0.063 ms whole
        # with 16 warps, 0.067 ms looped in 1024-element chunks; unaligned, 0.106 and 0.093 ms).
        if facts.passes == 1 and facts.n_reduce > _ONE_PASS_LOOPED_FROM and not facts.strided:
            # A row the looped schedule reads once is read once either way, with fewer registers in flight
            # (H100, cross-entropy over 32000 fp16 columns: 0.250 ms looped, 0.315-0.325 ms whole).
            return ["looped_row", "whole_row"]
        return ["whole_row", "looped_row"]

    def default_config(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo) -> LaunchConfig:
        """Return the usual best configuration of a schedule for these row lengths."""
        return default_row_config(row_facts(spec, self.graph(spec), device), schedule)

    def config_space(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo,
                     preferred: Sequence[LaunchConfig] = ()) -> Space:
        """Enumerate and prune a schedule's configurations by row length and register budget."""
        return row_space(row_facts(spec, self.graph(spec), device), schedule, preferred)

    def context(self, spec: OpSpec, config: LaunchConfig) -> dict[str, Any]:
        """Compute everything the templates need from the spec."""
        graph = self.graph(spec)
        layout = row_layout(graph)
        if config.pipelined and not pipelines(layout != "last", graph.total is not None):
            # Where a pipelined kernel cannot be written, the configuration's whole rows run plain.
            config = config.model_copy(update={"num_stages": 1, "programs_per_sm": 4})
        wrapped = wrapped_groups(spec, graph)
        streamed = streamed_inputs(spec, graph)
        unwrapped = unwrapped_streamed(graph.tile_inputs, streamed, wrapped)
        # Looped rows along the last dim: the inputs read from the 16-byte boundary below each row's start.
        shifted = tuple(unwrapped) if layout == "last" and config.schedule == "looped_row" else ()
        if config.schedule == "split_row":
            kernel = emit_split(graph.root, layout, spec.output, streamed, wrapped)
        else:
            kernel = emit_body(graph.root, layout, config.schedule == "looped_row", spec.output, graph.total,
                               streamed, wrapped, shifted)
        names = [t.name for t in spec.inputs]
        # Row starts the wrapper checks for alignment: the full-size inputs and a full-size output, rows along the
        # last dim. Strided, the lanes' starts: the full-size inputs addressed without a wrap, and the output.
        aligned = ([n for n in graph.tile_inputs if n in streamed] + ([spec.output] if graph.output == "full" else [])
                   if layout == "last" else unwrapped + [spec.output])
        helpers = [HELPERS[h].source for h in graph.helpers] + [ROW_HELPERS[h] for h in kernel.helpers]
        first_dtype = spec.dtype_cases()[0][names[0]]
        tolerance = spec.tolerances[first_dtype]
        tolerances = {d: (t.rtol, t.atol) for d, t in sorted(spec.tolerances.items())} | {"int64": (0.0, 0.0)}
        positive = sorted(positive_inputs(spec.expr) & set(names))
        # Inputs of a product along the reduced dims: each is multiplied as many times as the main input's rows are
        # long, broadcast or not.
        multiplied = sorted(product_inputs(spec.expr) & set(names) - set(positive))
        indices = spec.index_inputs()
        params = {p.name: p.value for p in spec.params}
        edges = spec.odd_shape_cases()
        beyond = [c for c in edges if config.schedule == "whole_row" and row_length(graph, c) > MAX_TILE_ELEMENTS]
        edges = [c for c in edges if c not in beyond]
        main = graph.tile_inputs[0]
        smoke = small_case(spec, _SMOKE_MAX_ELEMENTS, edges)
        return {
            "op": spec.name,
            "output": spec.output,
            "formula": to_text(spec.expr),
            "schedule": config.schedule,
            "pipelined": config.pipelined,
            "schedule_note": f"offline row engine; schedule `{config.schedule}`: {SCHEDULE_NOTES[config.schedule]}",
            "dims_text": ", ".join(str(d) for d in graph.dims),
            "rank": graph.rank,
            "dims": repr(graph.dims),
            "max_tile": MAX_TILE_ELEMENTS,
            "constants": config.constants(),
            "helpers": helpers,
            "layout": layout,
            "tile_inputs": graph.tile_inputs,
            "row_inputs": graph.row_inputs,
            "tile_indices": [names.index(n) for n in graph.tile_inputs],
            "row_indices": [names.index(n) for n in graph.row_inputs],
            "views": [(names.index(n), role) for n, role in sorted(graph.views.items())],
            "groups": graph.groups,
            "grouped_index": next((names.index(n) for n, r in graph.views.items() if r == "grouped"), None),
            "wrapped": {n: wrapped.get(n, "") for n in names},
            "stride_params": {n: stride_params(n, "mkn" if n in graph.tile_inputs else "mn", wrapped.get(n, ""))
                            for n in graph.tile_inputs + graph.row_inputs},
            "bases": lane_bases(graph, layout, wrapped, spec.output, frozenset(aligned)),
            "aligned_indices": [names.index(n) for n in aligned if n in names],
            "output_aligned": spec.output in aligned,
            "aligned_names": aligned if layout != "last" else [],
            "shift_names": list(shifted),
            "store_shifted": bool(shifted) and shifted_store(graph.root),
            "row_bounds": bool(shifted) and (shifted_store(graph.root)
                                             or unmasks_shifted_rows(graph.root, graph.total)),
            "input_names": names,
            "params": spec.params,
            "body": kernel.text,
            "n_partials": sum(1 for n in topological(graph.root) if n.kind == "reduce"),
            "views_source": views_source(graph),
            "output_kind": graph.output,
            "out_dtype": output_dtype(spec),
            "signature": signature(spec),
            "named_inputs": tuple_literal([f'("{n}", {n})' for n in names]),
            "shapes_tuple": tuple_literal([f"tuple({n}.shape)" for n in names]),
            "dtypes_tuple": tuple_literal([f"{n}.dtype" for n in names]),
            "call_args": ", ".join(graph.tile_inputs + graph.row_inputs + ["partials" if graph.total else spec.output]
                                   + [f"float({p.name})" for p in spec.params]),
            "inputs": [{"name": t.name, "sample": sample_draw(smoke[t.name], t.dtypes[0], t.name in positive,
                                                              _index_high(indices.get(t.name), smoke),
                                                              row_length(graph, smoke) if t.name in multiplied
                                                              else None),
                        "reference_arg": f"{t.name}.cpu()" + ("" if t.name in indices else ".double()")}
                       for t in spec.inputs],
            "index_inputs": pretty({n: [i.data, i.axis, i.ignored] for n, i in indices.items()}) if indices else "",
            "input_kinds": {t.name: "index" if t.name in indices else "float" for t in spec.inputs},
            "total": graph.total,
            "total_count": _TOTAL_COUNT[graph.total.count] if graph.total else None,
            "torch_statements": to_statements(spec.expr, spec.output),
            "cpu_max_elements": self.interpreter_max_elements(spec),
            "spec_cases": pretty(spec.shape_cases()),
            "edge_cases": pretty(edges),
            "beyond_schedule": pretty(beyond) if beyond else "",
            "beyond_schedule_reason": f"rows longer than the whole_row schedule holds ({MAX_TILE_ELEMENTS} elements); "
                                      "the looped_row schedule takes them",
            "dtype_cases": pretty(spec.dtype_cases()),
            "tolerances": pretty(tolerances),
            "positive": positive,
            "product_inputs": pretty({n: [main, graph.rank, list(graph.dims)] for n in multiplied})
            if multiplied else "",
            "params_dict": repr(params),
            "spec_flops": spec_flops(spec),
            "device_peaks": pretty({k: PEAKS[k] for k in sorted(PEAKS, key=len, reverse=True)}),
            "first_rtol": tolerance.rtol,
            "first_atol": tolerance.atol,
            "code": code_context(spec),
            # Sums and scans accumulate: their absolute error grows like the square root of the row length.
            "length_scaled": {"input": main, "dims": list(graph.dims)}
            if graph.output != "full" or any(n.kind == "scan" for n in topological(graph.root)) else None,
            "special_cases": ["ties", "large", "nan_inf"],
        }


def row_length(graph: RowGraph, case: dict[str, list[int]]) -> int:
    """Return the elements along the reduced dims in a shape case."""
    shape = graph.iteration_shapes(case)[graph.tile_inputs[0]] if graph.tile_inputs else ()
    padded = [1] * (graph.rank - len(shape)) + list(shape)
    return math.prod(padded[d] for d in graph.dims)


def _index_high(found: IndexInput | None, shapes: dict[str, list[int]]) -> int | None:
    return found.high(shapes) if found else None


def launched_on(spec: OpSpec, config: LaunchConfig, case: dict[str, list[int]], device: DeviceInfo) -> tuple[int, int]:
    """Return the programs a row kernel launches on one shape case and their tile (its wrapper's arithmetic)."""
    return launched(config, row_facts(spec, RowGenerator().graph(spec), device, [case]))
