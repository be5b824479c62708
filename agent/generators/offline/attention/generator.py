"""Offline generator for scaled dot-product attention: a FlashAttention-style forward kernel."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from agent.generators.base import SCHEDULE_NOTES, KernelFiles, LaunchConfig, Schedule
from agent.generators.offline.render import (
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
from agent.ir.printer import to_statements, to_text
from agent.runtime.devices import PEAKS, DeviceInfo
from agent.spec import OpSpec

from .graph import AttentionGraph, NotAttentionLowerable, attention_graph
from .space import AttentionFacts, attention_space, default_attention_config

# The interpreter runs each tl.dot through numpy, one program after another: cases up to this many output
# elements are checked there (the spec's larger shapes are checked on an accelerator).
INTERPRETER_MAX_ELEMENTS = 1 << 17
_SMOKE_MAX_ELEMENTS = 1 << 16


class AttentionGenerator:
    """Render the four files of softmax(q kᵀ · scale + mask) v, causal or not."""

    family = "attention"

    def refusal(self, spec: OpSpec) -> str | None:
        """Say why the attention engine cannot write the spec (None when it can)."""
        if spec.category == "custom":
            return "the spec is described in words only (no operator IR)"
        try:
            attention_graph(spec)
        except NotAttentionLowerable as exc:
            return f"the offline attention engine cannot write it: {exc}"
        if output_dtype(spec) is None:
            return "the output dtype differs between dtype cases in a way the kernel wrapper cannot follow"
        return None

    def graph(self, spec: OpSpec) -> AttentionGraph:
        """Read the spec's query, key, value, mask, causality and scale."""
        return attention_graph(spec)

    def interpreter_max_elements(self, spec: OpSpec) -> int:
        """Return the largest case, in output elements, that the Triton interpreter checks."""
        return INTERPRETER_MAX_ELEMENTS

    def generate(self, spec: OpSpec, config: LaunchConfig) -> KernelFiles:
        """Write the four files for a spec at a launch configuration."""
        return render_files(spec, config, self.context(spec, config), "triton_attention.py.j2")

    def category(self, spec: OpSpec) -> str:
        """Name the pattern category: attention/causal, attention/masked or attention/full."""
        graph = self.graph(spec)
        return "attention/" + ("causal" if graph.causal else "masked" if graph.mask else "full")

    def schedules(self, spec: OpSpec) -> list[Schedule]:
        """List the schedules: query blocks over a key loop."""
        return ["flash"]

    def default_config(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo) -> LaunchConfig:
        """Return the usual best blocks for the head dims and the element width."""
        return default_attention_config(attention_facts(spec))

    def config_space(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo,
                     preferred: Sequence[LaunchConfig] = ()) -> Space:
        """Enumerate blocks, warps and stages, pruned by shared memory and registers."""
        return attention_space(attention_facts(spec), preferred)

    def context(self, spec: OpSpec, config: LaunchConfig) -> dict[str, Any]:
        """Compute everything the templates need from the spec."""
        graph = self.graph(spec)
        names = [t.name for t in spec.inputs]
        first_dtype = spec.dtype_cases()[0][graph.q]
        tolerance = spec.tolerances[first_dtype]
        smoke = small_case(spec, _SMOKE_MAX_ELEMENTS)
        rank = len(spec.shape_cases()[0][graph.q])
        return {
            "op": spec.name,
            "output": spec.output,
            "formula": to_text(spec.expr),
            "schedule": config.schedule,
            "schedule_note": f"offline attention engine; schedule `{config.schedule}`: "
                             f"{SCHEDULE_NOTES[config.schedule]}",
            "constants": config.constants(),
            "q": graph.q, "k": graph.k, "v": graph.v, "mask": graph.mask, "causal": graph.causal,
            "scale": graph.scale,
            "params": spec.params,
            "out_dtype": output_dtype(spec),
            "signature": signature(spec),
            "named_inputs": tuple_literal([f'("{n}", {n})' for n in names]),
            "input_names": names,
            "dtypes_tuple": tuple_literal([f"{n}.dtype" for n in names]),
            "inputs": [{"name": t.name, "sample": sample_draw(smoke[t.name], t.dtypes[0], False)}
                       for t in spec.inputs],
            "torch_statements": to_statements(spec.expr, spec.output),
            "code": code_context(spec),
            "cpu_max_elements": INTERPRETER_MAX_ELEMENTS,
            "spec_cases": pretty(spec.shape_cases()),
            "edge_cases": pretty(spec.odd_shape_cases()),
            "dtype_cases": pretty(spec.dtype_cases()),
            "tolerances": pretty({d: (t.rtol, t.atol) for d, t in sorted(spec.tolerances.items())}),
            "positive": [],
            "params_dict": repr({p.name: p.value for p in spec.params}),
            "spec_flops": spec_flops(spec),
            "device_peaks": pretty({k: PEAKS[k] for k in sorted(PEAKS, key=len, reverse=True)}),
            "first_rtol": tolerance.rtol,
            "first_atol": tolerance.atol,
            # Each output is a weighted sum over the keys: rounding grows like the square root of their count.
            "length_scaled": {"input": graph.k, "dims": [rank - 2]},
            "rank": rank,
            "special_cases": False,
            "product_peak": True,
            "product_operand": graph.q,
        }


def attention_facts(spec: OpSpec) -> AttentionFacts:
    """Gather the largest case's query count and head dims, the narrowest element width, the mask's widest."""
    graph = attention_graph(spec)
    cases = spec.shape_cases()
    largest = max(cases, key=lambda c: math.prod(c[graph.q]))
    itemsize = min(2 if case[graph.q] in ("float16", "bfloat16") else 4 for case in spec.dtype_cases())
    # The mask's tiles share the key ring's shared memory: count its widest type.
    mask_itemsize = max(2 if case[graph.mask] in ("float16", "bfloat16") else 4
                        for case in spec.dtype_cases()) if graph.mask else 0
    return AttentionFacts(n_queries=largest[graph.q][-2], head_d=largest[graph.q][-1],
                          head_dv=largest[graph.v][-1], itemsize=itemsize, mask_itemsize=mask_itemsize)
