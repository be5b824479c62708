"""Formula parsing and rendering: what the generated kernel and baseline will compute."""

import math

import pytest
import torch
import torch.nn.functional as F  # noqa: F401  (used by eval of rendered code)

from agent.expr import FormulaError, flops, names, parse_formula, positive_names, to_formula, to_torch


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("gelu(x + bias)", lambda x, bias: F.gelu(x + bias)),
        ("silu(gate) * up", lambda gate, up: F.silu(gate) * up),
        ("0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))", lambda x: F.gelu(x, approximate="tanh")),
        ("leaky_relu(x, 0.2)", lambda x: torch.where(x >= 0, x, 0.2 * x)),
        ("max(x, 0)", lambda x: x.clamp(min=0)),
        ("x ** -2", lambda x: 1 / (x * x)),
    ],
)
def test_torch_rendering_computes_the_formula(formula: str, expected) -> None:
    expr = parse_formula(formula)
    args = {n: torch.rand(7, 5, dtype=torch.float64) + 0.5 for n in names(expr)}
    got = eval(to_torch(expr), {"torch": torch, "F": F}, dict(args))  # noqa: S307
    torch.testing.assert_close(got, expected(**args))


def test_round_trip_through_canonical_formula() -> None:
    expr = parse_formula("hardtanh(x * scale[c], -2, 2) + shift[c]")
    assert parse_formula(to_formula(expr)) == expr
    assert names(expr) == ["x", "scale", "shift"]


def test_numbers_are_folded_and_domains_found() -> None:
    expr = parse_formula("log(x) / y + sqrt(2 / pi) * z")
    assert positive_names(expr) == {"x", "y"}
    assert repr(math.sqrt(2 / math.pi)) in to_torch(expr)  # folded, not torch.sqrt of a float
    assert flops(expr) > 0


@pytest.mark.parametrize("bad", ["softmax(x)", "x @ w", "x ** y", "cumsum(x)", "x[", "max(1, 2)"])
def test_unknown_or_unsupported_formulas_are_refused(bad: str) -> None:
    with pytest.raises(FormulaError):
        parse_formula(bad)
