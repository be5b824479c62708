"""Shapes, dtypes, FLOPs and bytes of IR expressions, and the errors that name the node at fault."""

from __future__ import annotations

import re

import pytest

from agent.ir.count import flops_per_output, minimal_bytes, total_flops
from agent.ir.edges import edge_cases
from agent.ir.family import family_of
from agent.ir.infer import infer
from agent.ir.parse import parse_text
from agent.ir.types import IRError, ScalarType, TensorType


def _t(*shape: int, dtype: str = "float16") -> TensorType:
    return TensorType(dtype, shape)


def test_types_follow_pytorch_rules() -> None:
    assert infer(parse_text("gelu(x + b)"), {"x": _t(8, 64), "b": _t(64)}) == _t(8, 64)
    assert infer(parse_text("sum(x, dim=1)"), {"x": _t(4, 5, 6)}) == _t(4, 6)
    assert infer(parse_text("argmax(x, dim=-1)"), {"x": _t(4, 5)}) == _t(4, dtype="int64")
    assert infer(parse_text("x > 0"), {"x": _t(3)}) == _t(3, dtype="bool")
    assert infer(parse_text("cross_entropy(x, t)"), {"x": _t(8, 10, dtype="float32"),
                                                     "t": _t(8, dtype="int64")}) == _t(dtype="float32")
    assert infer(parse_text("sqrt(d)"), {"d": ScalarType(64.0)}) == ScalarType(8.0)


@pytest.mark.parametrize(("formula", "types", "says"), [
    ("x + y", {"x": _t(3, 4), "y": _t(5)}, "x + y cannot apply"),
    ("a @ b", {"a": _t(4, 8), "b": _t(7, 3)}, "a @ b cannot apply"),
    ("softmax(x, dim=3)", {"x": _t(4, 8)}, "dim=3 is out of range"),
    ("layer_norm(x, normalized_shape=(768,))", {"x": _t(4, 512)}, "does not match the last dims"),
    ("relu(y)", {"x": _t(4)}, "y is used but is neither"),
])
def test_errors_name_the_node_and_the_types(formula: str, types: dict, says: str) -> None:
    with pytest.raises(IRError, match=re.escape(says)):
        infer(parse_text(formula), types)


def test_flops_and_bytes_count_each_node_once() -> None:
    types = {"a": _t(64, 32, dtype="float32"), "b": _t(32, 16, dtype="float32")}
    assert total_flops(parse_text("a @ b"), types) == 2 * 64 * 16 * 32
    assert minimal_bytes(parse_text("a @ b"), types) == ((64 * 32 + 32 * 16) * 4, 64 * 16 * 4)
    assert flops_per_output(parse_text("relu(x) + relu(x)"), {"x": _t(10)}) == 2  # the shared relu counts once


def test_edge_cases_keep_the_structure_and_add_ones_and_primes() -> None:
    expr = parse_text("a @ b + c")
    case = {"a": [64, 32], "b": [32, 16], "c": [16]}
    found = edge_cases(expr, case, {"a": "float32", "b": "float32", "c": "float32"}, {})
    assert {"a": [1, 1], "b": [1, 1], "c": [1]} in found
    assert all(s["a"][1] == s["b"][0] and s["b"][1] == s["c"][0] for s in found)  # contractions still line up


def test_the_family_is_the_most_demanding_op() -> None:
    assert family_of(parse_text("gelu(linear(x, w, b))")) == "matmul"
    assert family_of(parse_text("softmax(x, dim=-1) * 2")) == "softmax"
    assert family_of(parse_text("relu(x)")) == "elementwise"
