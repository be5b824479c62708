"""A benchmark function that departs from its own text is named as such, and never hides a misreading."""

import torch
import torch.nn.functional as F

from kernelgen.suites.tritonbench.faults import REFERENCE_FAULTS, reference_fault


def test_only_a_wrong_reading_of_exactly_the_stated_ir_is_a_reference_fault() -> None:
    assert reference_fault("sub_gelu", "gelu(input - alpha * other)", "wrong") is not None
    assert reference_fault("sub_gelu", "tanh(gelu(input - alpha * other))", "wrong") is None  # a misreading
    assert reference_fault("sub_gelu", "gelu(input - alpha * other)", "right") is None
    assert reference_fault("torch.add", "input + other", "wrong") is None  # not a listed task


def test_the_listed_gelu_fault_is_real_the_benchmarks_formula_is_not_gelu() -> None:
    x = torch.linspace(-3, 3, 61, dtype=torch.float64)
    benchmarks = x * torch.erf(x / torch.sqrt(torch.tensor(2.0, dtype=torch.float64))) / 2.0  # as the three write it
    assert not torch.allclose(benchmarks, F.gelu(x), atol=1e-3)
    assert torch.allclose(x * (1 + torch.erf(x / 2 ** 0.5)) / 2, F.gelu(x))
    assert {"sub_gelu", "gelu_min", "min_gelu"} == set(REFERENCE_FAULTS)
