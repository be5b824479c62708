"""Offline generator for conv2d (NCHW, groups 1) as an implicit GEMM, with a fused bias and epilogue."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from agent.generators.base import SCHEDULE_NOTES, KernelFiles, LaunchConfig, Schedule
from agent.generators.offline.matmul.space import ProductFacts, default_product_config, product_space
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
from agent.runtime.devices import PEAKS, DeviceInfo
from agent.spec import OpSpec

from .graph import ConvGraph, NotConvLowerable, conv_graph

# The interpreter gathers every patch element by element: cases up to this many output elements are checked there.
INTERPRETER_MAX_ELEMENTS = 1 << 14
# From this many input channels, a multiple of 128 (no part-empty step), a 64x64 tile takes 128 of them a step in
# 3 stages (a 96 KB ring; 64 KB before): fewer, longer steps over a deep shared dim (H100, relu(conv2d) 3x3
# [32, 512, 7, 7] bf16: 0.0740 -> 0.0655 ms, x0.71 -> x0.80 cuDNN; H200 0.0749 -> 0.0642, x0.71 -> x0.83).
DEEP_CHANNELS = 256
# Odd cases: (images, input channels, height, width, output channels) around the spec's kernel.
_EDGE_SIZES = ((1, 1, 0, 0, 1), (2, 3, 2, 4, 5), (1, 5, 6, 3, 17))


class ConvGenerator:
    """Render the four files of a 2-D convolution with its epilogue (bias, activation, residual, scale)."""

    family = "conv"

    def refusal(self, spec: OpSpec) -> str | None:
        """Say why the convolution engine cannot write the spec (None when it can)."""
        if spec.category == "custom":
            return "the spec is described in words only (no operator IR)"
        try:
            conv_graph(spec)
        except NotConvLowerable as exc:
            return f"the offline convolution engine cannot write it: {exc}"
        ints = [t.name for t in spec.inputs if any(d not in FLOATS for d in t.dtypes)]
        if ints:
            return f"inputs {', '.join(ints)} are not floating point; the convolution engine reads floats only"
        if output_dtype(spec) is None:
            return "the output dtype differs between dtype cases in a way the kernel wrapper cannot follow"
        return None

    def graph(self, spec: OpSpec) -> ConvGraph:
        """Split the spec into its convolution and epilogue."""
        return conv_graph(spec)

    def interpreter_max_elements(self, spec: OpSpec) -> int:
        """Return the largest case, in output elements, that the Triton interpreter checks."""
        return INTERPRETER_MAX_ELEMENTS

    def generate(self, spec: OpSpec, config: LaunchConfig) -> KernelFiles:
        """Write the four files for a spec at a launch configuration."""
        return render_files(spec, config, self.context(spec, config), "triton_conv.py.j2")

    def category(self, spec: OpSpec) -> str:
        """Name the pattern category: conv/2d, with -epilogue when a chain follows the convolution."""
        graph = self.graph(spec)
        plain = len(graph.epilogue.body) == 1 and not graph.epilogue_inputs
        return "conv/2d" + ("" if plain else "-epilogue")

    def schedules(self, spec: OpSpec) -> list[Schedule]:
        """List the schedules: output tiles (pixels x channels) over the gathered patches."""
        return ["tiled"]

    def default_config(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo) -> LaunchConfig:
        """Return the matmul engine's tile for the implicit GEMM's sizes, deeper over many channels."""
        config = default_product_config(conv_facts(spec, device))
        if (config.block_m, config.block_size, config.block_k) == (64, 64, 64) and deep_channels(spec):
            return config.model_copy(update={"block_k": 128, "num_stages": 3})
        return config

    def config_space(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo,
                     preferred: Sequence[LaunchConfig] = ()) -> Space:
        """Enumerate the matmul engine's tiles for the implicit GEMM's sizes."""
        return product_space(conv_facts(spec, device), preferred)

    def context(self, spec: OpSpec, config: LaunchConfig) -> dict[str, Any]:
        """Compute everything the templates need from the spec."""
        graph = self.graph(spec)
        names = [t.name for t in spec.inputs]
        tolerance = spec.tolerances[spec.dtype_cases()[0][graph.x]]
        edges = edge_cases(spec, graph)
        smoke = small_case(spec, INTERPRETER_MAX_ELEMENTS, edges)
        return {
            "op": spec.name,
            "output": spec.output,
            "formula": to_text(spec.expr),
            "schedule": config.schedule,
            "schedule_note": f"offline convolution engine; schedule `{config.schedule}`: implicit GEMM, "
                             f"{SCHEDULE_NOTES[config.schedule]}",
            "constants": config.constants(),
            "helpers": [HELPERS[h].source for h in graph.epilogue.helpers],
            "x": graph.x, "w": graph.w, "bias": graph.bias, "acc": graph.acc,
            "stride": graph.stride, "padding": graph.padding, "dilation": graph.dilation,
            "epilogue_inputs": [{"name": n, "other": ", other=1.0" if positive else ""}
                                for n, positive in graph.epilogue_inputs],
            "body": graph.epilogue.body,
            "params": spec.params,
            "out_dtype": output_dtype(spec),
            "signature": signature(spec),
            "named_inputs": tuple_literal([f'("{n}", {n})' for n in names]),
            "dtypes_tuple": tuple_literal([f"{n}.dtype" for n in names]),
            "input_names": names,
            "inputs": [{"name": t.name, "sample": sample_draw(smoke[t.name], t.dtypes[0], False)} for t in spec.inputs],
            "torch_statements": to_statements(spec.expr, spec.output),
            "code": code_context(spec),
            "cpu_max_elements": INTERPRETER_MAX_ELEMENTS,
            "spec_cases": pretty(spec.shape_cases()),
            "edge_cases": pretty(edges),
            "dtype_cases": pretty(spec.dtype_cases()),
            "tolerances": pretty({d: (t.rtol, t.atol) for d, t in sorted(spec.tolerances.items())}),
            "positive": sorted(n for n, positive in graph.epilogue_inputs if positive),
            "params_dict": repr({p.name: p.value for p in spec.params}),
            "spec_flops": spec_flops(spec),
            "device_peaks": pretty({k: PEAKS[k] for k in sorted(PEAKS, key=len, reverse=True)}),
            "first_rtol": tolerance.rtol,
            "first_atol": tolerance.atol,
            # Each output sums C·R·S products: its rounding error grows like the square root of that count.
            "length_scaled": {"input": graph.w, "dims": [1, 2, 3]},
            "rank": 4,
            "special_cases": False,
            "product_peak": True,
            "product_operand": graph.x,
        }


def deep_channels(spec: OpSpec) -> bool:
    """Tell whether every case has at least DEEP_CHANNELS input channels, in whole steps of 128."""
    graph = conv_graph(spec)
    channels = [case[graph.w][1] for case in spec.shape_cases()]
    return all(c >= DEEP_CHANNELS and c % 128 == 0 for c in channels)


def conv_facts(spec: OpSpec, device: DeviceInfo | None = None) -> ProductFacts:
    """Gather the implicit GEMM's sizes on the largest case: pixels x output channels x (C·R·S)."""
    graph = conv_graph(spec)
    sizes = []
    for case in spec.shape_cases():
        out = spec.output_shape(case)
        weight = case[graph.w]
        sizes.append((out[0] * out[2] * out[3], weight[0], math.prod(weight[1:])))
    m, n, k = max(sizes, key=math.prod)
    itemsize = min(2 if case[graph.x] in ("float16", "bfloat16") else 4 for case in spec.dtype_cases())
    return ProductFacts(m=m, n=n, k=k, batch=1, itemsize=itemsize,
                        multiprocessors=(device.multiprocessors if device else 0) or REFERENCE_MULTIPROCESSORS)


