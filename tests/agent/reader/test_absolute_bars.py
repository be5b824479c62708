"""`|x|` is an absolute value wherever a formula may start; the bars of a markdown table are cells, not |x|."""

import pytest

from agent.reader import read_spec


@pytest.mark.parametrize(("text", "pytorch"), [
    ("|x| for x of shape [777, 333] in bfloat16", "torch.abs(x)"),
    ("out = |x|, x [777, 333] bfloat16", "torch.abs(x)"),
    ("y = |x - 1|, x [64, 33] fp32", "torch.abs(x - 1)"),  # read as `x - 1` before: the bars were dropped
    ("y = |a - b| * 2, a and b [64, 33] fp16", "torch.abs(a - b) * 2"),
])
def test_bars_read_as_an_absolute_value(text: str, pytorch: str) -> None:
    spec = read_spec(text)
    assert spec.reading is not None
    assert spec.reading.pytorch.strip().splitlines()[-1].endswith(pytorch)


def test_a_table_row_is_not_an_absolute_value() -> None:
    text = "ReLU of x.\n\n| input | shape | dtype |\n|---|---|---|\n| x | [64, 33] | float32 |\n"
    spec = read_spec(text)
    assert spec.reading is not None and "abs" not in spec.reading.pytorch
    assert "relu" in spec.reading.pytorch
