"""Broadcast inputs are addressed correctly from a flat output index."""

import pytest
import torch

from agent.generators.offline.broadcast import broadcast_runs, count_runs


@pytest.mark.parametrize(
    ("shape", "out_shape"),
    [((4096,), (8, 4096)), ((6, 1, 1), (2, 6, 5, 3)), ((2, 1, 5), (2, 3, 5)), ((1,), (3, 4)),
     ((3, 1), (3, 4)), ((1, 4), (3, 4)), ((2, 1, 4, 1), (2, 3, 4, 5)), ((7,), (7,))],
)
def test_offsets_match_torch_broadcasting(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> None:
    runs = count_runs(shape, out_shape)
    values = broadcast_runs(shape, out_shape, runs)
    source = torch.arange(torch.Size(shape).numel()).reshape(shape)
    expected = source.expand(out_shape).flatten()
    flat = torch.arange(torch.Size(out_shape).numel())
    triples = zip(values[::3], values[1::3], values[2::3], strict=True)
    offsets = sum(((flat // inner) % size) * stride for inner, size, stride in triples)
    assert torch.equal(source.flatten()[offsets], expected)


def test_too_many_runs_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="separate runs"):
        broadcast_runs((2, 1, 5), (2, 3, 5), runs=1)