def edge_cases(spec: OpSpec, graph: ConvGraph) -> list[dict[str, list[int]]]:
    """Derive odd shapes that keep the spec's kernel, stride, padding and dilation (and inputs' broadcast roles)."""
    case = spec.shape_cases()[0]
    weight = case[graph.w]
    span_h = graph.dilation[0] * (weight[2] - 1) + 1
    span_w = graph.dilation[1] * (weight[3] - 1) + 1
    found = []
    for images, channels, extra_h, extra_w, outs in _EDGE_SIZES:
        shapes = {graph.x: [images, channels, span_h + extra_h, span_w + extra_w],
                  graph.w: [outs, channels, weight[2], weight[3]]}
        if graph.bias:
            shapes[graph.bias] = [outs]
        out = spec.output_shape({**case, **shapes}) if not graph.epilogue_inputs else None
        for name, _ in graph.epilogue_inputs:
            if out is None:
                probe = {**case, **shapes}
                for other, _ in graph.epilogue_inputs:
                    probe[other] = [1] * len(case[other])
                out = spec.output_shape(probe)
            own = case[name]
            padded = [1] * (4 - len(own)) + list(own)
            shapes[name] = [out[d] if padded[d] != 1 else 1 for d in range(4)][4 - len(own):]
        found.append(shapes)
    return found
