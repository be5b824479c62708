"""A stand-in `<op>_performance.py` made from the spec, so service harnesses never take inputs from model code."""

from __future__ import annotations

import json

from agent.spec import OpSpec

_TEMPLATE = '''"""Inputs of {op} made by the service from its spec (standard normal, seeded)."""

import torch

INPUTS = {inputs}
SPEC_CASES = {shape_cases}
DTYPE_CASES = {dtype_cases}
PARAMS = {params}


def make_inputs(shapes, dtypes, seed, device):
    """Return fresh random inputs for one case."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shapes[n], generator=generator).to(getattr(torch, dtypes[n])).to(device) for n in INPUTS]
'''


def spec_inputs_module(spec: OpSpec) -> str:
    """Return the source of a performance module exposing the spec's cases and a make_inputs of our own."""
    return _TEMPLATE.format(
        op=spec.name, inputs=json.dumps([t.name for t in spec.inputs]), shape_cases=json.dumps(spec.shape_cases()),
        dtype_cases=json.dumps(spec.dtype_cases()), params=repr({p.name: p.value for p in spec.params}),
    )
