"""Structured parts of a spec win over prose: signatures, argument docs, `Inputs:` lines and element subscripts.

The texts follow the layout of API docs and benchmark task descriptions (a description, a signature with argument
docs, a `Math:` line, an `Inputs:` line), the form most text written elsewhere takes.
"""

from __future__ import annotations

import pytest
import torch
from reader_helpers import evaluate, inputs_of

from agent.reader import read_spec
from agent.reader.errors import ReaderBug, SpecQuestion


def test_type_annotations_of_a_signature_are_not_shapes() -> None:
    spec = read_spec(
        "Description: applies ReLU to every element, then takes the square root.\n"
        "Signature: def relu_root(input, inplace=False, out=None) -> Tensor: input (Tensor): the tensor to read. "
        "inplace (bool, optional): write into input. out (Tensor, optional): where the result goes.\n"
        "Inputs: input float32 [4, 5]")
    assert inputs_of(spec) == [("input", [[4, 5]], ["float32"])]
    x = torch.randn(4, 5)
    assert torch.allclose(evaluate(spec, input=x), torch.relu(x).sqrt())


def test_argument_docs_describe_inputs_and_add_no_step() -> None:
    # "to multiply with `input`" documents the argument `other`; it is not a second multiply.
    spec = read_spec(
        "Description: performs element-wise multiplication of input and other, then applies ReLU to the result.\n"
        "Signature: def mul_then_relu(input, other) -> Tensor: input (Tensor): the first factor. other (Tensor or "
        "Number): the value to multiply with `input`.\nInputs: input float32 [3, 7], other float32 [3, 7]")
    a, b = torch.randn(3, 7), torch.randn(3, 7)
    assert torch.allclose(evaluate(spec, input=a, other=b), torch.relu(a * b))


def test_element_subscripts_and_signature_defaults_are_read() -> None:
    spec = read_spec(
        "Description: a subtraction, written out under Math.\n"
        "Signature: def scaled_sub(input, other, *, alpha=1) -> Tensor\n"
        "Math: out_i = input_i - alpha * other_i\nInputs: input float32 [6], other float32 [6]")
    a, b = torch.randn(6), torch.randn(6)
    assert torch.allclose(evaluate(spec, input=a, other=b), a - b)


def test_a_formula_over_x_is_the_signatures_one_input() -> None:
    spec = read_spec("Description: the logistic sigmoid.\nSignature: def logistic(input) -> Tensor\n"
                     "Math: y = 1 / (1 + exp(-x))\nInputs: input float32 [8, 3]")
    x = torch.randn(8, 3)
    assert torch.allclose(evaluate(spec, input=x), torch.sigmoid(x), atol=1e-6)


def test_a_dtype_word_in_prose_does_not_beat_the_inputs_line() -> None:
    spec = read_spec("Description: adds other to input; torch accepts integer, float and complex inputs.\n"
                     "Inputs: input float32 [5, 5], other float32 [5, 5]")
    assert [t.dtypes for t in spec.inputs] == [["float32"], ["float32"]]
    with pytest.raises(SpecQuestion, match="complex"):
        read_spec("add two complex tensors a and b of shape [5, 5]")


def test_a_choice_parameter_without_listed_values_is_no_reader_failure() -> None:
    try:
        read_spec("Description: GELU of input minus other.\nSignature: def sub_gelu(input, other, approximate='none')"
                  " -> Tensor: approximate (str, optional): 'none' or 'tanh'.\n"
                  "Math: out = GELU(input - other)\nInputs: input float32 [4], other float32 [4]")
    except SpecQuestion as exc:
        assert not isinstance(exc, ReaderBug), str(exc)


def test_a_parameters_line_states_the_axis_over_prose() -> None:
    spec = read_spec("Returns the sum of each row of the input tensor in the given dimension dim.\n"
                     "Inputs: input float32 [2, 3]\nParameters: dim = 0")
    x = torch.randn(2, 3)
    assert torch.allclose(evaluate(spec, input=x), x.sum(dim=0))


def test_an_args_block_names_no_input() -> None:
    spec = read_spec("Applies the rectified linear unit function element-wise.\n"
                     "Wrapper Entry Information: relu(input, inplace=False) -> Tensor\n\nArgs:\n"
                     "    inplace: can optionally do the operation in-place. Default: False\n\n"
                     "Inputs: input float32 [4, 4]")
    assert inputs_of(spec) == [("input", [[4, 4]], ["float32"])]
