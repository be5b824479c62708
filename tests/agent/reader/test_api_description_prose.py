"""Prose the way API descriptions and benchmark task cards are written (a chain said, then said again; a signature
with defaults and type annotations; purpose sentences; an `Inputs:` line): each a class of text, read exactly or
asked about, never guessed."""

from __future__ import annotations

import pytest
from reader_helpers import same_formula

from agent.reader import read_spec
from agent.reader.errors import SpecQuestion
from agent.reader.signature_docs import (
    api_prose_left_out,
    blank_annotations,
    blank_examples,
    blank_purpose,
    signature_defaults,
)

LINEAR = "Inputs: x float32 [6, 8], weight float32 [16, 8], bias float32 [16]"
CONV = "Inputs: image float32 [2, 3, 9, 9], weight float32 [4, 3, 3, 3]"


# --- a later sentence that names the chain's steps again is the same chain -------------------------------------

@pytest.mark.parametrize(("text", "formula"), [
    ("Applies a linear transformation to x followed by the ELU activation. In short: a linear transformation, "
     "then ELU.\n" + LINEAR, "elu(linear(x, weight, bias))"),
    ("Applies a linear transformation to x followed by the ELU activation. The non-linearity comes after a linear "
     "transformation.\n" + LINEAR, "elu(linear(x, weight, bias))"),
    ("Performs a linear map of x and then applies sigmoid to the result. Overall the result is the linear map "
     "followed by sigmoid.\n" + LINEAR, "sigmoid(linear(x, weight, bias))"),
    ("Takes the exponential of every element of x, then the square root of the exponentiated values. The output is "
     "the exponential followed by the square root.\nInputs: x float32 [5, 7]", "sqrt(exp(x))"),
])
def test_a_sentence_that_restates_the_chain_adds_no_step(text: str, formula: str) -> None:
    assert read_spec(text).formula == formula


@pytest.mark.parametrize(("text", "formula"), [
    # the later sentence opens with a connector: a new step, even of an op applied before
    ("Apply exp to x, then relu. Then apply exp to the result.\nInputs: x float32 [5, 7]", "exp(relu(exp(x)))"),
    # it names an op the chain has not applied: a new step
    ("Apply exp to x, then relu. Multiply the result by 2.\nInputs: x float32 [5, 7]", "relu(exp(x)) * 2"),
])
def test_a_later_sentence_with_a_new_step_is_kept(text: str, formula: str) -> None:
    assert same_formula(read_spec(text), formula)


def test_a_restated_chain_said_twice_on_purpose_is_not_collapsed() -> None:
    spec = read_spec("Apply relu to x, then sigmoid. The relu followed by sigmoid is applied twice.\n"
                     "Inputs: x float32 [5, 7]")
    assert spec.formula != "sigmoid(relu(x))"


# --- a participle before "values/result/output" names an earlier step's result ---------------------------------

@pytest.mark.parametrize(("text", "formula"), [
    ("Computes the square root of each element of x, and then applies tanh to the square-rooted values.\n"
     "Inputs: x float32 [4, 6]", "tanh(sqrt(x))"),
    ("Applies relu to x, then sigmoid. The sigmoid output is then passed through relu.\nInputs: x float32 [4, 6]",
     "relu(sigmoid(relu(x)))"),
])
def test_the_result_named_by_its_step_is_no_new_step(text: str, formula: str) -> None:
    assert read_spec(text).formula == formula


# --- "followed by A and B" after a connector lists steps in order ----------------------------------------------

def test_operations_listed_after_a_connector_apply_in_order() -> None:
    spec = read_spec("Applies a linear layer to x, followed by layer normalization and SiLU activation.\n"
                     "Inputs: x float32 [6, 8], weight float32 [16, 8]")
    assert spec.formula == "silu(layer_norm(linear(x, weight)))"


