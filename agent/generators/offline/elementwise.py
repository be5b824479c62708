"""Offline generator for fused elementwise and broadcast operators, written from the operator IR."""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

from agent.generators.base import SCHEDULE_NOTES, KernelFiles, LaunchConfig, Schedule
from agent.generators.offline.broadcast import broadcast_runs, count_runs
from agent.generators.offline.lowering import Lowered, NotLowerable, lower, unsupported
from agent.generators.offline.render import (
    code_context,
    next_pow2,
    output_dtype,
    pretty,
    render_files,
    sample_draw,
    signature,
    spec_flops,
    tuple_literal,
)
from agent.generators.offline.space import REFERENCE_MULTIPROCESSORS, ShapeFacts, Space, config_space
from agent.generators.offline.triton_ops import HELPERS
from agent.ir.edges import CPU_MAX_ELEMENTS
from agent.ir.printer import to_statements, to_text
from agent.reader.agreement import positive_inputs
from agent.runtime.devices import PEAKS, DeviceInfo
from agent.spec import OpSpec

# Odd sizes for edge cases: not powers of two, not multiples of any block size.
_EDGE_DIMS = (3, 5, 7, 11)
_SMOKE_MAX_ELEMENTS = 1 << 20
_FLOATS = ("float32", "float16", "bfloat16")


