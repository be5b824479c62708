"""English free-text requests parse into the right elementwise OpSpec."""

from __future__ import annotations

import pytest
from reader_helpers import inputs_of, same_formula

from agent.reader import read_spec
from agent.spec import DEFAULT_TOLERANCES


def test_relu_on_named_tensor() -> None:
    spec = read_spec("ReLU on a float32 tensor x of shape [1000, 1000]")
    assert spec.name == "relu"
    assert same_formula(spec, "relu(x)")
    assert inputs_of(spec) == [("x", [[1000, 1000]], ["float32"])]
    assert spec.output == "out"
    assert spec.device == "auto"
    assert spec.tolerances == DEFAULT_TOLERANCES


def test_fused_bias_add_gelu_gives_bias_the_dtype_of_x() -> None:
    spec = read_spec("fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]")
    assert spec.name == "bias_add_gelu"
    assert same_formula(spec, "gelu(x + bias)")
    assert inputs_of(spec) == [("x", [[8192, 4096]], ["float16"]), ("bias", [[4096]], ["float16"])]


def test_formula_written_first_with_shared_shape() -> None:
    spec = read_spec("silu(gate) * up, gate and up [4096, 11008] bf16")
    assert same_formula(spec, "silu(gate) * up")
    assert inputs_of(spec) == [("gate", [[4096, 11008]], ["bfloat16"]), ("up", [[4096, 11008]], ["bfloat16"])]


def test_swiglu_label_with_explicit_formula() -> None:
    spec = read_spec("SwiGLU: out = silu(gate) * up, gate [4096, 11008] bf16, up [4096, 11008] bf16")
    assert spec.name == "swiglu"
    assert same_formula(spec, "silu(gate) * up")
    assert [t.name for t in spec.inputs] == ["gate", "up"]


def test_swiglu_phrase_uses_gate_and_up() -> None:
    spec = read_spec("SwiGLU on up and gate, both [1024, 2816] fp16")
    assert spec.name == "swiglu"
    assert same_formula(spec, "silu(gate) * up")


def test_scalar_parameter_from_with_clause() -> None:
    spec = read_spec(
        "y = residual + alpha * y_in with alpha = 0.5, residual and y_in float16 [2048, 1024]"
    )
    assert same_formula(spec, "residual + alpha * y_in")
    assert inputs_of(spec) == [
        ("residual", [[2048, 1024]], ["float16"]), ("y_in", [[2048, 1024]], ["float16"])]
    assert [(p.name, p.value) for p in spec.params] == [("alpha", 0.5)]
    assert spec.output == "y"


def test_per_channel_indexing_aligns_to_channel_dim() -> None:
    spec = read_spec("x * scale[c] + shift[c] for x NCHW [8, 64, 56, 56] fp32, scale and shift [64]")
    assert same_formula(spec, "x * scale[:, None, None] + shift[:, None, None]")  # per channel (dim 1)
    assert inputs_of(spec)[0] == ("x", [[8, 64, 56, 56]], ["float32"])
    assert spec.output_shape(spec.shape_cases()[0]) == [8, 64, 56, 56]


def test_per_channel_wording() -> None:
    spec = read_spec(
        "per-channel scale and shift of x NCHW [8, 64, 56, 56] fp32, scale and shift [64]")
    assert same_formula(spec, "x * scale[:, None, None] + shift[:, None, None]")


def test_trailing_bias_without_per_channel_cue_keeps_default_alignment() -> None:
    spec = read_spec("bias add: x [8, 64, 56, 56] fp32, bias [56]")
    assert same_formula(spec, "x + bias")


def test_leaky_relu_slope_and_tuple_shape() -> None:
    spec = read_spec("leaky relu with negative slope 0.2 on x (4096, 4096) bf16")
    assert spec.name == "leaky_relu"
    assert same_formula(spec, "leaky_relu(x, negative_slope=0.2)")
    assert inputs_of(spec) == [("x", [[4096, 4096]], ["bfloat16"])]


def test_clamp_range_is_not_a_shape() -> None:
    spec = read_spec("clamp x to [-2, 2], x fp32 [333, 777]")
    assert spec.name == "clamp"
    assert same_formula(spec, "clamp(x, min=-2.0, max=2.0)")
    assert inputs_of(spec) == [("x", [[333, 777]], ["float32"])]