def test_a_bias_two_listed_operations_could_take_is_asked() -> None:
    with pytest.raises(SpecQuestion, match="bias"):  # the linear layer's or the layer norm's?
        read_spec("Applies a linear layer to x, followed by layer normalization and SiLU activation.\n" + LINEAR)


def test_a_later_step_of_a_two_tensor_op_is_not_split() -> None:
    try:
        spec = read_spec("Apply exp to x, then add x and y.\nInputs: x float32 [5, 7], y float32 [5, 7]")
    except SpecQuestion:
        return
    assert same_formula(spec, "exp(x) + y")


# --- operands named for their operation (`conv_weight`, `bn_bias`) ---------------------------------------------

def test_prefixed_operand_names_go_to_their_operation() -> None:
    spec = read_spec("Applies a 2D convolution to x, followed by batch normalization and then ReLU.\n"
                     "Inputs: x float32 [2, 3, 9, 9], weight float32 [4, 3, 3, 3], running_mean float32 [4], "
                     "running_var float32 [4], bn_weight float32 [4], bn_bias float32 [4]")
    assert spec.formula == "relu(batch_norm(conv2d(x, weight), running_mean, running_var, bn_weight, bn_bias))"


def test_a_conv_prefixed_weight_is_the_convolutions() -> None:
    spec = read_spec("Applies a 2D convolution to x, then GELU.\n"
                     "Inputs: x float32 [2, 3, 9, 9], conv_weight float32 [4, 3, 3, 3]")
    assert spec.formula == "gelu(conv2d(x, conv_weight))"


# --- a layer norm of an image-like tensor says over which dims --------------------------------------------------

def test_layer_norm_of_a_4d_result_without_its_dims_is_asked() -> None:
    with pytest.raises(SpecQuestion, match="over which dims") as raised:
        read_spec("Applies a 2D convolution to the image, then layer normalization.\n" + CONV)
    assert "over dims (1, 2, 3)" in str(raised.value)


@pytest.mark.parametrize(("said", "ndim"), [("over dims (1, 2, 3)", 3), ("over dims (2, 3)", 2),
                                            ("over the last dim", 1)])
def test_layer_norm_of_a_4d_result_over_the_dims_said(said: str, ndim: int) -> None:
    spec = read_spec(f"Applies a 2D convolution to the image, then layer normalization {said}.\n" + CONV)
    assert f".shape[-{ndim}:]" in spec.reading.pytorch  # type: ignore[union-attr]


# --- words that are not the operation they contain --------------------------------------------------------------

def test_non_linear_is_no_linear_layer() -> None:
    spec = read_spec("Applies a 2D convolution to the image, followed by the Leaky ReLU activation. The "
                     "non-linear activation keeps small negative values.\n" + CONV)
    assert spec.formula == "leaky_relu(conv2d(image, weight))"


@pytest.mark.parametrize("sentence", [
    "This ensures the values are scaled between 0 and 1.",
    "This is useful for introducing non-linearity after the convolution.",
    "This combined operation is commonly used in image models.",
])
def test_a_purpose_sentence_names_no_step(sentence: str) -> None:
    spec = read_spec("Applies a 2D convolution to the image, then the sigmoid function. " + sentence + "\n" + CONV)
    assert spec.formula == "sigmoid(conv2d(image, weight))"


def test_a_purpose_sentence_that_names_an_operation_is_still_accounted() -> None:
    # the reader leaves the sentence out; the accounting pass still reads it, and asks
    with pytest.raises(SpecQuestion):
        read_spec("Apply exp to x. This ensures the result is then multiplied by 2.\nInputs: x float32 [4, 4]")
    blanked = blank_purpose("Apply exp. This ensures the result is small.")
    assert "ensures" not in blanked and blanked.startswith("Apply exp.")