class ElementwiseGenerator:
    """Render the four files of a fused elementwise kernel from templates."""

    family = "elementwise"

    def refusal(self, spec: OpSpec) -> str | None:
        """Say why this generator cannot write the spec (None when it can)."""
        if spec.category == "custom":
            return "the spec is described in words only (no operator IR)"
        problems = unsupported(spec.expr)
        if problems:
            return ("the offline generator writes elementwise chains, reductions, softmax, norms, scans and losses; "
                    "it does not lower " + "; ".join(problems))
        ints = [t.name for t in spec.inputs if any(d not in _FLOATS for d in t.dtypes)]
        if ints:
            return f"inputs {', '.join(ints)} are not floating point; the elementwise generator reads float inputs only"
        if output_dtype(spec) is None:
            return "the output dtype differs between dtype cases in a way the kernel wrapper cannot follow"
        return None

    def generate(self, spec: OpSpec, config: LaunchConfig) -> KernelFiles:
        """Write the four files for a spec at a launch configuration."""
        return render_files(spec, config, self.context(spec, config))

    def interpreter_max_elements(self, spec: OpSpec) -> int:
        """Return the largest case the Triton interpreter checks (elementwise kernels run vectorized there)."""
        return CPU_MAX_ELEMENTS

    def category(self, spec: OpSpec) -> str:
        """Name the pattern category: elementwise/same-shape, /row-broadcast or /broadcast."""
        kinds = [self._input(spec, _lowered(spec), t.name) for t in spec.inputs]
        if all(k["full"] for k in kinds):
            return "elementwise/same-shape"
        if all(k["full"] or k["row"] for k in kinds):
            return "elementwise/row-broadcast"
        return "elementwise/broadcast"

    def schedules(self, spec: OpSpec) -> list[Schedule]:
        """List the schedules for the spec: flat first; rows needs an output of rank 2 or more."""
        ranks = {len(spec.output_shape(case)) for case in spec.shape_cases()}
        return ["flat", "rows", "persistent"] if min(ranks) >= 2 else ["flat", "persistent"]

    def default_config(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo) -> LaunchConfig:
        """Return the usual best configuration of a schedule (1024-2048 elements per program, 4 warps)."""
        if schedule == "rows":
            block_n = min(1024, next_pow2(shape_facts(spec, device).n_cols))
            return LaunchConfig(schedule="rows", block_size=block_n, block_m=max(1, 2048 // block_n), num_warps=4)
        if schedule == "persistent":
            return LaunchConfig(schedule="persistent", block_size=1024, num_warps=4, num_stages=1, programs_per_sm=4)
        return LaunchConfig(schedule="flat", block_size=1024, num_warps=4)

    def config_space(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo,
                     preferred: Sequence[LaunchConfig] = ()) -> Space:
        """Enumerate and prune a schedule's configurations for this spec and device."""
        return config_space(shape_facts(spec, device), schedule, preferred)

    def context(self, spec: OpSpec, config: LaunchConfig) -> dict[str, Any]:
        """Compute everything the templates need from the spec."""
        lowered = _lowered(spec)
        inputs = [self._input(spec, lowered, t.name) for t in spec.inputs]
        first_dtype = spec.dtype_cases()[0][spec.inputs[0].name]
        tolerance = spec.tolerances[first_dtype]
        formula = to_text(spec.expr)
        return {
            "op": spec.name,
            "cpu_max_elements": CPU_MAX_ELEMENTS,
            "output": spec.output,
            "formula": formula,
            "schedule": config.schedule,
            "schedule_note": f"offline elementwise generator; schedule `{config.schedule}`: "
                             f"{SCHEDULE_NOTES[config.schedule]}",
            "constants": config.constants(),
            "inputs": inputs,
            "params": spec.params,
            "aligned": [i for i in inputs if i["trailing"]],
            "broadcast_runs": [(i["name"], i["runs"]) for i in inputs
                               if not i["full"] and not (config.schedule == "rows" and i["row"])],
            "broadcast_runs_source": inspect.getsource(broadcast_runs).rstrip(),
            "helpers": [HELPERS[h].source for h in lowered.helpers],
            "body": lowered.body,
            "torch_statements": to_statements(spec.expr, spec.output),
            "out_dtype": output_dtype(spec),
            "signature": signature(spec),
            "named_inputs": tuple_literal([f'("{t.name}", {t.name})' for t in spec.inputs]),
            "shapes_tuple": tuple_literal([f"tuple({t.name}.shape)" for t in spec.inputs]),
            "dtypes_tuple": tuple_literal([f"{t.name}.dtype" for t in spec.inputs]),
            "call_args": ", ".join(
                [t.name for t in spec.inputs] + [spec.output] + [f"float({p.name})" for p in spec.params]
            ),
            "spec_cases": pretty(spec.shape_cases()),
            "edge_cases": pretty(edge_cases(spec)),
            "dtype_cases": pretty(spec.dtype_cases()),
            "tolerances": pretty({d: (t.rtol, t.atol) for d, t in sorted(spec.tolerances.items())}),
            "positive": sorted(positive_inputs(spec.expr) & {t.name for t in spec.inputs}),
            "params_dict": repr({p.name: p.value for p in spec.params}),
            "input_names": [t.name for t in spec.inputs],
            "spec_flops": spec_flops(spec),
            "device_peaks": pretty({k: PEAKS[k] for k in sorted(PEAKS, key=len, reverse=True)}),
            "first_rtol": tolerance.rtol,
            "first_atol": tolerance.atol,
            "code": code_context(spec),
            "length_scaled": None,
            "special_cases": ["nan"],  # NaN goes through every op as in PyTorch
        }

    def _input(self, spec: OpSpec, lowered: Lowered, name: str) -> dict[str, Any]:
        tensor = next(t for t in spec.inputs if t.name == name)
        trailing = lowered.views[name].trailing if name in lowered.views else 0
        full, row, runs = True, True, 1
        for case in spec.shape_cases():
            viewed = tuple(case[name]) + (1,) * trailing
            out = tuple(spec.output_shape(case))
            padded = (1,) * (len(out) - len(viewed)) + viewed
            if padded != out:
                full = False
            # A row input varies only along the last output dimension (a bias over features).
            if len(out) < 2 or padded != (1,) * (len(out) - 1) + out[-1:] or trailing:
                row = False
            runs = max(runs, count_runs(viewed, out))
        smoke = _smoke_case(spec)
        dtype = tensor.dtypes[0]
        positive = name in positive_inputs(spec.expr)
        return {
            "other": ", other=1.0" if positive else "",
            "name": name, "full": full, "row": row and not full, "runs": runs, "trailing": trailing,
            "sample": sample_draw(smoke[name], dtype, positive),
        }




def _lowered(spec: OpSpec) -> Lowered:
    try:
        return lower(spec.expr, spec.output, [t.name for t in spec.inputs])
    except NotLowerable as exc:
        raise ValueError(f"the offline elementwise generator cannot write {spec.name}: {exc}") from None







def edge_cases(spec: OpSpec) -> list[dict[str, list[int]]]:
    """Derive odd shapes that keep each input's broadcast role from the spec's first case (any rank)."""
    case = spec.shape_cases()[0]
    lowered = _lowered(spec)
    out = spec.output_shape(case)
    rank = len(out)
    odd = [_EDGE_DIMS[i % len(_EDGE_DIMS)] for i in range(max(rank - 1, 0))]
    outs = [
        [1] * rank,
        odd + [131],
        [5] * (rank - 1) + [1] if rank > 1 else [257],
        [67 if i == rank - 2 else 2 for i in range(rank - 1)] + [1021] if rank > 1 else [65537],
    ]
    result = []
    for edge_out in outs:
        shapes = {}
        for t in spec.inputs:
            own = case[t.name]
            trailing = lowered.views[t.name].trailing if t.name in lowered.views else 0
            mine = list(own) + [1] * trailing
            padded = [1] * (rank - len(mine)) + mine
            keep = [padded[d] != 1 or out[d] == 1 for d in range(rank)]
            edge = [edge_out[d] if keep[d] else 1 for d in range(rank)]
            edge = edge[rank - len(mine):][: len(own)]
            shapes[t.name] = edge
        if shapes not in result:
            result.append(shapes)
    return result


def _smoke_case(spec: OpSpec) -> dict[str, list[int]]:
    """Pick the first spec case if it is small, else a mid-sized edge case."""
    first = spec.shape_cases()[0]
    if math.prod(spec.output_shape(first)) <= _SMOKE_MAX_ELEMENTS:
        return first
    return edge_cases(spec)[-1]


_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


def shape_facts(spec: OpSpec, device: DeviceInfo) -> ShapeFacts:
    """Collect the shape and machine facts that prune the configuration space."""
    outs = [spec.output_shape(case) for case in spec.shape_cases()]
    largest = max(outs, key=math.prod)
    elements = math.prod(largest)
    n_cols = largest[-1] if largest else 1
    itemsizes = [_ITEMSIZE.get(d, 4) for case in spec.dtype_cases() for d in case.values()]
    return ShapeFacts(
        largest_elements=elements, n_cols=n_cols, n_rows=max(1, elements // max(1, n_cols)),
        narrowest_itemsize=min(itemsizes), n_tensors=len(spec.inputs) + 1,
        multiprocessors=device.multiprocessors or REFERENCE_MULTIPROCESSORS, ascend=device.kind == "npu",
    )
