"""The definition document's launch counts are the ones the generated wrappers launch."""

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from agent.definition_figures import launch_geometry
from agent.generators.base import LaunchConfig
from agent.generators.offline.dispatch import OfflineGenerator
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from tests.agent.generators.kernels import TORCH_DTYPES, load_triton_module

# The wrappers size persistent and split grids from the CPU count when no GPU is here: the document counts the same.
CPU = DeviceInfo(kind="cpu", name="CPU, Triton interpreter", multiprocessors=os.cpu_count() or 4)


class _Launches:
    """Stand in for a @triton.jit kernel: record each launch grid instead of running it."""

    def __init__(self) -> None:
        self.grids: list[tuple[int, ...]] = []

    def __getitem__(self, grid: tuple[int, ...]) -> Callable[..., None]:
        self.grids.append(tuple(grid))
        return lambda *args, **kwargs: None


@pytest.mark.parametrize(("text", "config"), [
    ("x * y, x [1000, 100] fp32, y [100] fp32", None),
    ("x * y, x [1000, 100] fp32, y [100] fp32", LaunchConfig(schedule="rows", block_m=2, block_size=256)),
    ("x * y, x [1000, 100] fp32, y [100] fp32", LaunchConfig(schedule="persistent", block_size=256)),
    ("softmax over the last dim of x [64, 1000] fp16", None),
    ("softmax over the last dim of x [64, 1000] fp16", LaunchConfig(schedule="looped_row", block_m=2,
                                                                     block_size=256)),
    ("sum of x [300, 50, 7] fp32 over dim 1", None),
    ("sum of x [4096, 8192] fp32 over dim 0", None),
    ("sum of all elements of x [300, 4001] fp32", None),
])
def test_programs_per_case_match_the_generated_wrapper(text: str, config: LaunchConfig | None, tmp_path: Path) -> None:
    generator, spec = OfflineGenerator(), read_spec(text)
    config = config or generator.default_config(spec, generator.schedules(spec)[0], CPU)
    module = load_triton_module(generator.generate(spec, config), tmp_path)
    launches = _Launches()
    setattr(module, f"{spec.name}_kernel", launches)
    case, dtypes = spec.shape_cases()[0], spec.dtype_cases()[0]
    inputs: list[Any] = [torch.zeros(case[t.name], dtype=TORCH_DTYPES[dtypes[t.name]]) for t in spec.inputs]
    getattr(module, spec.name)(*inputs)
    [grid] = launches.grids
    [row] = launch_geometry(spec, config, CPU).rows
    assert row.programs == math.prod(grid)


@pytest.mark.parametrize("text", [
    "F.scaled_dot_product_attention(q, k, v) q k v [1, 16, 2048, 128] bf16",  # one program per SM walks tiles
    "F.scaled_dot_product_attention(q, k, v) q k v [1, 16, 2048, 64] bf16",  # a program a tile
    "causal attention, q k v [1, 16, 2048, 128] bf16",  # a program a tile
])
def test_attention_programs_on_a_gpu_match_the_generated_wrapper(text: str, tmp_path: Path) -> None:
    h100 = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)
    generator, spec = OfflineGenerator(), read_spec(text)
    config = generator.default_config(spec, "flash", h100)
    module = load_triton_module(generator.generate(spec, config), tmp_path)
    module.DEVICE, module.multiprocessor_count = "cuda", lambda device: 132  # the wrapper's GPU rule, not run
    launches = _Launches()
    setattr(module, f"{spec.name}_kernel", launches)
    module.__dict__[spec.name](*(torch.zeros(spec.shape_cases()[0]["q"], dtype=torch.bfloat16) for _ in range(3)))
    [grid] = launches.grids
    [row] = launch_geometry(spec, config, h100).rows
    assert row.programs == math.prod(grid)