@pytest.mark.parametrize(("clause", "formula"), [
    (", re-scaling them so that the elements lie in the range [0, 1] and sum to 1", "softmax(x, dim=1)"),
    (". The function can be computed in two ways depending on the 'dim' argument", "softmax(x, dim=1)"),
])
def test_what_a_step_achieves_or_an_option_would_change_is_no_step(clause: str, formula: str) -> None:
    spec = read_spec("Applies softmax to x along the specified dimension" + clause + ".\n"
                     "Wrapper Entry Information: def softmax(x, dim, dtype=None) -> Tensor\n"
                     "Inputs: x float32 [3, 5]\nParameters: dim = 1")
    assert spec.formula == formula


# --- signatures: annotations, defaults and argument prose -------------------------------------------------------

def test_annotations_are_blanked_and_defaults_kept() -> None:
    header = ("def f(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, "
              "stride: Union[int, Tuple[int, int]] = 1, mode: str = 'none') -> Tensor")
    blanked = blank_annotations(header)
    assert len(blanked) == len(header)
    assert " ".join(blanked.split()) == "def f(input , weight , bias = None, stride = 1, mode = 'none') -> Tensor"
    assert signature_defaults(header) == {"bias": "None", "stride": "1", "mode": "'none'"}


def test_a_typed_signature_s_defaults_are_no_stray_numbers() -> None:
    spec = read_spec("Applies a 2D convolution over the image with the given filters, followed by GELU.\n"
                     "Wrapper Entry Information: def conv_gelu(image: Tensor, weight: Tensor, bias: Optional[Tensor] "
                     "= None, stride: Union[int, Tuple[int, int]] = 1, padding: int = 0) -> Tensor\n" + CONV)
    assert spec.formula == "gelu(conv2d(image, weight))"


def test_a_usage_example_is_no_part_of_the_spec() -> None:
    example = "Example:\n    >>> x = torch.randn(4, 3, 32, 32)\n    >>> out = f(x)\n    torch.Size([4, 8, 32, 32])\n"
    assert blank_examples(example).strip() == ""
    spec = read_spec("Applies tanh to x element-wise.\n" + example + "Inputs: x float32 [5, 7]")
    assert spec.formula == "tanh(x)"


@pytest.mark.parametrize(("default", "formula"), [("None", "std(gelu(x))"), ("-1", "std(gelu(x), dim=-1)"),
                                                  ("0", "std(gelu(x), dim=0)")])
def test_a_reduction_over_the_specified_dim_takes_the_signature_s_default(default: str, formula: str) -> None:
    spec = read_spec("Applies GELU to x, then computes the standard deviation along the specified dimension.\n"
                     f"Wrapper Entry Information: def gelu_std(x, dim={default}, keepdim=False) -> Tensor\n"
                     "Inputs: x float32 [6, 10]")
    assert same_formula(spec, formula)


def test_two_reductions_and_one_signature_dim_are_asked() -> None:
    with pytest.raises(SpecQuestion, match="over which dim"):
        read_spec("Computes the sum of x along the specified dimension, followed by the standard deviation of the "
                  "summed values.\nWrapper Entry Information: def sum_std(x, dim=None) -> Tensor\n"
                  "Inputs: x float32 [6, 10]")


def test_a_sentence_about_one_argument_is_argument_docs() -> None:
    spec = read_spec("Computes the standard deviation of x over the specified dimensions. The dim argument can "
                     "name a single dimension or None to reduce over all of them. The correction parameter adjusts "
                     "for the difference between the sample size and the degrees of freedom, Bessel's correction by "
                     "default.\nWrapper Entry Information: def std(x, dim=None, *, correction=1) -> Tensor\n"
                     "Inputs: x float32 [6, 10]")
    assert same_formula(spec, "std(x)")


@pytest.mark.parametrize("condition", [
    "If keepdim is True, the output keeps the reduced dim with size 1.",
    "The output keeps the reduced dim with size 1 when keepdim is True.",
])
def test_what_a_flag_does_at_another_value_is_left_out(condition: str) -> None:
    spec = read_spec("Returns the mean of x over the given dimension dim. " + condition + "\n"
                     "Wrapper Entry Information: x (Tensor): the input. dim (int): the dim to reduce. "
                     "keepdim (bool): whether to keep it.\nInputs: x float32 [6, 10]\nParameters: dim = 0")
    assert spec.formula == "mean(x, dim=0)"


