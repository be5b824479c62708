"""A module constructor written in prose reads as the functional call it computes, bound by torch's signature."""

from __future__ import annotations

import pytest
import torch
from reader_helpers import evaluate

from agent.reader import read_spec
from agent.reader.errors import SpecQuestion
from agent.reader.module_spellings import functional_modules

X = torch.randn(4, 6, 8, dtype=torch.float64)


@pytest.mark.parametrize(("text", "module"), [
    ("nn.LayerNorm(8, eps=1e-12) on x [4, 6, 8] fp32", torch.nn.LayerNorm(8, eps=1e-12)),
    ("y = nn.LayerNorm(8, eps=1e-12)(x), x [4, 6, 8] fp32", torch.nn.LayerNorm(8, eps=1e-12)),
    ("nn.LayerNorm([6, 8]) applied to x [4, 6, 8] bf16", torch.nn.LayerNorm([6, 8])),
    ("nn.RMSNorm(8, eps=1e-6) on x [4, 6, 8] bf16", torch.nn.RMSNorm(8, eps=1e-6)),
    ("nn.LeakyReLU(0.2) on x [4, 6, 8] fp32", torch.nn.LeakyReLU(0.2)),
    ("torch.nn.Hardtanh(-2, 2) of x [4, 6, 8] fp16", torch.nn.Hardtanh(-2, 2)),
    ("nn.Softplus(2, 10) on x [4, 6, 8] fp32", torch.nn.Softplus(2, 10)),
    ("nn.Softmax(dim=1) on x [4, 6, 8] fp32", torch.nn.Softmax(dim=1)),
    ("nn.GELU(approximate='tanh') on x [4, 6, 8] fp16", torch.nn.GELU(approximate="tanh")),
    ("nn.ELU(alpha=0.5, inplace=True) on x [4, 6, 8] fp32", torch.nn.ELU(alpha=0.5)),
])
def test_a_module_named_in_prose_computes_what_the_module_computes(text: str, module: torch.nn.Module) -> None:
    spec = read_spec(text)
    torch.testing.assert_close(evaluate(spec, x=X), module.double()(X))


def test_a_normalized_shape_that_is_not_the_input_s_last_dims_is_asked_about() -> None:
    with pytest.raises(SpecQuestion, match="does not match the last dims"):
        read_spec("nn.LayerNorm(768) on x [8, 128, 1024] fp32")


@pytest.mark.parametrize("text", [
    "nn.LayerNorm(hidden) on x [8, 1024]",  # not a constant
    "nn.LayerNorm(1024, 1e-5, True, True, None, None, 7) on x",  # more arguments than the signature has
    "nn.Softmax() on x [8, 64]",  # torch picks the axis from the rank
    "nn.LayerNorm(1024)",  # applied to nothing named
    "nn.Conv2d(3, 8, 3) on x",  # no functional form here
])
def test_what_cannot_be_bound_is_left_as_written(text: str) -> None:
    assert functional_modules(text) == text


@pytest.mark.parametrize(("text", "example"), [
    ("nn.Softmax() on x [4, 6, 8] fp32", "nn.Softmax(dim=-1)"),
    ("out = F.softmax(x), x [4, 6, 8] fp32", "F.softmax(x, dim=-1)"),
    ("out = torch.cumsum(x), x [4, 6, 8] fp32", "torch.cumsum(x, dim=-1)"),
])
def test_torch_code_that_names_no_dim_is_asked_about(text: str, example: str) -> None:
    # torch's F.softmax picks dim 0 of a 3-D input; reading the last dim was a kernel for another op
    with pytest.raises(SpecQuestion, match="gives no dim") as asked:
        spec = read_spec(text)
        raise AssertionError(f"read as {spec.formula}")
    assert example in str(asked.value)


def test_softmax_in_math_notation_is_over_the_last_dim() -> None:
    assert read_spec("out = softmax(x), x [4, 6, 8] fp32").formula == "softmax(x, dim=-1)"
