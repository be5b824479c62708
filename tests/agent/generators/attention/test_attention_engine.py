"""The attention engine: what it takes and refuses, and its kernels against PyTorch in the interpreter."""

import json
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from agent.generators.offline.attention.generator import AttentionGenerator
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
    assert isinstance(GENERATOR.engine(spec), AttentionGenerator)
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "flash", H100)), folder)
    return getattr(module, spec.name)


def reference(q, k, v, **kwargs) -> torch.Tensor:  # noqa: ANN001
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), **kwargs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_causal_attention_matches_pytorch_with_more_keys_than_queries_and_odd_head_dims(dtype: torch.dtype,
                                                                                        tmp_path: Path) -> None:
    attention = kernel_for("causal attention, q k v [2, 3, 64, 32] fp16", tmp_path)
    tol = 2e-4 if dtype == torch.float32 else 2e-2
    # PyTorch's is_causal aligns the mask top-left: query i sees keys 0..i, also when there are more keys.
    for lq, lk, d in ((64, 64, 32), (5, 9, 3), (70, 33, 20), (1, 1, 1)):
        q, k, v = (torch.randn(2, 3, n, d).to(dtype) for n in (lq, lk, lk))
        want = reference(q, k, v, is_causal=True)
        torch.testing.assert_close(attention(q, k, v).double(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize(("block_m", "block_n"), [(16, 16), (32, 16), (16, 32)])
def test_blocks_before_the_diagonal_run_unmasked_and_the_diagonal_and_ragged_blocks_masked(
    block_m: int, block_n: int, tmp_path: Path,
) -> None:
    # Small tiles put many query blocks on each head: the keys before a block's first query take the unmasked
    # path, the diagonal block and a ragged last key block the masked one, with tiles taller or wider than the other.
    for causal, text in ((True, "causal attention, q k v [2, 3, 64, 32] fp32"),
                         (False, "F.scaled_dot_product_attention(q, k, v) q k v [2, 3, 64, 32] fp32")):
        spec = read_spec(text)
        module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "flash", H100)),
                                    tmp_path / str(causal))
        module.BLOCK_M, module.BLOCK_N = block_m, block_n
        for lq, lk in ((50, 50), (37, 61), (61, 37), (48, 64)):
            q, k, v = (torch.randn(1, 2, n, 32) for n in (lq, lk, lk))
            want = reference(q, k, v, is_causal=causal)
            torch.testing.assert_close(getattr(module, spec.name)(q, k, v).double(), want, rtol=2e-4, atol=2e-4)


class Recorder:
    """Stand in for a kernel: record each launch's grid and TMA flag, and launch the real one (unless told not to)."""

    def __init__(self, kernel, launch: bool = True) -> None:  # noqa: ANN001
        self.kernel, self.launch, self.tma, self.grids = kernel, launch, [], []

    def __getitem__(self, grid):  # noqa: ANN001, ANN204
        def launch(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            self.tma.append(kwargs["TMA"])
            self.grids.append(grid)
            return self.kernel[grid](*args, **kwargs) if self.launch else None
        return launch


def recorded(text: str, folder: Path, launch: bool = True):  # noqa: ANN201 - a generated module
    """Load the spec's default kernel file with a Recorder in place of its kernel; return spec, module, recorder."""
    spec = read_spec(text)
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "flash", H100)), folder)
    recorder = Recorder(getattr(module, f"{spec.name}_kernel"), launch)
    setattr(module, f"{spec.name}_kernel", recorder)
    return spec, module, recorder


@pytest.mark.parametrize("causal", [True, False])
def test_programs_fewer_than_tiles_take_tile_after_tile(causal: bool, tmp_path: Path) -> None:
    # 24 tiles (6 heads x 4 query blocks) over 5 programs: some take five tiles, some four; every output row is
    # written once and matches.
    text = "causal attention, q k v [2, 3, 64, 32] fp32" if causal else \
        "F.scaled_dot_product_attention(q, k, v) q k v [2, 3, 64, 32] fp32"
    spec, module, recorder = recorded(text, tmp_path)
    module.BLOCK_M, module.BLOCK_N = 16, 16
    module.multiprocessor_count = lambda device: 5
    q, k, v = (torch.randn(2, 3, 61, 32) for _ in range(3))
    want = reference(q, k, v, is_causal=causal)
    torch.testing.assert_close(getattr(module, spec.name)(q, k, v).double(), want, rtol=2e-4, atol=2e-4)
    assert recorder.grids == [(5,)]