# --- the Inputs line, a structured part ------------------------------------------------------------------------

def test_each_item_of_an_inputs_line_is_a_name() -> None:
    text = "Returns the absolute value of A, element-wise.\nInputs: A float32 [4, 4]"
    spec = read_spec(text)
    assert spec.formula == "abs(A)"
    assert [t.name for t in spec.inputs] == ["A"]


def test_a_formula_that_defines_an_input_is_no_operator() -> None:
    with pytest.raises(SpecQuestion):
        read_spec("Solves A x = b where A is factored so that `A = L * L.T`.\n"
                  "Inputs: A float32 [2, 2], b float32 [2, 1]")


def test_symbol_shapes_beside_an_inputs_line_document_the_layout() -> None:
    spec = read_spec("Applies a 2D convolution over the image, then ReLU. The image has shape (batch, in_channels, "
                     "iH, iW) and the filters (out_channels, in_channels / groups, kH, kW).\n" + CONV)
    assert spec.formula == "relu(conv2d(image, weight))"


# --- phrases and formulas -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "formula"), [
    ("Computes the logarithm of the sum of exponentials of the elements of x along dim 1.\n"
     "Inputs: x float32 [4, 6]", "logsumexp(x, dim=1)"),
    ("Returns the natural logarithm of (1 + x).\nInputs: x float32 [4, 6]", "log(1 + x)"),
    ("Takes the square root of x, then the exponential. Defined as out_i = e^(sqrt(x_i)).\n"
     "Inputs: x float32 [4, 6]", "exp(sqrt(x))"),
    ("Applies softmax to x along dim 1 and then multiplies the softmaxed values by y.\n"
     "Inputs: x float32 [4, 6], y float32 [4, 6]", "softmax(x, dim=1) * y"),
])
def test_description_phrases(text: str, formula: str) -> None:
    assert same_formula(read_spec(text), formula)


def test_normalizes_is_accounted_for_by_a_batch_norm() -> None:
    spec = read_spec("Applies batch normalization over x across channels, followed by SiLU. The operation normalizes "
                     "x and then applies the SiLU activation.\nInputs: x float32 [3, 5], running_mean float32 [5], "
                     "running_var float32 [5]")
    assert spec.formula == "silu(batch_norm(x, running_mean, running_var))"


def test_api_prose_keeps_the_length() -> None:
    text = ("Applies exp. This is useful for things. The dim argument is ignored.\n"
            "def f(x: Tensor, dim: int = 0) -> Tensor\n>>> f(torch.ones(2))\n")
    assert len(api_prose_left_out(text)) == len(text)


# --- LaTeX of a Math line -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("latex", "plain"), [
    (r"out_{i} = \frac{1}{x_{i}}", "out_{i} = ((1) / (x_{i}))"),
    (r"y = \frac{\exp(x)}{\sqrt{x + 1}}", "y = ((exp(x)) / (sqrt(x + 1)))"),
    (r"y = \sin^{-1}(x) + cos^{-1}(x)", "y = asin(x) + acos(x)"),
])
def test_latex_fractions_roots_and_inverse_functions(latex: str, plain: str) -> None:
    from agent.reader.prose_forms import plain_latex

    assert plain_latex(latex) == plain


@pytest.mark.parametrize(("math", "formula"), [
    (r"\text{out}_{i} = \frac{1}{\text{x}_{i}}", "reciprocal(x)"),
    (r"\text{out}_{i} = \sin^{-1}(\text{x}_{i})", "asin(x)"),
])
def test_a_math_line_in_latex_reads_as_its_function(math: str, formula: str) -> None:
    spec = read_spec("Returns a new tensor computed from each element of x.\nMath: " + math + "\n"
                     "Inputs: x float32 [4, 6]")
    assert same_formula(spec, formula)
