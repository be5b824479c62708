"""Inverse and hyperbolic trigonometry, sinc, trunc and frac: read from the words people use, written offline.

Each kernel runs in the Triton interpreter over a dense sweep and the special values (NaN, ±inf, ±0), against
torch in float64; special functions without an offline spelling (lgamma, digamma, erfinv, i0) read and say so.
"""

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.reader import read_spec
from tests.agent.generators.kernels import load_triton_module

SWEEP = torch.cat([torch.linspace(-30, 30, 2001), torch.logspace(-8, 8, 97), -torch.logspace(-8, 8, 97)])
SPECIAL = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.0, -0.0])

CASES: list[tuple[str, str, Callable[[torch.Tensor], torch.Tensor]]] = [
    ("the arctangent of x, x [2195] fp32", "atan", torch.atan),
    ("hyperbolic sine of x [2195] fp32", "sinh", torch.sinh),
    ("hyperbolic cosine of x [2195] fp32", "cosh", torch.cosh),
    ("inverse hyperbolic sine of x [2195] fp32", "asinh", torch.asinh),
    ("sinc of x [2195] fp32", "sinc", torch.sinc),
    ("truncate x [2195] fp32", "trunc", torch.trunc),
    ("the fractional part of x [2195] fp32", "frac", torch.frac),
]


@pytest.mark.parametrize(("text", "op", "reference"), CASES, ids=[c[1] for c in CASES])
def test_the_kernel_matches_torch_over_a_sweep_and_the_special_values(
    text: str, op: str, reference: Callable[[torch.Tensor], torch.Tensor], tmp_path: Path,
) -> None:
    spec = read_spec(text)
    assert spec.formula == f"{op}(x)"
    module = load_triton_module(ElementwiseGenerator().generate(spec, LaunchConfig(block_size=512, num_warps=4)),
                                tmp_path)
    kernel = getattr(module, spec.name)
    with torch.no_grad():
        got = kernel(SWEEP.clone()).double()
        want = reference(SWEEP.double())
        finite = torch.isfinite(want) & (want.abs() < 1e30)
        torch.testing.assert_close(got[finite], want[finite], rtol=2e-6, atol=1e-6)
        torch.testing.assert_close(kernel(SPECIAL.clone()), reference(SPECIAL), equal_nan=True)


@pytest.mark.parametrize(("text", "formula"), [
    ("arcsine of x, x [1024] fp32", "asin(x)"),
    ("inverse cosine of x [1024] fp32", "acos(x)"),
    ("log of the absolute value of the gamma function of x, x [1024] fp32", "lgamma(x)"),
    ("digamma of x [1024] fp32", "digamma(x)"),
    ("the inverse error function of x [1024] fp32", "erfinv(x)"),
    ("logit of p, p [128] fp32", "logit(p)"),
])
def test_special_functions_read_into_their_own_op(text: str, formula: str) -> None:
    assert read_spec(text).formula == formula


def test_a_special_function_without_an_offline_spelling_is_refused_at_generation_by_name() -> None:
    spec = read_spec("digamma of x [1024] fp32")
    with pytest.raises(Exception, match="digamma"):
        ElementwiseGenerator().generate(spec, LaunchConfig(block_size=256, num_warps=4))