@pytest.mark.parametrize(("text", "programs"), [
    # Head dim 128's 128 x 128 tiles with a 3-deep key and value ring fill an SM's shared memory: one program per
    # SM walks the tiles. Head dim 64's share an SM, and causal tiles differ in length: a program a tile.
    ("F.scaled_dot_product_attention(q, k, v) q k v [1, 2, 2048, 128] bf16", 7),
    ("F.scaled_dot_product_attention(q, k, v) q k v [1, 2, 2048, 64] bf16", 32),
    ("causal attention, q k v [1, 2, 2048, 128] bf16", 32),
    # More tiles than one launch starts: the programs loop (before, more than 65535 heads were refused).
    ("F.scaled_dot_product_attention(q, k, v) q k v [70000, 16, 16] fp32", 65535),
])
def test_on_a_gpu_only_programs_that_fill_an_sm_stay_for_more_tiles(text: str, programs: int,
                                                                      tmp_path: Path) -> None:
    spec, module, recorder = recorded(text, tmp_path, launch=False)
    module.DEVICE = "cuda"  # the wrapper's GPU rule, on tensors here; the kernel is recorded, not launched
    module.multiprocessor_count = lambda device: 7
    shape, dtype = spec.shape_cases()[0]["q"], {"bf16": torch.bfloat16, "fp32": torch.float32}[text.split()[-1]]
    getattr(module, spec.name)(*(torch.zeros(shape, dtype=dtype) for _ in range(3)))
    assert recorder.grids == [(programs,)]


@pytest.mark.parametrize("causal", [True, False])
def test_half_keys_and_values_of_power_of_two_head_dims_go_by_tma_descriptors(causal: bool, tmp_path: Path) -> None:
    # Hopper moves the unmasked key blocks by TMA; the interpreter runs the descriptors too (float16 only).
    text = "causal attention, q k v [2, 3, 64, 32] fp16" if causal else \
        "F.scaled_dot_product_attention(q, k, v) q k v [2, 3, 64, 32] fp16"
    spec, module, recorder = recorded(text, tmp_path)
    module.BLOCK_M, module.BLOCK_N = 16, 16  # several unmasked key blocks before each diagonal
    for lq, lk, d, dtype in ((50, 50, 32, torch.float16), (37, 61, 64, torch.float16), (61, 37, 16, torch.float16),
                             (40, 40, 20, torch.float16), (40, 40, 32, torch.float32)):
        q, k, v = (torch.randn(2, 2, n, d).to(dtype) for n in (lq, lk, lk))
        want = reference(q, k, v, is_causal=causal)
        tol = 2e-2 if dtype == torch.float16 else 2e-4
        torch.testing.assert_close(getattr(module, spec.name)(q, k, v).double(), want, rtol=tol, atol=tol)
    # A head dim of 20 is no power of two, and float32 keeps the pointer loads.
    assert recorder.tma == [True, True, True, False, False]


