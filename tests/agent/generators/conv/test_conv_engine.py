"""The convolution engine: what it takes and refuses, and its implicit-GEMM kernels against PyTorch (interpreter)."""

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from agent.generators.offline.conv.generator import ConvGenerator, conv_facts
from agent.generators.offline.dispatch import OfflineGenerator
from agent.reader import read_spec
from agent.runner import run_job
from agent.runtime.devices import DeviceInfo
from agent.state import JobRequest
from kernelgen.settings import Settings
from tests.agent.generators.kernels import load_triton_module

H100 = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)
GENERATOR = OfflineGenerator()


def kernel_for(text: str, folder: Path):  # noqa: ANN201 - a generated function
    spec = read_spec(text)
    assert GENERATOR.refusal(spec) is None, GENERATOR.refusal(spec)
    assert isinstance(GENERATOR.engine(spec), ConvGenerator)
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), folder)
    return getattr(module, spec.name)


def close(got: torch.Tensor, want: torch.Tensor, reduced: int) -> None:
    tol = 1e-4 if got.dtype == torch.float32 else 1e-2
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol * max(1.0, reduced ** 0.5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_a_3x3_convolution_with_bias_and_relu_matches_pytorch_at_odd_sizes(dtype: torch.dtype, tmp_path: Path) -> None:
    conv = kernel_for("relu(F.conv2d(x, w, b, padding=1)) x [2, 16, 10, 10] w [32, 16, 3, 3] b [32] fp16", tmp_path)
    for n, c, h, w, k in ((2, 3, 7, 9, 5), (1, 1, 1, 1, 1), (3, 17, 5, 4, 33)):
        x, weight, bias = torch.randn(n, c, h, w).to(dtype), torch.randn(k, c, 3, 3).to(dtype), torch.randn(k).to(dtype)
        want = F.relu(F.conv2d(x.double(), weight.double(), bias.double(), padding=1))
        got = conv(x, weight, bias)
        assert got.shape == want.shape and got.dtype == dtype
        close(got, want, c * 9)


def test_stride_dilation_same_padding_and_an_even_kernel_match_pytorch(tmp_path: Path) -> None:
    strided = kernel_for("F.conv2d(x, w, stride=2, dilation=2) x [2, 3, 17, 19] w [8, 3, 3, 3] fp32", tmp_path / "s")
    x, w = torch.randn(2, 3, 17, 19), torch.randn(8, 3, 3, 3)
    close(strided(x, w), F.conv2d(x.double(), w.double(), stride=2, dilation=2), 27)
    # "same" with a 3x2 kernel: PyTorch pads the extra column on the right.
    same = kernel_for("F.conv2d(x, w, padding='same') x [1, 4, 9, 8] w [6, 4, 3, 2] fp32", tmp_path / "same")
    x, w = torch.randn(1, 4, 9, 8), torch.randn(6, 4, 3, 2)
    close(same(x, w), F.conv2d(x.double(), w.double(), padding="same"), 24)


def test_a_residual_epilogue_reads_the_output_through_its_strides(tmp_path: Path) -> None:
    text = "out = F.conv2d(x, w, b, padding=1) + r, x [2, 4, 6, 5] w [6, 4, 3, 3] b [6] r [2, 6, 6, 5] fp16"
    conv = kernel_for(text, tmp_path)
    x, w, b, r = torch.randn(2, 4, 6, 5).half(), torch.randn(6, 4, 3, 3).half(), torch.randn(6).half(), \
        torch.randn(2, 6, 6, 5).half()
    close(conv(x, w, b, r), F.conv2d(x.double(), w.double(), b.double(), padding=1) + r.double(), 36)
    # A channels-last input is read in place through its strides.
    channels_last = x.to(memory_format=torch.channels_last)
    close(conv(channels_last, w, b, r), F.conv2d(x.double(), w.double(), b.double(), padding=1) + r.double(), 36)


@pytest.mark.parametrize("text,reason", [
    ("F.conv2d(x, w, groups=2) x [1, 4, 8, 8] w [4, 2, 3, 3] fp32", "groups > 1"),
    ("F.conv1d(x, w) x [1, 4, 8] w [4, 4, 3] fp32", "conv1d is not written offline yet"),
    ("F.conv2d(F.conv2d(x, w), v) x [1, 4, 8, 8] w [4, 4, 3, 3] v [2, 4, 3, 3] fp32", "one conv2d per kernel"),
])
def test_what_the_engine_cannot_write_is_refused_with_the_reason(text: str, reason: str) -> None:
    refusal = GENERATOR.refusal(read_spec(text))
    assert refusal is not None and reason in refusal, refusal


def test_the_implicit_gemm_sizes_drive_the_tile() -> None:
    spec = read_spec("F.conv2d(x, w, b, padding=1) x [8, 64, 56, 56] w [64, 64, 3, 3] b [64] fp16")
    facts = conv_facts(spec, H100)
    assert (facts.m, facts.n, facts.k) == (8 * 56 * 56, 64, 64 * 9)
    config = GENERATOR.default_config(spec, "tiled", H100)
    assert config.block_size == 64  # 64 output channels: no tile wider than the matrix
    assert config.block_k == 64


def test_a_64_wide_tile_over_many_input_channels_takes_128_a_step() -> None:
    # ResNet-50's last 3x3 layer: 1568 pixels x 512 channels in 64x64 tiles, 4608 deep.
    spec = read_spec("relu(conv2d(x, weight, bias, padding=1)), x [32, 512, 7, 7] bf16, weight [512, 512, 3, 3], "
                     "bias [512]")
    config = GENERATOR.default_config(spec, "tiled", H100)
    assert (config.block_m, config.block_size, config.block_k, config.num_stages) == (64, 64, 128, 3)
    # Under 256 channels, or a count that leaves a step part-empty (320 = 2.5 x 128), 64 stays.
    for channels in (128, 320):
        spec = read_spec(f"relu(conv2d(x, weight, bias, padding=1)), x [32, {channels}, 7, 7] bf16, "
                         f"weight [512, {channels}, 3, 3], bias [512]")
        config = GENERATOR.default_config(spec, "tiled", H100)
        assert (config.block_m, config.block_size, config.block_k) == (64, 64, 64)


def test_a_convolution_job_is_verified_offline(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    request = JobRequest(spec_text="relu(F.conv2d(x, w, b, padding=1)) x [1, 8, 12, 12] w [16, 8, 3, 3] b [16] fp16",
                         out_dir=str(tmp_path / "out"), device="cpu", rounds=1)
    final = run_job(request, settings, lambda stage, message: None)
    assert final["status"] == "verified", final.get("message")
    source = next((tmp_path / "out").glob("*_triton.py")).read_text()
    assert "implicit GEMM" in source and "im2col" in source  # the docstring says no im2col buffer is written
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "tiled" in json.dumps(report["rounds"][0])
    definition = (tmp_path / "out" / "definition.md").read_text()
    # 144 output pixels x 16 channels in 64 x 16 tiles: 3 programs, described as the implicit GEMM they are.
    assert "An implicit GEMM: output pixels are the rows" in definition
    assert "| x [1, 8, 12, 12], w [16, 8, 3, 3], b [16] | 3 |" in definition
