"""Shapes whose dims are named apart from their sizes, and axes named by those names, each with every name used."""

from __future__ import annotations

import pytest
from reader_helpers import inputs_of, same_formula

from agent.reader import read_spec
from agent.reader.shape_names import name_shape_dims


@pytest.mark.parametrize(("text", "formula", "inputs"), [
    ("relu of x of shape (N, C, H, W) = (32, 96, 56, 56), fp16", "relu(x)", [("x", [[32, 96, 56, 56]], ["float16"])]),
    ("layer norm over the last dim of x (N, C, H, W) = (2, 3, 5, 7) fp32", "layer_norm(x)",
     [("x", [[2, 3, 5, 7]], ["float32"])]),
    ("softmax over seq of q [2, 8, 128, 64] fp16 (batch, heads, seq, head_dim)", "softmax(q, dim=2)",
     [("q", [[2, 8, 128, 64]], ["float16"])]),
    ("softmax over heads of q [2, 8, 128, 64] (batch, heads, seq, head_dim) bf16", "softmax(q, dim=1)",
     [("q", [[2, 8, 128, 64]], ["bfloat16"])]),
    ("relu of x [bs*seq=4096, in=1024] fp16", "relu(x)", [("x", [[4096, 1024]], ["float16"])]),
    ("sum over hidden of x [bs*seq=64, hidden=32] fp16", "sum(x, dim=1)", [("x", [[64, 32]], ["float16"])]),
])
def test_named_dims_give_the_shape_and_the_axes(text: str, formula: str, inputs: list) -> None:
    spec = read_spec(text)
    assert same_formula(spec, formula), spec.formula
    assert inputs_of(spec) == inputs


@pytest.mark.parametrize(("text", "dims"), [
    ("mean over H and W of x [N=4, C=6, H=5, W=7] fp32", "(2, 3)"),  # was dim=2: W was dropped, and verified
    ("mean over H, W of x [N=4, C=6, H=5, W=7] fp32", "(2, 3)"),
    ("mean over H and W of x with (N, C, H, W) = (4, 6, 5, 7), fp32", "(2, 3)"),
    ("sum over seq and hidden of x [bs=8, seq=20, hidden=6] fp16", "(1, 2)"),
])
def test_every_axis_of_a_named_list_is_reduced(text: str, dims: str) -> None:
    assert same_formula(read_spec(text), f"{'mean' if 'mean' in text else 'sum'}(x, dim={dims})")


@pytest.mark.parametrize("text", [
    "x [4, 5] of (a, b), relu",  # a word between that is no dtype: no pairing assumed
    "x [4, 5, 6] (a, b), relu",  # three sizes, two names
    "(a, a) = (4, 5)",  # a name twice
])
def test_names_and_sizes_that_do_not_pair_are_left_as_written(text: str) -> None:
    assert name_shape_dims(text) == text
