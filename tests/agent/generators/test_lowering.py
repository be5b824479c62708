"""Every elementwise op the offline generator lowers computes what the IR's PyTorch rendering computes.

One small kernel per op, generated from an OpSpec and run in the Triton interpreter in this process (the code is
ours, from the templates), compared with the IR's evaluator in float64.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
import torch

from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.generators.offline.lowering import unsupported
from agent.generators.offline.triton_ops import TRITON
from agent.ir import registry
from agent.ir.evaluate import evaluate
from agent.ir.expr import names
from agent.ir.parse import parse_text
from agent.reader.agreement import positive_inputs
from agent.spec import OpSpec

SHAPE = [3, 37]
UNARY = sorted(n for n in TRITON if len(registry.get(n).operands) == 1 and n not in ("cast", "logical_not", "clamp"))
FORMULAS = [f"{n}(x)" for n in UNARY] + [
    "leaky_relu(x, negative_slope=0.2)", "gelu(x, approximate='tanh')", "softplus(x, beta=2.0, threshold=3.0)",
    "elu(x, alpha=0.5)", "hardtanh(x, min_val=-0.5, max_val=0.25)", "clamp(x, min=0.0)", "clamp(x, max=0.5)",
    "clamp(x, min=-1.0, max=1.0)", "x + y", "x - y", "x * y", "x / y", "maximum(x, y)", "minimum(x, y)",
    "x ** 3", "x ** -2", "x ** 10", "x ** -9", "x ** 0",
    "x ** 0.5", "y ** 1.5", "where(x > y, x, 0.1 * y)", "where(x <= 0.0, -x, x * 2.0)",
    "cast(x, dtype='float16')", "cast(relu(x), dtype='bfloat16')", "x * alpha + y", "logical_not(x > 0.0)",
]


def _spec(formula: str) -> OpSpec:
    used = set(names(parse_text(formula)))
    params = [{"name": "alpha", "value": 0.75}] if "alpha" in used else []
    inputs = [{"name": n, "shapes": [SHAPE], "dtypes": ["float32"]} for n in ("x", "y") if n in used]
    return OpSpec(name="op", formula=formula, inputs=inputs, params=params)  # type: ignore[arg-type]


@pytest.mark.parametrize("formula", FORMULAS)
def test_the_kernel_computes_what_the_ir_says(formula: str, tmp_path: Path) -> None:
    spec = _spec(formula)
    assert ElementwiseGenerator().refusal(spec) is None
    files = ElementwiseGenerator().generate(spec, LaunchConfig(schedule="flat", block_size=64, num_warps=1))
    for name, source in files.files.items():
        (tmp_path / name).write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("op_triton")
        generator = torch.Generator().manual_seed(7)
        positive = positive_inputs(spec.expr)
        tensors = {}
        for t in spec.inputs:
            values = torch.randn(SHAPE, generator=generator, dtype=torch.float64) * 2.0
            tensors[t.name] = values.abs() + 0.25 if t.name in positive else values
        params = {p.name: p.value for p in spec.params}
        got = module.op(*[tensors[t.name].float() for t in spec.inputs], **params)
        want = evaluate(spec.expr, {**{k: v.float().double() for k, v in tensors.items()}, **params})
        assert got.dtype == evaluate(spec.expr, {**{k: v.float() for k, v in tensors.items()}, **params}).dtype
        torch.testing.assert_close(got.double(), want.double(), rtol=2e-2 if got.dtype != torch.float32 else 1e-5,
                                   atol=2e-2 if got.dtype != torch.float32 else 1e-5)
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("op_triton", "op_baseline"):
            sys.modules.pop(name, None)


@pytest.mark.parametrize(("formula", "named"), [
    ("softmax(x, dim=-1)", "softmax"), ("sum(x, dim=1) + 1.0", "sum"), ("x @ y", "matmul"),
    ("round(x)", "round"), ("cumsum(x, dim=-1)", "cumsum"),
])
def test_what_it_cannot_lower_is_named(formula: str, named: str) -> None:
    problems = unsupported(parse_text(formula))
    assert problems and named in problems[0]