def test_a_triton_without_tensor_descriptors_reads_keys_by_pointers(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Triton before 3.4 (the package allows 3.2) and some backends have no `triton.tools.tensor_descriptor`.
    monkeypatch.setitem(sys.modules, "triton.tools.tensor_descriptor", None)  # its import now fails
    _, module, recorder = recorded("causal attention, q k v [2, 3, 64, 32] fp16", tmp_path)
    assert module.TensorDescriptor is None
    q, k, v = (torch.randn(1, 2, 40, 32).half() for _ in range(3))
    want = reference(q, k, v, is_causal=True)
    torch.testing.assert_close(module.attention(q, k, v).double(), want, rtol=2e-2, atol=2e-2)
    assert recorder.tma == [False]


def test_an_additive_mask_and_a_scale_are_applied_and_a_fully_masked_row_is_zero_as_in_pytorch(tmp_path: Path) -> None:
    text = "F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3) q [2, 4, 40, 16] k [2, 4, 50, 16] " \
           "v [2, 4, 50, 24] m [40, 50] fp32"
    attention = kernel_for(text, tmp_path)
    q, k, v, m = torch.randn(2, 4, 40, 16), torch.randn(2, 4, 50, 16), torch.randn(2, 4, 50, 24), torch.randn(40, 50)
    m[7] = float("-inf")
    got = attention(q, k, v, m)
    want = reference(q, k, v, attn_mask=m.double(), scale=0.3)
    assert (want[:, :, 7] == 0).all()  # PyTorch's safe softmax: no NaN for a row that sees no key
    torch.testing.assert_close(got.double(), want, rtol=2e-4, atol=2e-4)
    q[0, 0, 3, 0] = float("nan")
    assert torch.isnan(attention(q, k, v, m)[0, 0, 3]).all()


@pytest.mark.parametrize("scale", [0.3, -0.3, 0.0])
def test_a_scale_of_either_sign_or_zero_gives_pytorchs_softmax(scale: float, tmp_path: Path) -> None:
    # A positive scale takes each row's max on the raw products; a negative one would turn that max into a min,
    # and zero times a masked -inf is NaN: both keep the scaled scores. The reference is the softmax written out:
    # PyTorch's own causal attention with a negative scale gives NaN (seen on the CPU in float64).
    attention = kernel_for(f"causal attention with scale={scale}, q k v [1, 2, 37, 16] fp32", tmp_path)
    q, k, v = (torch.randn(1, 2, 37, 16) * 3 for _ in range(3))
    scores = (q.double() @ k.double().transpose(-1, -2) * scale).masked_fill(
        torch.ones(37, 37, dtype=torch.bool).triu(1), float("-inf"))
    want = torch.softmax(scores, dim=-1) @ v.double()
    torch.testing.assert_close(attention(q, k, v).double(), want, rtol=2e-4, atol=2e-4)


def test_three_dim_inputs_and_large_values_stay_finite(tmp_path: Path) -> None:
    attention = kernel_for("F.scaled_dot_product_attention(q, k, v) q [3, 50, 32] k [3, 70, 32] v [3, 70, 32] bf16",
                           tmp_path)
    q, k, v = (torch.randn(3, n, 32).bfloat16() * 8 for n in (50, 70, 70))
    got = attention(q, k, v)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.double(), reference(q, k, v), rtol=3e-2, atol=6e-2)


@pytest.mark.parametrize("text,reason", [
    ("F.scaled_dot_product_attention(q, k, v) + 1 q k v [2, 8, 64, 32] fp16", "epilogue after attention"),
    ("F.scaled_dot_product_attention(q, k, v) q [2, 8, 64, 32] k [2, 1, 64, 32] v [2, 1, 64, 32] fp16",
     "share their leading"),
])
def test_what_the_engine_cannot_write_is_refused_with_the_reason(text: str, reason: str) -> None:
    refusal = GENERATOR.refusal(read_spec(text))
    assert refusal is not None and reason in refusal, refusal


def test_the_defaults_and_the_space_follow_the_head_dim() -> None:
    spec = read_spec("causal attention, q k v [4, 16, 4096, 128] bf16")
    assert GENERATOR.default_config(spec, "flash", H100).label() == (
        "flash: BLOCK_M=128, BLOCK_N=128, NUM_WARPS=8, NUM_STAGES=3")
    space = GENERATOR.config_space(spec, "flash", H100)
    assert space.kept and "over" in space.summary()


def test_a_causal_attention_job_is_verified_offline(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    request = JobRequest(spec_text="causal attention, q k v [1, 2, 96, 64] fp16", out_dir=str(tmp_path / "out"),
                         device="cpu", rounds=1)
    final = run_job(request, settings, lambda stage, message: None)
    assert final["status"] == "verified", final.get("message")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "flash" in json.dumps(report["rounds"][0])
