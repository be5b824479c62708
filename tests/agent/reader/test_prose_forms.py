"""Forms of text written elsewhere (torch's docs, TritonBench's descriptions): acronyms after their long form,
the verb "means", LaTeX function commands."""

import pytest

from agent.reader import read_spec
from agent.reader.errors import SpecQuestion
from agent.reader.prose_forms import collapse_spelled_out_acronyms
from agent.reader.text import normalize


@pytest.mark.parametrize(("text", "collapsed"), [
    ("applies the Gaussian Error Linear Units (GELU) activation", "applies the GELU activation"),
    ("the Rectified Linear Unit (ReLU) of x", "the ReLU of x"),
    ("Sigmoid Linear Unit (SiLU)", "SiLU"),
    ("root mean square (RMS) normalization", "RMS normalization"),
    # not a long form: the words before do not spell the capitals, or the parenthesis is no acronym
    ("x (float32) and y (B)", "x (float32) and y (B)"),
    ("the input (x)", "the input (x)"),
    ("a linear layer (FC) then relu", "a linear layer (FC) then relu"),
])
def test_a_long_form_before_its_acronym_is_the_acronym(text: str, collapsed: str) -> None:
    assert collapse_spelled_out_acronyms(text) == collapsed


def test_gelu_spelled_out_is_gelu_not_a_linear_layer() -> None:
    spec = read_spec("Subtracts other from input and then applies the Gaussian Error Linear Units (GELU) activation "
                     "function to the result. Inputs: input float32 [3, 5], other float32 [3, 5]")
    assert spec.formula == "gelu(input - other)"


def test_where_star_means_any_number_of_dimensions_is_no_mean() -> None:
    spec = read_spec("Applies the rectified linear unit function element-wise. Input: (*), where * means any number "
                     "of dimensions. Inputs: input float32 [7]")
    assert spec.formula == "relu(input)"


def test_latex_function_commands_read_as_their_names() -> None:
    assert "out = ln Gamma(x)" in normalize(r"\text{out} = \ln \Gamma(x)")
    assert "out_i = input_i + alpha * other_i" in normalize(r"\text{{out}}_i = \text{{input}}_i + \text{{alpha}} "
                                                           r"\times \text{{other}}_i")
    spec = read_spec("Computes the natural logarithm of the absolute value of the gamma function on the input tensor."
                     "\nMath: \\text{out}_{i} = \\ln \\Gamma(|\\text{input}_{i}|)\nInputs: input float32 [4]")
    assert spec.formula == "lgamma(abs(input))"  # the Math line, a structured part, wins over the prose


@pytest.mark.parametrize(("text", "formula"), [
    ("subtract other from input, then gelu, input [3, 5] fp32, other [3, 5] fp32", "gelu(input - other)"),
    ("Subtracts other from input. Inputs: input float32 [3, 5], other float32 [3, 5]", "input - other"),
    ("subtract 1 from x, x [8] fp32", "x - 1"),
    ("y is subtracted from x, x [8] fp32, y [8] fp32", "x - y"),
    ("从 x 中减去 y，x [8] fp32，y [8] fp32", "x - y"),
])
def test_subtract_a_from_b_is_b_minus_a(text: str, formula: str) -> None:
    assert read_spec(text).formula == formula


def test_logits_are_scores_not_the_logit_function() -> None:
    spec = read_spec("cross entropy of logits [64, 1000] fp32 and targets [64] int64, mean over the batch")
    assert spec.formula.startswith("cross_entropy(logits, targets")
    assert read_spec("logit of p, p [128] fp32").formula == "logit(p)"


def test_adds_other_scaled_by_alpha_to_input_is_input_plus_alpha_times_other() -> None:
    spec = read_spec("Adds the tensor or number 'other', scaled by 'alpha', to the 'input' tensor, alpha = 0.5. "
                     "Inputs: input float32 [3], other float32 [3]")
    assert spec.formula == "input + alpha * other" and [p.value for p in spec.params] == [0.5]


def test_a_supports_sentence_names_options_not_steps() -> None:
    text = ("Applies the GELU activation function to x, then takes the minimum over all elements. The function "
            "supports two methods for computing GELU: exact ('none') and an approximation using 'tanh'. x [4] fp32")
    assert read_spec(text).formula == "amin(gelu(x))"


def test_an_api_sentence_about_another_flag_value_is_no_constant_of_the_operator() -> None:
    text = ("Returns the sum of each row of the input tensor in the given dimension dim. If keepdim is True, the "
            "output tensor is of the same size as input except in the dimension(s) dim where it is of size 1. "
            "Otherwise, dim is squeezed, resulting in the output tensor having 1 (or len(dim)) fewer dimension(s).\n"
            "Wrapper Entry Information: def sum(input, dim, keepdim=False) -> Tensor\n"
            "Inputs: input float32 [2, 3]\nParameters: dim = 0")
    assert read_spec(text).formula == "sum(input, dim=0)"


def test_a_signature_returning_values_and_indices_is_asked_about_not_read_as_one_tensor() -> None:
    text = ("Returns the minimum value of each row of the input tensor in the given dimension dim, along with the "
            "index location of each minimum value found.\nWrapper Entry Information: min(input, dim, keepdim=False) -> "
            "(Tensor, LongTensor)\nInputs: input float32 [2, 3]\nParameters: dim = 0")
    with pytest.raises(SpecQuestion) as raised:
        read_spec(text)
    assert "index location" in str(raised.value) or "several tensors" in str(raised.value)
