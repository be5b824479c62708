"""Max, min and their scans give NaN wherever PyTorch does, in every row schedule, whichever place the NaN sits."""

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from agent.generators.offline.dispatch import OfflineGenerator
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from tests.agent.generators.kernels import TORCH_DTYPES, load_triton_module

CPU = DeviceInfo(kind="cpu", name="cpu")

CASES: list[tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = [
    ("torch.amax(x, dim=-1) x [5, 300]", lambda x: x.amax(-1)),
    ("torch.amin(x, dim=0) x [300, 5] bf16", lambda x: x.amin(0)),
    ("torch.cummax(x, dim=-1).values x [5, 300]", lambda x: x.cummax(-1).values),
]


@pytest.mark.parametrize(("text", "reference"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("schedule", ["whole_row", "looped_row"])
def test_nan_and_infinities_come_out_as_in_pytorch(text: str, reference: Callable[[torch.Tensor], torch.Tensor],
                                                    schedule: str, tmp_path: Path) -> None:
    spec = read_spec(text)
    generator = OfflineGenerator()
    config = generator.default_config(spec, schedule, CPU)
    if schedule == "looped_row":
        config = config.model_copy(update={"block_size": 64})  # several chunks a row: NaN in the first and last
    module = load_triton_module(generator.generate(spec, config), tmp_path)
    shape = spec.shape_cases()[0]["x"]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(TORCH_DTYPES[spec.inputs[0].dtypes[0]])
    rows = x if shape[0] == 5 else x.T  # a view whose rows are the reduced lines
    rows[0, 0] = float("nan")  # first element, first chunk
    rows[1, -1] = float("nan")  # last element, last (partial) chunk
    rows[2, 150] = float("inf")
    rows[3, :] = float("-inf")
    rows[4, 7], rows[4, 200] = float("-inf"), float("nan")
    got = getattr(module, spec.name)(x)
    torch.testing.assert_close(got, reference(x), rtol=0, atol=0, equal_nan=True)
