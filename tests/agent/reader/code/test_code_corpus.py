"""Acceptance: every code spec of the corpus reads (find_code + read_code, in the sandbox) into the right IR."""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import CODE_CASES, READ_CASES, READ_IDS, READ_REFUSALS
from corpus_loader import Case, _dim_map, code_of, make_inputs, reference_output, shrink_shapes

from agent.ir import registry
from agent.ir.evaluate import evaluate
from agent.ir.printer import to_text
from agent.reader.code import CodeReading
from agent.reader.errors import SpecQuestion

pytestmark = pytest.mark.bubblewrap  # the corpus's code specs are traced in the sandbox

# Code specs whose reading needs an op the IR does not have yet: the question must name what the code uses, until
# the registry has one of the ops that would read it.
NEEDS_OP = {"fenced-packed-swiglu": ("Tensor.chunk", ("narrow", "chunk"))}

KERNELBENCH_ELEMENTWISE = {
    "kb-relu": "relu(x)",
    "kb-gelu": "gelu(x)",
    "kb-softsign": "x / (1 + abs(x))",
    "kb-hardtanh": "hardtanh(x)",  # min_val=-1., max_val=1. are hardtanh's defaults
    "kb-elu-alpha-init": "elu(x)",  # alpha=1.0 from get_init_inputs is elu's default
    "kb-selu": "selu(x)",
    "kb-swish": "x * sigmoid(x)",
    "kb-softplus": "softplus(x)",
    "kb-leaky-relu-slope-init": "leaky_relu(x)",
    "kb-sigmoid": "sigmoid(x)",
    "kb-tanh": "tanh(x)",
    "kb-mingpt-new-gelu": "0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x ** 3.0)))",
}
REDUCTIONS_NORMS_MATMUL = {
    "kb-sum-dim-keepdim": "sum(x, dim=1, keepdim=True)",
    "kb-softmax": "softmax(x, dim=1)",
    "fenced-kb-softmax-mixed": "log_softmax(x, dim=1)",
    "kb-layer-norm-module": "layer_norm(x, normalized_ndim=3, weight=ln_weight, bias=ln_bias)",
    "kb-rms-norm-by-hand": "x / sqrt(mean(x ** 2, dim=1, keepdim=True) + 1e-05)",
    "kb-matmul": "A @ B",
    "kb-linear-gelu": "gelu(linear(x, linear_weight, linear_bias))",
    "fenced-rmsnorm-zh": "weight * (hidden * rsqrt(mean(cast(hidden, dtype='float32') ** 2, dim=-1, keepdim=True) "
                         "+ 1e-06))",
}


def _reading(readings: dict[str, CodeReading | SpecQuestion], case_id: str) -> CodeReading:
    reading = readings[case_id]
    assert isinstance(reading, CodeReading), f"{case_id}: {reading}"
    return reading


@pytest.mark.bubblewrap(needed=False)  # reads the corpus file only
def test_every_expected_reading_names_a_code_case_of_the_corpus() -> None:
    """Check the tables above name code cases (CI reads a sample of them; a stale name would never be read)."""
    assert set(KERNELBENCH_ELEMENTWISE) | set(REDUCTIONS_NORMS_MATMUL) <= {c.id for c in CODE_CASES}


@pytest.mark.parametrize("case_id", [c for c in KERNELBENCH_ELEMENTWISE if c in READ_IDS])
def test_kernelbench_elementwise(case_id: str, corpus_readings: dict[str, Any]) -> None:
    """Check the KernelBench level-1 activations read into the right IR over x [16, 16384] (MinGPT: [2000, 2000])."""
    reading = _reading(corpus_readings, case_id)
    assert to_text(reading.expr) == KERNELBENCH_ELEMENTWISE[case_id]
    assert [i.name for i in reading.inputs] == ["x"] and reading.entry == "Model"
    assert reading.max_abs_error == 0.0


@pytest.mark.parametrize("case_id", [c for c in REDUCTIONS_NORMS_MATMUL if c in READ_IDS])
def test_reductions_norms_matmul(case_id: str, corpus_readings: dict[str, Any]) -> None:
    """Check reductions, softmax, norms (module and by hand) and matmul read into the right IR."""
    assert to_text(_reading(corpus_readings, case_id).expr) == REDUCTIONS_NORMS_MATMUL[case_id]


@pytest.mark.parametrize("case", READ_CASES, ids=lambda c: c.id)
def test_corpus_code_spec(case: Case, corpus_readings: dict[str, Any]) -> None:
    """Check the reading's arguments are the corpus inputs and its IR computes the corpus reference."""
    reading = corpus_readings[case.id]
    if case.id in NEEDS_OP and all(registry.resolve(op) is None for op in NEEDS_OP[case.id][1]):
        assert isinstance(reading, SpecQuestion) and NEEDS_OP[case.id][0] in reading.question
        return
    assert isinstance(reading, CodeReading), f"{case.id}: {reading}"
    assert [(i.name, list(i.shape), i.dtype) for i in reading.arguments] == [
        (i.name, i.shapes[0], i.dtypes[0]) for i in case.inputs]
    for seed in (0, 1):
        inputs = make_inputs(case, shrink_shapes(case), seed)
        expected = reference_output(case, inputs, seed)
        env: dict[str, Any] = {**inputs, **_module_tensors(case, reading, inputs, seed)}
        got = evaluate(reading.expr, env)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("case", READ_REFUSALS, ids=lambda c: c.id)
def test_corpus_code_refusal(case: Case, corpus_readings: dict[str, Any]) -> None:
    """Check code the corpus refuses (no shapes anywhere) is a question that mentions what is missing."""
    reading = corpus_readings[case.id]
    assert isinstance(reading, SpecQuestion), f"{case.id}: read as {reading}"
    for word in case.must_mention:
        assert word in str(reading).lower()


def _module_tensors(case: Case, reading: CodeReading, inputs: dict[str, torch.Tensor],
                    seed: int) -> dict[str, torch.Tensor]:
    """Build the corpus's Model as reference_output does (same seed, shrunk sizes) and take its tensors by path."""
    if not reading.parameters:
        return {}
    scope: dict[str, Any] = {"torch": torch, "nn": nn, "F": F, "math": math, "__name__": "corpus_case"}
    exec(compile(code_of(case), f"<corpus:{case.id}>", "exec"), scope)  # the corpus's own code
    dims = _dim_map(case, {name: list(t.shape) for name, t in inputs.items()})
    for name, value in list(scope.items()):
        if type(value) is int and value in dims:
            scope[name] = dims[value]
    init = scope["get_init_inputs"]() if "get_init_inputs" in scope else []
    torch.manual_seed(seed)
    model = scope["Model"](*init).to(torch.float64).eval()
    return {name: functools.reduce(getattr, path.split("."), model) for name, path in reading.parameters}
