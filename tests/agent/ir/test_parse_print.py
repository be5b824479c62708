"""Formulas in math notation, PyTorch spellings and the IR's own text read into one tree, printed back the same."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from agent.ir import registry
from agent.ir.evaluate import evaluate
from agent.ir.expr import Node, names
from agent.ir.parse import ParseError, parse_text
from agent.ir.printer import to_statements, to_text, to_torch
from agent.ir.types import IRError


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("x * sigmoid(1.702x)", lambda x: x * torch.sigmoid(1.702 * x)),
        ("0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))", lambda x: F.gelu(x, approximate="tanh")),
        ("x·σ(x)", F.silu),
        ("x / (1 + |x|)", F.softsign),
        ("torch.nn.functional.hardsigmoid(x)", F.hardsigmoid),
        ("F.leaky_relu(x, 0.2)", lambda x: F.leaky_relu(x, 0.2)),
        ("max(x, 0)", torch.relu),
        ("x if x > 0 else 0.01 * x", lambda x: torch.where(x > 0, x, 0.01 * x)),
        ("x.pow(2).mean(-1, keepdim=True)", lambda x: (x * x).mean(-1, keepdim=True)),
        ("torch.max(x, 1)", lambda x: x.amax(1)),
        ("x.max(dim=-1).values", lambda x: x.amax(-1)),
        ("softmax(x)", lambda x: torch.softmax(x, -1)),  # math notation: over the last dim
        ("F.layer_norm(x, (7,))", lambda x: F.layer_norm(x, (7,))),
        ("x @ x^T", lambda x: x @ x.T),
    ],
)
def test_spellings_read_into_the_ir_and_compute_what_they_say(formula: str, expected) -> None:
    expr = parse_text(formula)
    x = torch.randn(5, 7, dtype=torch.float64)
    torch.testing.assert_close(evaluate(expr, {"x": x}), expected(x))
    assert parse_text(to_text(expr), math_notation=False) == expr  # the canonical text reads back the same tree


def test_defaults_are_dropped_so_equal_calls_are_equal_trees() -> None:
    assert parse_text("leaky_relu(x)") == parse_text("F.leaky_relu(x, negative_slope=0.01)")
    assert parse_text("gelu(x)") == parse_text("gelu(x, approximate='none')")


def test_calls_on_numbers_fold_and_math_constants_are_known() -> None:
    expr = parse_text("x * sqrt(2 / pi) + math.e")
    assert repr(math.sqrt(2 / math.pi)) in to_torch(expr) and names(expr) == ["x"]


def test_printing_names_operands_a_template_uses_twice() -> None:
    lines = to_statements(parse_text("F.layer_norm(x + r, (8,))"), "out")
    assert lines[0] == "t0 = x + r" and lines[-1].startswith("out = F.layer_norm(t0, t0.shape[-1:]")


@pytest.mark.parametrize(("bad", "why"), [
    ("frobnicate(x)", "not an operator"), ("x[", "cannot read"), ("softmax(x, axis=-1, foo=1)", "no argument 'foo'"),
    ("gelu(x, approximate='fast')", "must be one of"), ("x // y", "unsupported operator"),
])
def test_formulas_the_ir_cannot_read_say_why(bad: str, why: str) -> None:
    with pytest.raises(IRError, match=why):
        parse_text(bad)
    assert issubclass(ParseError, IRError)


def test_every_registered_op_has_a_torch_spelling_that_runs_on_meta_tensors() -> None:
    for op in registry.all_ops():
        assert op.torch and op.family, op.name
        assert isinstance(op.signature, tuple) and op.operands or op.name == "cat", op.name
    assert isinstance(parse_text("cat([a, b], dim=0)"), Node)


@pytest.mark.parametrize("ir", ["where((x > 0) | (y > 0) | (z > 0), x, y)", "e * x + 1", "abs(x) * 2 ** y"])
def test_a_spec_reads_its_stored_formula_back_unchanged(ir: str) -> None:
    from agent.spec import OpSpec

    expr = parse_text(ir, math_notation=False, euler=False)
    inputs = sorted(names(expr))
    spec = OpSpec(name="op", category="elementwise", formula=to_text(expr),
                  inputs=[{"name": n, "shapes": [[4, 4]], "dtypes": ["float32"]} for n in inputs])
    assert spec.expr == expr  # `|` stays `or`, `e` stays a name


def test_a_layer_norm_over_two_dims_reads_back_from_its_printed_form() -> None:
    # printed as `normalized_ndim=2, normalized_shape=(128, 1024)`: read back, that was "got normalized_ndim twice"
    expr = parse_text("layer_norm(x, (128, 1024))")
    assert parse_text(to_text(expr)) == expr
    with pytest.raises(IRError, match="twice"):
        parse_text("layer_norm(x, normalized_ndim=3, normalized_shape=(128, 1024))")


@pytest.mark.parametrize(("ir", "torch_call"), [
    ("flip(x, dims=1)", "torch.flip(x, dims=(1,))"),  # an int was printed as is, and torch.flip raised
    ("reshape(x, 12)", "torch.reshape(x, shape=(12,))"),
])
def test_a_movement_op_given_one_int_prints_a_tuple_torch_takes(ir: str, torch_call: str) -> None:
    expr = parse_text(ir)
    assert to_statements(expr, "out") == [f"out = {torch_call}"]
    assert evaluate(expr, {"x": torch.arange(12.0).reshape(3, 4) if "flip" in ir else torch.arange(12.0)}).shape
