"""An operator's variant taken when the text sets the variant's own parameter: Swish with a beta, a softmax with a
temperature. Before, the value was left over and the reading asked what it was for (or, unread, was dropped)."""

from __future__ import annotations

import pytest
import torch
from reader_helpers import evaluate

from agent.catalogue import Catalogue, load_catalogue
from agent.catalogue.entries import _entry
from agent.reader import read_spec
from agent.reader.errors import SpecQuestion

X = torch.randn(8, 12, 10, dtype=torch.float64)


@pytest.mark.parametrize(("text", "truth"), [
    ("swish with beta 1.5 of x [8, 12, 10] fp32", lambda x: x * torch.sigmoid(1.5 * x)),
    ("swish with beta=1.5, x [8, 12, 10] fp32", lambda x: x * torch.sigmoid(1.5 * x)),
    ("Apply swish (beta=0.25) to x [8, 12, 10] bf16", lambda x: x * torch.sigmoid(0.25 * x)),
    ("Swish activation x * sigmoid(beta * x) with beta = 2.0, x [8, 12, 10] fp16", lambda x: x * torch.sigmoid(2 * x)),
    ("swish of x [8, 12, 10] fp32", torch.nn.functional.silu),  # no beta: Swish-1, SiLU
    ("softmax, temperature=0.7, x [8, 12, 10] fp16", lambda x: torch.softmax(x / 0.7, dim=-1)),
    ("softmax of x [8, 12, 10] fp32 with temperature 0.5", lambda x: torch.softmax(x / 0.5, dim=-1)),
    ("softmax over dim 1 of x [8, 12, 10] fp32, temperature 0.5", lambda x: torch.softmax(x / 0.5, dim=1)),
    ("softmax with temperature 3 over the last dim of x [8, 12, 10] fp32", lambda x: torch.softmax(x / 3, dim=-1)),
    ("softmax of x [8, 12, 10] fp32 with tau = 0.1", lambda x: torch.softmax(x / 0.1, dim=-1)),
    ("x [8, 12, 10] fp32, 带温度的softmax，温度 0.5", lambda x: torch.softmax(x / 0.5, dim=-1)),
])
def test_a_stated_parameter_of_a_variant_is_applied(text: str, truth: object) -> None:
    spec = read_spec(text)
    torch.testing.assert_close(evaluate(spec, x=X), truth(X))  # type: ignore[operator]


@pytest.mark.parametrize("text", [
    "softmax with temperature, x [8, 12] fp16",  # named, no value: asked, not taken as 1
    "softmax over all elements of x [8, 100] fp32 with temperature 3",
])
def test_a_variant_without_what_it_needs_asks(text: str) -> None:
    with pytest.raises(SpecQuestion):
        spec = read_spec(text)
        raise AssertionError(f"read as {spec.formula}")


def test_a_variant_must_extend_an_entry_of_its_family() -> None:
    base = _entry({"name": "a", "family": "elementwise", "op": "relu", "en": ["aa"]})
    wrong = _entry({"name": "b", "family": "softmax", "formula": "softmax(x, dim=-1)", "variant_of": "a"})
    with pytest.raises(ValueError, match="variant_of"):
        Catalogue([base, wrong])
    assert [e.name for e in load_catalogue().variants["softmax"]] == ["softmax_temperature"]