@pytest.mark.parametrize(
    ("text", "formula", "shape", "dtype"),
    [
        ("hardswish on x [4096, 4096] fp16", "hardswish(x)", [4096, 4096], "float16"),
        ("softplus of x, shape 1000x1000, f32", "softplus(x)", [1000, 1000], "float32"),
        ("gelu tanh approximation on x 512×768 bf16", "gelu_tanh(x)", [512, 768], "bfloat16"),
        ("tanh-approximated GELU of x [64, 64] half", "gelu_tanh(x)", [64, 64], "float16"),
        ("sigmoid of x (10, 20) float", "sigmoid(x)", [10, 20], "float32"),
        ("exp of x 128 x 256 float16", "exp(x)", [128, 256], "float16"),
        ("rsqrt of x [64, 64] bfloat16", "rsqrt(x)", [64, 64], "bfloat16"),
        ("reciprocal square root of x [32] fp32", "rsqrt(x)", [32], "float32"),
        ("relu6 on x [7, 9] fp16", "relu6(x)", [7, 9], "float16"),
    ],
)
def test_unary_phrases(text: str, formula: str, shape: list[int], dtype: str) -> None:
    spec = read_spec(text)
    assert same_formula(spec, formula)
    assert inputs_of(spec) == [("x", [shape], [dtype])]


def test_unnamed_shape_becomes_x_and_dtype_defaults_to_float32() -> None:
    spec = read_spec("Apply sigmoid to a tensor of shape [10, 10]")
    assert inputs_of(spec) == [("x", [[10, 10]], ["float32"])]


def test_explicit_formula_wins_over_phrases() -> None:
    spec = read_spec("GELU (sigmoid approximation): out = x * sigmoid(1.702 * x), x [10, 10] fp16")
    assert same_formula(spec, "x * sigmoid(1.702 * x)")


def test_binary_phrase_combines_both_inputs() -> None:
    spec = read_spec("elementwise maximum of x and y, x [16, 32] fp32, y [32]")
    assert same_formula(spec, "maximum(x, y)")
    assert inputs_of(spec) == [("x", [[16, 32]], ["float32"]), ("y", [[32]], ["float32"])]


def test_context_words_are_not_mistaken_for_reductions() -> None:
    spec = read_spec("fused bias add + gelu to reduce memory traffic, x [64, 64] fp16, bias [64]")
    assert same_formula(spec, "gelu(x + bias)")


def test_input_named_like_a_reduction_is_still_elementwise() -> None:
    spec = read_spec("out = (x - running_mean) * rstd, x [8, 64] fp32, running_mean and rstd [64]")
    assert [t.name for t in spec.inputs] == ["x", "running_mean", "rstd"]


@pytest.mark.parametrize(("text", "formula"), [
    ("relu first, then add bias: x [64, 64] fp32, bias [64] fp32", "relu(x) + bias"),
    ("add bias then relu: x [64, 64] fp32, bias [64] fp32", "relu(x + bias)"),
])
def test_a_step_before_a_colon_is_not_the_name_of_the_shape_after_it(text: str, formula: str) -> None:
    # "add bias: x [64, 64]" gave bias x's shape too, and the reading asked which of its two shapes it had
    spec = read_spec(text)
    assert same_formula(spec, formula)
    assert inputs_of(spec) == [("x", [[64, 64]], ["float32"]), ("bias", [[64]], ["float32"])]


def test_a_name_before_a_colon_still_takes_the_description_after_it() -> None:
    spec = read_spec("softmax over the last dim of logits, logits: raw scores [64, 1000] fp32")
    assert inputs_of(spec) == [("logits", [[64, 1000]], ["float32"])]


def test_names_that_are_operator_words_share_a_shape_after_are() -> None:
    # `shift` is also an operator's name: `shift are [256]` was not a declaration, and the reading asked
    spec = read_spec("out = x * scale + shift, x [32, 256] fp16, scale and shift are [256]")
    assert same_formula(spec, "x * scale + shift")
    assert inputs_of(spec) == [("x", [[32, 256]], ["float16"]), ("scale", [[256]], ["float16"]),
                               ("shift", [[256]], ["float16"])]
