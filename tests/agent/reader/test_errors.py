"""Requests the offline parser must refuse, with a message saying what it understood."""

from __future__ import annotations

import pytest
from reader_helpers import same_formula

from agent.reader import read_spec
from agent.spec import SpecError


def _error(text: str) -> str:
    with pytest.raises(SpecError) as info:
        read_spec(text)
    return str(info.value)


def test_no_shape_names_op_input_and_dtype() -> None:
    message = _error("ReLU on a float32 tensor x")
    assert "no input shape" in message
    assert "relu" in message and "x" in message and "float32" in message


def test_unsupported_dtype_lists_supported_ones() -> None:
    message = _error("relu on x [10,10] int8")
    assert "int8" in message
    assert "float32, float16, bfloat16" in message


def test_float64_is_refused() -> None:
    assert "float64" in _error("out = relu(x) for x [16, 16] float64")


def test_shapes_that_cannot_broadcast() -> None:
    message = _error("x [3, 4] + y [5]")
    assert "cannot broadcast" in message
    assert "x [3, 4]" in message and "y [5]" in message
    assert "validation error" not in message.lower() and "pydantic" not in message.lower()


@pytest.mark.parametrize(
    ("text", "family", "expected"),
    [
        ("softmax over the last dim of x [4096, 1024] fp16", "softmax", "torch.softmax(x, dim=-1)"),
        ("inclusive prefix sum of x [1024] fp32", "scan", "torch.cumsum(x, dim=-1)"),
        ("matmul of a [128,64] and b [64,32]", "matmul", "a @ b"),
        ("layer norm of x [8, 768] fp32 with weight and bias [768]", "norm",
         "F.layer_norm(x, x.shape[-1:], weight, bias)"),
        ("对 x [1024, 1024] 沿最后一维求和", "reduction", "x.sum(dim=-1)"),
    ],
)
def test_other_families_are_read_into_the_ir(text: str, family: str, expected: str) -> None:
    spec = read_spec(text)
    assert spec.category == family
    assert same_formula(spec, expected)


def test_rms_norm_task_whose_formula_reduces_everything_is_a_question() -> None:
    text = (
        "Target device: CUDA\n\n## Task: rms_norm\n\n- Operator type: Reduction + Pointwise\n"
        "- Description: y = x * rsqrt(mean(x^2) + eps) * weight, eps = 1e-5\n"
        "- Inputs:\n  - x: Tensor [rows, 2048], rows in {64, 128}, dtype bf16\n"
        "  - weight: Tensor [2048], dtype bf16\n"
    )
    message = _error(text)  # mean(x^2) without an axis averages every element: not the rms_norm the title names
    assert "rms_norm" in message and "mean(x^2)" in message and "which one" in message


@pytest.mark.parametrize("text", ["", "   \n  ", "asdf qwer zxcv", "请帮我优化一下"])
def test_empty_or_gibberish(text: str) -> None:
    message = _error(text)
    assert "relu" in message or "shape" in message


def test_formula_input_without_shape() -> None:
    message = _error("out = x + y, x [10, 10] fp32")
    assert "y" in message and "no shape" in message and "x [10, 10]" in message


def test_unknown_function_in_formula() -> None:
    message = _error("out = frobnicate(x), x [10, 10]")
    assert "frobnicate" in message and "x [10, 10]" in message


def test_symbolic_dim_without_value() -> None:
    assert "batch" in _error("relu on x [batch, 1024] fp16")


def test_two_unary_ops_without_order_is_not_guessed() -> None:
    message = _error("relu and sigmoid of x [10, 10]")
    assert "relu" in message and "sigmoid" in message and "formula" in message


def test_several_inputs_without_a_combining_op() -> None:
    assert "formula" in _error("gelu of x [10, 10] and y [10, 10]")


def test_formula_plus_unapplied_phrase_is_not_guessed() -> None:
    assert "relu" in _error("apply relu to x + y, x [4, 4], y [4, 4]")


def test_contradicting_shapes_for_one_input() -> None:
    assert "two different shapes" in _error("relu on x [4, 4]. x [8, 8] fp16")


@pytest.mark.parametrize(("text", "words"), [
    ("huber loss of x and y, both float32 [2048, 2**56]", ["x", "more than any device holds"]),
    ("out = x[:, None] * y[None, :], x [2**20] fp32, y [2**30] fp32", ["output would be", "more than any device"]),
    ("relu of x [0, 5] fp32", ["size of 0", "at least 1"]),
])
def test_sizes_no_device_holds_or_zero_are_questions(text: str, words: list[str]) -> None:
    with pytest.raises(SpecError) as caught:
        read_spec(text)
    assert all(w in str(caught.value) for w in words), str(caught.value)


@pytest.mark.parametrize(("text", "name", "example"), [
    ("conv2d [3, 3] x [8, 64, 56, 56] w [64, 64, 3, 3] fp16", "conv2d", "'conv2d of x [3, 3]'"),
    ("softmax [4096, 1024] fp16", "softmax", "'softmax of x [4096, 1024]'"),
])
def test_an_operation_read_as_an_input_name_is_asked_about(text: str, name: str, example: str) -> None:
    message = _error(text)
    assert message.startswith(f"no operation was recognised: the shape right after '{name}' makes it an input's "
                              f"name; if {name} is the operation, give each input its own name"), message
    assert f"For example: {example}" in message


def test_inputs_named_like_operations_still_read_beside_an_operation() -> None:
    spec = read_spec("batchnorm of x [8, 64] with mean [64] and var [64]")
    assert spec.name == "batch_norm" and [t.name for t in spec.inputs] == ["x", "mean", "var"]
