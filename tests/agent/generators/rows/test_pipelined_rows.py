"""Pipelined whole rows: which specs start with them, and that their kernels walk every tile to PyTorch's values."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from agent.generators.base import LaunchConfig
from agent.generators.offline.dispatch import OfflineGenerator
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from tests.agent.generators.kernels import load_triton_module

H100 = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)
ASCEND = DeviceInfo(kind="npu", name="Ascend910B", multiprocessors=40)
PIPELINED = LaunchConfig(schedule="whole_row", block_m=1, num_warps=4, num_stages=3, programs_per_sm=1)


def _default(text: str, device: DeviceInfo = H100) -> LaunchConfig:
    generator = OfflineGenerator()
    spec = read_spec(text)
    return generator.default_config(spec, generator.schedules(spec)[0], device)


def test_rows_that_fill_the_largest_tile_alone_start_pipelined_on_a_cuda_gpu() -> None:
    config = _default("softmax over the last dim of x [4096, 32000] fp16")
    assert (config.schedule, config.block_m, config.num_warps, config.num_stages, config.programs_per_sm) == (
        "whole_row", 1, 32, 3, 1)
    assert "NUM_STAGES=3" in config.label()


@pytest.mark.parametrize(("text", "device"), [
    ("softmax over the last dim of x [4096, 32000] fp32", H100),  # three 128 KB stages exceed shared memory
    ("softmax over the last dim of x [8192, 16000] bf16", H100),  # half the tile: faster as it was
    ("F.layer_norm(x, (32000,), w, b) x [64, 32000] w [32000] b [32000] fp16", H100),  # three tensors staged
    ("softmax over the last dim of x [4096, 32000] fp16", ASCEND),  # measured on CUDA only
])
def test_rows_start_unpipelined_where_the_stages_do_not_fit_or_were_not_faster(text: str, device: DeviceInfo) -> None:
    assert _default(text, device).num_stages == 1


def test_the_search_offers_pipelined_rows_along_the_last_dim_only() -> None:
    generator = OfflineGenerator()
    spec = read_spec("log_softmax over the last dim of x [1024, 4096] fp32")
    space = generator.config_space(spec, "whole_row", H100)
    assert any(c.num_stages > 1 for c in space.kept)
    strided = read_spec("torch.sum(x, dim=1) x [64, 512, 1024] fp32")
    assert all(c.num_stages == 1 for c in generator.config_space(strided, "whole_row", H100).kept)


@pytest.mark.parametrize(("text", "reference"), [
    ("softmax over the last dim of x [37, 129] fp16", lambda x: torch.softmax(x.float(), -1)),
    ("log_softmax over the last dim of x [9, 1] fp32", lambda x: torch.log_softmax(x, -1)),
    ("torch.cumsum(x, dim=-1) x [11, 70] bf16", lambda x: torch.cumsum(x.float(), -1)),
])
def test_a_pipelined_row_kernel_walks_every_tile_to_pytorchs_values(text: str, reference, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    generator = OfflineGenerator()
    spec = read_spec(text)
    module = load_triton_module(generator.generate(spec, PIPELINED), tmp_path)
    monkeypatch.setattr(module, "multiprocessor_count", lambda device: 2)  # the grid of a 2-core CPU on any host
    dtype = {"fp16": torch.float16, "fp32": torch.float32, "bf16": torch.bfloat16}[text.split()[-1]]
    shape = spec.shape_cases()[0]["x"]
    # Fewer programs than rows: each program takes several tiles in turn.
    grid = module.launch_sizes(shape[0], shape[1], 1, (1, 4, 3, 1), torch.device("cpu"))[4]
    assert grid[0] < shape[0]
    for seed in (0, 1):
        torch.manual_seed(seed)
        x = (torch.randn(shape) * 4).to(dtype)
        got = getattr(module, spec.name)(x)
        torch.testing.assert_close(got.float(), reference(x).float(), rtol=2e-2, atol=2e-2)


def test_a_pipelined_normalization_reads_its_weights_in_every_tile(tmp_path: Path) -> None:
    generator = OfflineGenerator()
    spec = read_spec("F.layer_norm(x, (100,), w, b) x [19, 100] w [100] b [100] bf16")
    layer_norm = getattr(load_triton_module(generator.generate(spec, PIPELINED), tmp_path), spec.name)
    torch.manual_seed(0)
    x, w, b = (torch.randn(19, 100) * 3).bfloat16(), torch.randn(100).bfloat16(), torch.randn(100).bfloat16()
    want = F.layer_norm(x.float(), (100,), w.float(), b.float())
    torch.testing.assert_close(layer_norm(x, w, b).float(), want, rtol=2e-2, atol=3e-2)


def test_a_loss_summed_over_rows_runs_unpipelined_under_a_pipelined_configuration(tmp_path: Path) -> None:
    generator = OfflineGenerator()
    spec = read_spec("F.cross_entropy(x, t) x [13, 40] fp32 t [13]")
    files = generator.generate(spec, PIPELINED)
    source = files.files[files.name_of("triton")]
    assert "tl.range(" not in source and "NUM_STAGES" not in source  # partial sums are kept per program
    module = load_triton_module(files, tmp_path)
    torch.manual_seed(0)
    x, t = torch.randn(13, 40), torch.randint(0, 40, (13,))
    torch.testing.assert_close(getattr(module, spec.name)(x, t), F.cross_entropy(x, t), rtol=1e-5, atol=1e-5)
