"""The accounting pass: words the reading left out become a question that quotes them, never a verified kernel.

The pass is tested on its own (a text and a reading built by hand, as another reader could propose) and through
`read_spec`, on the specs that were read wrong and verified before it existed (issue 48's examples).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.reader import read_spec
from agent.reader.accounting import account
from agent.reader.errors import ReaderBug, SpecQuestion
from agent.reader.outcome import read_outcomes
from agent.reading import InputReading, Reading


def reading(ir: str, *inputs: tuple[str, list[int]], output: list[int] | None = None,
            params: dict[str, float] | None = None) -> Reading:
    """A reading as a reader would propose it: its IR, inputs and output shape."""
    return Reading(op="op", family="elementwise", ir=ir, pytorch=ir,
                   inputs=[InputReading(name=n, dtypes=["float32"], shapes=[s]) for n, s in inputs],
                   output_shapes=[output or inputs[0][1]], params=params or {})


@pytest.mark.parametrize(("text", "ir", "quoted"), [
    ("swish with beta=1.5, x [1024, 1024] fp32", "silu(x)", "beta=1.5"),
    ("softmax, temperature=0.7, x [4096, 1024] fp16", "softmax(x, dim=-1)", "temperature=0.7"),
    ("relu, negative_slope=0.1, x [1024] fp32", "relu(x)", "negative_slope=0.1"),
    ("softmax with temperature, x [4096, 1024] fp16", "softmax(x, dim=-1)", "temperature"),
    ("x times w transposed, x [512, 512] fp16, w [512, 512] fp16", "x * w", "transposed"),
    ("logarithm of the sum of exponentials of x over the last dim, x [64, 128]", "log(sum(x, dim=-1))",
     "exponentials"),
    ("arcsine of x, x [1024] fp32", "sin(x)", "arcsine"),
    ("log of the absolute value of the gamma function of x, x [1024]", "log(abs(x))", "gamma function"),
    ("sum of x along dim 1, keepdim=True, x [8, 16]", "sum(x, dim=1)", "keepdim=True"),
    ("tile x then take exp, x [8, 16]", "exp(x)", "tile"),
])
def test_a_word_the_reading_drops_is_quoted(text: str, ir: str, quoted: str) -> None:
    inputs = [("x", [1024]), ("w", [1024])] if " w " in text else [("x", [1024])]
    result = account(text, reading(ir, *inputs))
    assert not result.accounted
    assert any(quoted.lower() in u.quote.lower() for u in result.unaccounted), result.lines()


@pytest.mark.parametrize(("text", "ir", "inputs", "output"), [
    ("softmax, temperature=0.7, x [4096, 1024] fp16", "softmax(x / 0.7, dim=-1)", [("x", [4096, 1024])], None),
    ("leaky relu, negative_slope=0.1, x [1024]", "leaky_relu(x, negative_slope=0.1)", [("x", [1024])], None),
    ("softmax over the last dim of x [64, 128], dim=-1", "softmax(x, dim=-1)", [("x", [64, 128])], None),
    ("sum of x over dim=1, x [8, 16]", "sum(x, dim=1)", [("x", [8, 16])], [8]),
    ("RMSNorm: y = x / sqrt(mean(x ** 2, dim=-1, keepdim=True) + 1e-6), x [8, 16]",
     "x / sqrt(mean(x ** 2, dim=-1, keepdim=True) + 1e-6)", [("x", [8, 16])], None),
    ("Cross entropy of logits [64, 1000] and targets [64]", "cross_entropy(logits, targets)",
     [("logits", [64, 1000]), ("targets", [64])], []),
    ("natural log of x where x > 0, x [500, 500]", "log(x)", [("x", [500, 500])], None),
    ("tanh, x [64, 64] bf16, max 3 rounds, target speedup 1.5x", "tanh(x)", [("x", [64, 64])], None),
    ("def relu_sqrt(input, inplace=False, out=None): relu then sqrt, input [64]", "sqrt(relu(input))",
     [("input", [64])], None),
])
def test_a_reading_that_uses_every_word_is_accounted(text: str, ir: str, inputs: list[tuple[str, list[int]]],
                                                     output: list[int] | None) -> None:
    result = account(text, reading(ir, *inputs, output=output))
    assert result.accounted, result.lines()


def test_a_dim_name_is_an_axis_not_an_input() -> None:
    text = "sum over seq, x [bs=8, seq=2048, hidden=4096] fp16"
    wrong = account(text, reading("seq + x", ("seq", [1]), ("x", [8, 2048, 4096]), output=[8, 2048, 4096]))
    assert any(u.quote == "seq" for u in wrong.unaccounted), wrong.lines()
    other_axis = account(text, reading("sum(x, dim=-1)", ("x", [8, 2048, 4096]), output=[8, 2048]))
    assert any("over seq" in u.quote for u in other_axis.unaccounted), other_axis.lines()
    right = account(text, reading("sum(x, dim=1)", ("x", [8, 2048, 4096]), output=[8, 4096]))
    assert right.accounted, right.lines()


def test_every_dim_name_of_a_list_must_be_reduced() -> None:
    # `mean over H and W` read as mean over H alone was accounted: only the first name was checked
    text = "mean over H and W of x [N=4, C=6, H=5, W=7] fp32"
    first_only = account(text, reading("mean(x, dim=2)", ("x", [4, 6, 5, 7]), output=[4, 6, 7]))
    assert any("dim W" in u.reason for u in first_only.unaccounted), first_only.lines()
    both = account(text, reading("mean(x, dim=(2, 3))", ("x", [4, 6, 5, 7]), output=[4, 6]))
    assert both.accounted, both.lines()


def test_a_stated_output_shape_must_be_the_readings() -> None:
    text = "mean of x over dim 1, x [32, 64], output [32]"
    assert account(text, reading("mean(x, dim=1)", ("x", [32, 64]), output=[32])).accounted
    wrong = account(text, reading("mean(x, dim=0)", ("x", [32, 64]), output=[64]))
    assert any("[32]" in u.quote for u in wrong.unaccounted), wrong.lines()


def test_unit_norm_keeps_the_shape() -> None:
    text = "Normalize every row of x to unit L2 norm, x [4096, 1024] fp32"
    norm_only = account(text, reading("vector_norm(x, dim=-1)", ("x", [4096, 1024]), output=[4096]))
    assert any("unit L2 norm" in u.quote for u in norm_only.unaccounted), norm_only.lines()
    assert account(text, reading("normalize(x, dim=-1)", ("x", [4096, 1024]))).accounted


def test_a_chain_described_twice_is_not_applied_twice() -> None:
    text = "exp followed by sqrt of x [1024]. Returns the exponential followed by square root."
    twice = account(text, reading("sqrt(exp(sqrt(exp(x))))", ("x", [1024])))
    assert any("twice" in u.reason for u in twice.unaccounted), twice.lines()
    assert account(text, reading("sqrt(exp(x))", ("x", [1024]))).accounted


# Swish's beta and softmax's temperature now read (tests/agent/reader/test_entry_variants.py).
@pytest.mark.parametrize("text", [
    "relu, negative_slope=0.1, x [1024] fp32",
    "softmax with temperature, x [4096, 1024] fp16",
    "x times w transposed, x [512, 512] fp16, w [512, 512] fp16",
    "the Hurwitz zeta function of x and q, x [1024] fp32, q [1024] fp32",
])
def test_specs_once_read_wrong_and_verified_now_end_in_a_question(text: str) -> None:
    with pytest.raises(SpecQuestion) as raised:
        spec = read_spec(text)
        raise AssertionError(f"read as {spec.formula}")  # a reading here is the defect this pass exists for
    assert not isinstance(raised.value, ReaderBug), str(raised.value)


def test_the_logarithm_of_the_sum_of_exponentials_once_read_wrong_now_reads_as_logsumexp() -> None:
    # read as log(sum(x)) and verified before the accounting pass; the phrase now names logsumexp itself
    spec = read_spec("logarithm of the sum of exponentials of x over the last dim, x [4096, 1024] fp32")
    assert spec.formula == "logsumexp(x, dim=-1)"


def test_the_question_quotes_the_words_and_the_reading_says_accounted() -> None:
    with pytest.raises(SpecQuestion) as raised:
        read_spec("sigmoid, temperature=0.7, x [4096, 1024] fp16")
    assert any("temperature=0.7" in line for line in raised.value.unaccounted)
    assert "temperature=0.7" in str(raised.value)
    spec = read_spec("softmax over the last dim of x [64, 128] fp16")
    assert spec.reading is not None and spec.reading.accounting == "accounted"


def test_a_description_that_restates_its_chain_is_one_chain() -> None:
    spec = read_spec("exp followed by sqrt of x [1024] fp32. Returns the exponential followed by square root.")
    assert spec.formula == "sqrt(exp(x))"
    assert any("twice" in note for note in spec.reading.notes)  # type: ignore[union-attr]


def test_the_outcome_kernelgen_read_and_post_read_show_carries_the_accounting(tmp_path: Path) -> None:
    asked = read_outcomes("sigmoid, temperature=0.7, x [4096, 1024] fp16", tmp_path)[0]
    assert asked.status == "question"
    assert isinstance(asked.accounting, list) and any("temperature=0.7" in line for line in asked.accounting)
    read = read_outcomes("softmax over the last dim of x [64, 128] fp16", tmp_path)[0]
    assert read.status == "read" and read.accounting == "accounted"
