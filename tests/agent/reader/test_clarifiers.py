"""Constructs kernel engineers write, read as they mean them (issue 48's examples), each checked by its values."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from reader_helpers import evaluate, inputs_of

from agent.reader import read_spec
from agent.reader.errors import ReaderBug, SpecQuestion


def test_accumulator_precision_is_a_note_not_an_input_dtype() -> None:
    spec = read_spec("Matrix multiplication C = A @ B with A [256, 256] and B [256, 256], both fp16, "
                     "accumulating in fp32.")
    assert inputs_of(spec) == [("A", [[256, 256]], ["float16"]), ("B", [[256, 256]], ["float16"])]
    assert any("accumulator" in note for note in spec.reading.notes)  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "correction"), [
    ("variance of each row of x, divide by N, not N-1, x [64, 1024] fp32", 0),
    ("std of each row of x [64, 1024] fp32, divided by N - 1", 1),
])
def test_a_divisor_clarifier_sets_the_correction(text: str, correction: int) -> None:
    spec = read_spec(text)
    x = torch.randn(64, 1024)
    want = torch.var(x, dim=-1, correction=correction) if "variance" in text else \
        torch.std(x, dim=-1, correction=correction)
    assert torch.allclose(evaluate(spec, x=x), want, atol=1e-5)


def test_a_loss_averaged_over_the_batch_is_its_reduction() -> None:
    spec = read_spec("Cross-entropy loss (mean over the batch), logits [64, 1000] fp32, targets [64] int64")
    logits, targets = torch.randn(64, 1000), torch.randint(0, 1000, (64,))
    assert torch.allclose(evaluate(spec, logits=logits, targets=targets), F.cross_entropy(logits, targets))
    summed = read_spec("MSE loss between a and b [64, 128] fp32, summed over the batch")
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    assert torch.allclose(evaluate(summed, a=a, b=b), F.mse_loss(a, b, reduction="sum"))


def test_a_name_that_labels_a_formula_is_the_formula() -> None:
    spec = read_spec("Linear layer followed by ReLU: out = relu(x @ w + b), x [128, 256] fp32, w [256, 512] fp32, "
                     "b [512] fp32")
    x, w, b = torch.randn(128, 256), torch.randn(256, 512), torch.randn(512)
    assert torch.allclose(evaluate(spec, x=x, w=w, b=b), torch.relu(x @ w + b), atol=1e-4)
    with pytest.raises(SpecQuestion, match="GELU"):  # words that do not name the formula are still asked about
        read_spec("GELU then sigmoid: out = relu(x), x [64] fp32")


def test_a_later_step_keeps_its_operand() -> None:
    spec = read_spec("relu first, then add bias, x [128, 256] fp32, bias [256] fp32")
    x, bias = torch.randn(128, 256), torch.randn(256)
    assert torch.allclose(evaluate(spec, x=x, bias=bias), torch.relu(x) + bias)


@pytest.mark.parametrize(("text", "dim"), [
    ("sum over seq, x [bs=8, seq=16, hidden=32] fp16", 1),
    ("softmax over seq of x [8, 16, 32] (bs, seq, hidden) fp16", 1),
])
def test_a_dim_named_in_a_shape_is_an_axis(text: str, dim: int) -> None:
    spec = read_spec(text)
    assert [t.name for t in spec.inputs] == ["x"]
    x = torch.randn(8, 16, 32)
    want = x.sum(dim=dim) if text.startswith("sum") else torch.softmax(x, dim=dim)
    assert torch.allclose(evaluate(spec, x=x), want, atol=1e-5)


def test_dim_names_after_a_shape_are_no_shape() -> None:
    spec = read_spec("q, k, v [2, 8, 128, 64] (batch, heads, seq, head_dim) fp16, scaled dot product attention")
    assert [t.name for t in spec.inputs] == ["q", "k", "v"]


def test_unit_l2_norm_is_the_normalized_tensor() -> None:
    spec = read_spec("Normalize every row of x to unit L2 norm, x [64, 128] fp32")
    x = torch.randn(64, 128)
    assert torch.allclose(evaluate(spec, x=x), F.normalize(x, dim=-1), atol=1e-6)


@pytest.mark.parametrize("dims", [65, 2000])
def test_more_dims_than_a_tensor_has_is_a_question_with_the_limit(dims: int) -> None:
    with pytest.raises(SpecQuestion, match="64") as raised:
        read_spec(f"relu of x [{', '.join(['2'] * dims)}] fp32")
    assert not isinstance(raised.value, ReaderBug)
