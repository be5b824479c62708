"""The matmul engine: what it takes and refuses, its kernels against PyTorch in the interpreter, its tiles."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import triton

from agent.generators.base import LaunchConfig
from agent.generators.offline.dispatch import OfflineGenerator
from agent.generators.offline.matmul.generator import MatmulGenerator, product_facts
from agent.generators.offline.matmul.space import SHARED_BYTES, shared_bytes
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
    assert isinstance(GENERATOR.engine(spec), MatmulGenerator)
    files = GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100))
    return getattr(load_triton_module(files, folder), spec.name)


def close(got: torch.Tensor, want: torch.Tensor, k: int) -> None:
    """Compare with a float64 reference; half types round each output once and sum K products."""
    tol = 1e-4 if got.dtype == torch.float32 else 1e-2
    torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol * max(1.0, k ** 0.5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m,k,n", [(67, 45, 33), (1, 1, 1), (33, 1, 17), (5, 130, 3), (64, 32, 48)])  # the last by TMA
def test_a_product_matches_pytorch_at_odd_sizes_and_k_of_one(m: int, k: int, n: int, dtype: torch.dtype,
                                                             tmp_path: Path) -> None:
    matmul = kernel_for("C = A @ B, A [64, 32] fp32, B [32, 48] fp32", tmp_path)
    a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
    got = matmul(a, b)
    assert got.dtype == dtype and got.shape == (m, n)
    close(got, a.double() @ b.double(), k)


def test_a_batched_product_and_a_broadcast_batch_match_pytorch(tmp_path: Path) -> None:
    bmm = kernel_for("torch.bmm(a, b) a [3, 40, 24] b [3, 24, 50] fp16", tmp_path / "bmm")
    a, b = torch.randn(5, 19, 37).half(), torch.randn(5, 37, 21).half()
    close(bmm(a, b), a.double() @ b.double(), 37)
    matmul = kernel_for("torch.matmul(a, b) a [20, 16] b [3, 16, 24] fp32", tmp_path / "broadcast")
    a, b = torch.randn(20, 16), torch.randn(3, 16, 24)
    close(matmul(a, b), a.double() @ b.double(), 16)


def test_linear_with_bias_and_gelu_matches_pytorch_on_3d_inputs(tmp_path: Path) -> None:
    linear_gelu = kernel_for("F.gelu(F.linear(x, w, b)) x [2, 37, 64] w [48, 64] b [48] fp16", tmp_path)
    for dtype in (torch.float32, torch.float16):
        x, w, b = torch.randn(3, 7, 65).to(dtype), torch.randn(19, 65).to(dtype), torch.randn(19).to(dtype)
        want = F.gelu(F.linear(x.double(), w.double(), b.double()))
        got = linear_gelu(x, w, b)
        assert got.shape == (3, 7, 19)
        close(got, want, 65)


def test_a_transposed_operand_is_read_through_its_strides_and_a_residual_is_added(tmp_path: Path) -> None:
    text = "out = x @ w.T + residual, x [50, 70] w [30, 70] residual [50, 30] fp16"
    fused = kernel_for(text, tmp_path)
    source = (tmp_path / f"{read_spec(text).name}_triton.py").read_text()
    assert ".transpose(-2, -1)" in source and ".contiguous()" not in source
    x, w, r = torch.randn(33, 70).half(), torch.randn(17, 70).half(), torch.randn(33, 17).half()
    close(fused(x, w, r), x.double() @ w.double().T + r.double(), 70)


def test_epilogue_inputs_spread_over_rows_columns_and_batches(tmp_path: Path) -> None:
    # A residual shared by every batch cannot fold the batch into rows; a bias over N and a scale over M can.
    relu = kernel_for("y = relu(x @ w * 0.5 + r) x [4, 30, 20] w [20, 16] r [30, 16] bf16", tmp_path / "r")
    x, w, r = torch.randn(4, 30, 20).bfloat16(), torch.randn(20, 16).bfloat16(), torch.randn(30, 16).bfloat16()
    close(relu(x, w, r), torch.relu(x.double() @ w.double() * 0.5 + r.double()), 20)
    scaled = kernel_for("out = (a @ b + bias) * s, a [4, 33, 17] b [17, 9] bias [9] s [33, 1] fp32", tmp_path / "s")
    a, b, bias, s = torch.randn(4, 33, 17), torch.randn(17, 9), torch.randn(9), torch.randn(33, 1)
    close(scaled(a, b, bias, s), (a.double() @ b.double() + bias.double()) * s.double(), 17)


@pytest.mark.parametrize("text,reason", [
    ("y = x @ v, x [64, 32] v [32] fp32", "is a vector"),
    ("y = (a @ b) @ c, a [8, 8] b [8, 8] c [8, 8] fp32", "one matrix product per kernel"),
    ("y = (2 * a) @ b, a [8, 8] b [8, 8] fp32", "prologue"),
    ("y = torch.matmul(a, b), a [2, 3, 8, 8] b [2, 3, 8, 8] fp32", "more than one batch dim"),
    # Names the kernel or its wrapper uses: the split-K wrapper's buffer would be returned as the output.
    ("partials = a @ b, a [33, 2048] fp16, b [2048, 17] fp16", "partials name variables of the matmul kernel"),
    ("y = a @ b + finish, a [8, 8] b [8, 8] finish [8, 8] fp16", "finish name variables of the matmul kernel"),
])
def test_what_the_engine_cannot_write_is_refused_with_the_reason(text: str, reason: str) -> None:
    refusal = GENERATOR.refusal(read_spec(text))
    assert refusal is not None and reason in refusal


def test_the_default_tile_is_the_largest_that_still_gives_every_sm_a_tile() -> None:
    big = read_spec("C = A @ B, A [4096, 4096] fp16, B [4096, 4096] fp16")
    assert GENERATOR.default_config(big, "tiled", H100).label() == (
        "tiled: BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, NUM_WARPS=8, NUM_STAGES=3")
    odd = read_spec("C = A @ B, A [1027, 1533] fp16, B [1533, 771] fp16")
    config = GENERATOR.default_config(odd, "tiled", H100)
    assert (config.block_m, config.block_size) == (64, 64)  # 221 tiles; 128x128 would leave 69 SMs idle
    fp32 = read_spec("C = A @ B, A [4096, 4096] fp32, B [4096, 4096] fp32")
    assert GENERATOR.default_config(fp32, "tiled", H100).block_k == 32


def test_a_default_tile_that_leaves_its_last_wave_half_empty_gives_way_only_where_a_smaller_one_is_faster() -> None:
    # [8192, 3072] @ [3072, 768]: 192 tiles of 128x256 are 1.45 waves of 132 SMs; 384 of 128x128 fill 2.9.
    down = read_spec("out = x @ w + residual, x [8192, 3072] w [3072, 768] residual [8192, 768] fp16")
    config = GENERATOR.default_config(down, "tiled", H100)
    assert (config.block_m, config.block_size, config.num_warps) == (128, 128, 8)
    # [2049, 3001]: 64x128 tiles would fill the waves, but run slower than 204 tiles of 128x256.
    linear = read_spec("F.linear(x, w) x [2049, 1023] w [3001, 1023] bf16")
    config = GENERATOR.default_config(linear, "tiled", H100)
    assert (config.block_m, config.block_size) == (128, 256)
    # The convolution keeps the first tile that gives every SM one.
    conv = read_spec("relu(conv2d(x, weight, bias, padding=1)), x [32, 256, 14, 14] fp16, weight [256, 256, 3, 3], "
                     "bias [256]")
    config = OfflineGenerator().default_config(conv, "tiled", H100)
    assert (config.block_m, config.block_size) == (64, 128)


def default_tile(text: str) -> LaunchConfig:
    """Read a spec and return the product's default tile on an H100."""
    return GENERATOR.default_config(read_spec(text), "tiled", H100)


def test_a_residual_over_a_short_k_takes_two_programs_per_sm_and_a_long_k_or_a_plain_product_does_not() -> None:
    # Over K = 256 the residual tile's epilogue outweighs the product: 128x128 in 4 warps lets two programs share
    # an SM (H100, [8192, 256] @ [256, 4096] + residual: 0.0860 ms at 128x256 in 8 warps, 0.0723 so).
    config = default_tile("out = x @ w + residual, x [8192, 256] w [256, 4096] residual [8192, 4096] fp16")
    assert (config.block_m, config.block_size, config.num_warps) == (128, 128, 4)
    # At K = 768 the product dominates again, and a plain product of the same short K keeps the ladder's tile.
    assert default_tile("out = x @ w + residual, x [8192, 768] w [768, 4096] residual [8192, 4096] fp16").num_warps == 8
    config = default_tile("C = A @ B, A [8192, 256] fp16, B [256, 4096] fp16")
    assert (config.block_size, config.num_warps) == (256, 8)
    # Too few such tiles to give every SM one: the ladder decides.
    small = default_tile("out = x @ w + residual, x [512, 256] w [256, 512] residual [512, 512] fp16")
    assert small.num_warps == 4
    assert small == default_tile("C = A @ B, A [512, 256] fp16, B [256, 512] fp16")


def test_an_activation_over_a_short_k_takes_two_8_warp_programs_per_sm() -> None:
    # DeiT-Tiny's up-projection (three K steps, below the TMA kernel's size): 128x128 in 8 warps, 3 stages, on
    # pointers (H100: 0.0396 -> 0.0315 ms).
    short = (128, 128, 8, 3)
    config = default_tile("F.gelu(F.linear(x, w, b)) x [12608, 192] w [768, 192] b [768] fp16")
    assert (config.block_m, config.block_size, config.num_warps, config.num_stages) == short
    # By the persistent TMA kernel (from 2^33 FLOPs) the same tile reaches K = 1024: T5-small's (K = 512) and
    # BERT-large's (K = 1024) up-projections take it, a longer K keeps the ladder's 128x256.
    for text in ("F.gelu(F.linear(x, w, b)) x [8192, 512] w [2048, 512] b [2048] fp16",
                 "F.gelu(F.linear(x, w, b)) x [8192, 1024] w [4096, 1024] b [4096] fp16"):
        config = default_tile(text)
        assert (config.block_m, config.block_size, config.num_warps, config.num_stages) == short
    assert default_tile("F.gelu(F.linear(x, w, b)) x [8192, 2048] w [8192, 2048] b [8192] fp16").block_size == 256
    # Below that size the pointer kernel's limit (K = 384) holds; a batched product never runs the TMA kernel.
    config = default_tile("F.gelu(F.linear(x, w, b)) x [6144, 512] w [1024, 512] b [1024] fp16")
    assert (config.block_m, config.block_size, config.num_warps, config.num_stages) != short
    config = default_tile("F.gelu(torch.bmm(a, b)) a [64, 1024, 128] b [64, 128, 1024] fp16")
    assert (config.block_size, config.num_warps, config.num_stages) == (128, 8, 3)
    # An activation with no other input is work on the tile too; a cast alone is not.
    assert default_tile("F.gelu(x @ w) x [12608, 192] w [192, 768] fp16").block_size == 128
    assert default_tile("(x @ w).float() x [12608, 192] w [192, 768] fp16").block_size == 256


def test_the_short_k_tile_runs_two_flattened_tma_programs_per_sm_and_others_one(tmp_path: Path) -> None:
    spec = read_spec("F.gelu(F.linear(x, w, b)) x [8192, 512] w [2048, 512] b [2048] fp16")
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    module.multiprocessor_count = lambda device: 2  # two SMs
    tma = module.linear_gelu_kernel_tma = Recorder(module.linear_gelu_kernel_tma)
    x, w, b = torch.randn(300, 64).half(), torch.randn(200, 64).half(), torch.randn(200).half()
    reference = F.gelu(F.linear(x.double(), w.double(), b.double()))
    # Six 128x128 tiles for four programs (two per SM), the loops flattened, each tile stored in halves.
    close(module.linear_gelu(x, w, b), reference, 64)
    plan = list(module.PLANS.values())[-1]
    assert tma.grids == [(4, 1, 1)] and plan.constants["WARP_SPECIALIZE"] is False
    assert plan.tma[2][2] == [128, 64]
    # The rule reads the module's tile at run time, as a search sets it: any other tile runs one program per SM,
    # warp-specialized.
    module.NUM_STAGES = 4
    close(module.linear_gelu(x, w, b), reference, 64)
    plan = list(module.PLANS.values())[-1]
    assert tma.grids[-1] == (2, 1, 1) and plan.constants["WARP_SPECIALIZE"] is True


def test_the_search_space_keeps_only_tiles_that_fit_and_says_what_it_dropped() -> None:
    spec = read_spec("C = A @ B, A [1027, 1533] fp16, B [1533, 771] fp16")
    space = GENERATOR.config_space(spec, "tiled", H100)
    facts = product_facts(spec, H100)
    assert space.kept and all(shared_bytes(c, 2) <= SHARED_BYTES for c in space.kept)
    assert "operand ring over shared memory" in space.summary()
    assert "accumulator over the register budget" in space.summary()
    assert (facts.m, facts.n, facts.k) == (1027, 771, 1533)


def test_a_launch_constant_set_between_calls_changes_the_next_launch(tmp_path: Path) -> None:
    spec = read_spec("C = A @ B, A [64, 32] fp32, B [32, 48] fp32")
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    module.matmul(a, b)
    module.BLOCK_M = 16
    close(module.matmul(a, b), a.double() @ b.double(), 64)
    assert module.launch_sizes.cache_info().currsize == 2  # one tile per set of constants, none stale
    launch = (16, module.BLOCK_N, module.BLOCK_K, module.GROUP_M, module.NUM_WARPS, module.NUM_STAGES)
    assert module.launch_sizes(64, 64, 64, 1, 4096, 132, launch)[0] == 16


def test_the_generated_accuracy_file_passes_and_scales_the_tolerance_with_k(tmp_path: Path) -> None:
    spec = read_spec("C = A @ B, A [67, 45] fp16, B [45, 33] fp16")
    load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    accuracy = (tmp_path / "matmul_accuracy.py").read_text()
    assert "math.sqrt(length)" in accuracy
    done = subprocess.run([sys.executable, "matmul_accuracy.py", "--json", "result.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    result = json.loads((tmp_path / "result.json").read_text())
    assert done.returncode == 0 and result["status"] == "pass", done.stdout[-2000:]
    assert any(case["shapes"]["A"] == [1, 1] for case in result["cases"])


def test_a_linear_gelu_job_is_verified_offline(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    request = JobRequest(spec_text="linear + bias + GELU: x [2048, 1024], weight [1024, 1024], bias [1024] fp16",
                         out_dir=str(tmp_path / "out"), device="cpu", rounds=1)
    final = run_job(request, settings, lambda stage, message: None)
    assert final["status"] == "verified", final.get("message")
    assert "tl.dot(a, b, acc" in (tmp_path / "out" / "linear_gelu_triton.py").read_text()
    definition = (tmp_path / "out" / "definition.md").read_text()
    assert "| compute |" in definition  # 411 FLOP/byte, above the tensor cores' ridge of 295
    assert "16-bit matrix products are held to the tensor cores' 989.4 TFLOP/s" in definition


class Recorder:
    """Stand in front of a generated kernel and count its launches (each launch still runs the real kernel)."""

    def __init__(self, kernel) -> None:  # noqa: ANN001
        self.kernel, self.launches, self.grids = kernel, 0, []

    def __getitem__(self, grid):  # noqa: ANN001, ANN204
        self.launches += 1
        self.grids.append(grid)
        return self.kernel[grid]


def test_aligned_operands_go_by_tma_descriptors_and_odd_ones_by_pointers(tmp_path: Path) -> None:
    # TMA needs rows on 16-byte boundaries: [64, 48] fp16 rows are 96 bytes, [33, 45] rows 90 (Hopper, and the
    # interpreter, which runs descriptors too; bfloat16 takes the pointer path there, numpy has no bfloat16).
    spec = read_spec("out = x @ w.T + bias, x [50, 64] w [32, 64] bias [32] fp16")
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    tma = module.transpose_matmul_kernel_tma = Recorder(module.transpose_matmul_kernel_tma)
    pointers = module.transpose_matmul_kernel = Recorder(module.transpose_matmul_kernel)
    x, w, b = torch.randn(64, 48).half(), torch.randn(40, 48).half(), torch.randn(40).half()
    close(module.transpose_matmul(x, w, b), x.double() @ w.double().T + b.double(), 48)
    assert (tma.launches, pointers.launches) == (1, 0)
    x, w, b = torch.randn(33, 45).half(), torch.randn(17, 45).half(), torch.randn(17).half()
    close(module.transpose_matmul(x, w, b), x.double() @ w.double().T + b.double(), 45)
    assert (tma.launches, pointers.launches) == (1, 1)
    x, w, b = torch.randn(64, 48).half(), torch.randn(40, 48).half(), torch.randn(40).half()
    close(module.transpose_matmul(x.T.contiguous().T, w, b), x.double() @ w.double().T + b.double(), 48)
    assert tma.launches == 2  # a column-major operand is read transposed by its descriptor


def test_tma_descriptors_are_made_in_the_kernel_for_small_products_and_on_the_host_for_large(tmp_path: Path) -> None:
    # On a GPU the FLOPs decide (TMA_HOST_DESCRIPTORS_MIN_FLOPS); the interpreter checks both ways by dtype.
    spec = read_spec("out = x @ w.T + bias, x [50, 64] w [32, 64] bias [32] fp16")
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    tma = module.transpose_matmul_kernel_tma = Recorder(module.transpose_matmul_kernel_tma)
    for dtype, in_kernel in ((torch.float16, True), (torch.float32, False)):
        x, w, b = (torch.randn(shape).to(dtype) for shape in ((64, 48), (40, 48), (40,)))
        close(module.transpose_matmul(x.T.contiguous().T, w, b), x.double() @ w.double().T + b.double(), 48)
        plan = list(module.PLANS.values())[-1]
        assert plan.tma and plan.constants["DEVICE_DESCRIPTORS"] is in_kernel
    assert tma.launches == 2


def test_a_call_laid_out_as_an_earlier_one_reuses_its_plan_and_any_other_layout_gets_its_own(tmp_path: Path) -> None:
    spec = read_spec("out = x @ w.T + bias, x [50, 64] w [32, 64] bias [32] fp16")
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    tma = module.transpose_matmul_kernel_tma = Recorder(module.transpose_matmul_kernel_tma)

    def check(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, plans: int) -> None:
        close(module.transpose_matmul(x, w, b), x.double() @ w.double().T + b.double(), x.shape[-1])
        assert len(module.PLANS) == plans

    for _ in range(2):  # fresh values, the same layout: one plan, still by TMA
        check(torch.randn(64, 48).half(), torch.randn(40, 48).half(), torch.randn(40).half(), 1)
    assert tma.launches == 2
    w = torch.randn(40, 48).half()
    check(torch.randn(64, 48).half(), w.T.contiguous().T, torch.randn(40).half(), 2)  # column-major w
    storage = torch.randn(64 * 48 + 1).half()
    x = storage[1:].view(64, 48)  # 2 bytes past 16: no TMA; a padded copy in the interpreter
    for _ in range(2):
        storage.normal_()
        check(x, torch.randn(40, 48).half(), torch.randn(40).half(), 3)
    assert tma.launches == 3
    check(torch.randn(64, 32).half(), torch.randn(40, 32).half(), torch.randn(40).half(), 4)  # another K


def test_inputs_the_kernel_reads_through_a_copy_are_planned_again_each_call(tmp_path: Path) -> None:
    linear = kernel_for("F.linear(x, w) x [4, 8, 32] w [16, 32] fp32", tmp_path)
    module = sys.modules[linear.__module__]
    for _ in range(2):
        x, w = torch.randn(8, 4, 32).transpose(0, 1), torch.randn(16, 32)  # [4, 8] rows do not flatten in place
        close(linear(x, w), x.double() @ w.double().T, 32)
    assert not module.PLANS


def test_an_epilogue_reading_a_whole_tile_keeps_the_pointer_kernel(tmp_path: Path) -> None:
    # A residual tile converted through shared memory beside TMA's operand ring overflowed it on the H100.
    spec = read_spec("out = x @ w + residual, x [64, 48] w [48, 32] residual [64, 32] fp16")
    load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    assert "_kernel_tma" not in (tmp_path / f"{spec.name}_triton.py").read_text()


def test_a_tiled_label_round_trips_through_the_config_rules() -> None:
    from agent.generators.config_rules import config_from_label

    label = "tiled: BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, NUM_WARPS=8, NUM_STAGES=3"
    config = config_from_label(label)
    assert (config.block_m, config.block_size, config.block_k, config.num_stages) == (128, 256, 64, 3)
    assert config.label() == label


@pytest.mark.parametrize("shapes", [
    ((33, 45), (45, 17)),  # rows of 45 and 17 half elements start off 16-byte boundaries
    ((4, 30, 20), (20, 9)),  # a batch folded into the rows
    ((20, 16), (3, 16, 24)),  # a batch of A broadcast over B's
    ((2, 7, 70), (2, 70, 5)),  # batched, K past one shared tile
])
def test_half_operands_off_16_byte_rows_are_multiplied_as_padded_copies(shapes: tuple, tmp_path: Path) -> None:
    # On a GPU such operands load 2 bytes at a time in place; the interpreter pads half ones, reads others in place.
    spec = read_spec("C = torch.matmul(A, B), A [4, 30, 20] fp16, B [20, 9] fp16")
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    pad = module.pad_operands_kernel = Recorder(module.pad_operands_kernel)
    a, b = torch.randn(*shapes[0]), torch.randn(*shapes[1])
    close(getattr(module, spec.name)(a.half(), b.half()), a.half().double() @ b.half().double(), a.shape[-1])
    assert pad.launches == 1
    close(getattr(module, spec.name)(a, b), a.double() @ b.double(), a.shape[-1])
    assert pad.launches == 1  # float32 read in place


def test_a_triton_without_tensor_descriptors_multiplies_with_the_pointer_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Triton before 3.4 (the package allows 3.2) and some backends have no `triton.tools.tensor_descriptor`.
    monkeypatch.setitem(sys.modules, "triton.tools.tensor_descriptor", None)  # its import now fails
    spec = read_spec("C = A @ B, A [64, 32] fp16, B [32, 48] fp16")
    module = load_triton_module(GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), tmp_path)
    assert module.TensorDescriptor is None
    pointers = module.matmul_kernel = Recorder(module.matmul_kernel)
    a, b = torch.randn(64, 32).half(), torch.randn(32, 48).half()  # aligned: TMA where descriptors exist
    close(module.matmul(a, b), a.double() @ b.double(), 32)
    assert pointers.launches == 1



def test_few_output_tiles_over_a_long_k_split_it_and_add_the_partial_sums_before_the_epilogue(tmp_path: Path) -> None:
    # The interpreter splits float16 products as a GPU of 16 SMs would: a tile or two and 16+ steps of K.
    product = load_triton_module(*module_files("C = A @ B, A [33, 2048] fp16, B [2048, 17] fp16", tmp_path / "mm"))
    kernel = product.matmul_kernel = Recorder(product.matmul_kernel)
    a, b = torch.randn(33, 2048).half(), torch.randn(2048, 17).half()
    close(product.matmul(a, b), a.double() @ b.double(), 2048)
    assert kernel.grids == [(1, 1, 4)]  # one tile, four K slices
    a, b = torch.randn(33, 2048), torch.randn(2048, 17)  # float32: the interpreter keeps one program per tile
    close(product.matmul(a, b), a.double() @ b.double(), 2048)
    assert kernel.grids[1] == (1, 1, 1)
    # K off the tile (17 steps: slices of 9 and 8, the last step masked), a batch, a bias and GELU after the sum;
    # and a transposed operand.
    linear = load_triton_module(*module_files("F.gelu(F.linear(x, w, b)) x [2, 9, 1040] w [20, 1040] b [20] fp16",
                                              tmp_path / "linear"))
    split_linear = linear.linear_gelu_kernel = Recorder(linear.linear_gelu_kernel)
    x, w, bias = torch.randn(2, 9, 1040).half(), torch.randn(20, 1040).half(), torch.randn(20).half()
    close(linear.linear_gelu(x, w, bias), F.gelu(F.linear(x.double(), w.double(), bias.double())), 1040)
    bmm = load_triton_module(*module_files("torch.bmm(a, b) a [3, 16, 1536] b [3, 1536, 24] fp16", tmp_path / "bmm"))
    split_bmm = bmm.bmm_kernel = Recorder(bmm.bmm_kernel)
    a, b = torch.randn(3, 16, 1536).half(), torch.randn(3, 24, 1536).half().transpose(1, 2)
    close(bmm.bmm(a, b), a.double() @ b.double(), 1536)
    assert split_linear.grids[0] == (1, 1, 2) and split_bmm.grids[0][2] > 1


def module_files(text: str, folder: Path) -> tuple:
    spec = read_spec(text)
    return GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)), folder


def test_an_epilogue_is_warp_specialized_where_triton_can_and_kept_on_pointers_where_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = read_spec("F.gelu(F.linear(x, w, b)) x [64, 32] w [48, 32] b [48] fp16")
    files = GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100))
    assert "warp_specialize=True" in files.files["linear_gelu_triton.py"]
    plain = read_spec("C = A @ B, A [64, 32] fp16, B [32, 48] fp16")
    assert "warp_specialize" not in GENERATOR.generate(plain, GENERATOR.default_config(plain, "tiled", H100)).files[
        "matmul_triton.py"]

    class RangeBeforeWarpSpecialization(triton.language.range):  # tl.range as Triton 3.3 and older take it
        def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,  # noqa: ANN001
                     disallow_acc_multi_buffer=False, flatten=False) -> None:  # noqa: ANN001
            super().__init__(arg1, arg2, step, num_stages, loop_unroll_factor, disallow_acc_multi_buffer, flatten)

    monkeypatch.setattr(triton.language, "range", RangeBeforeWarpSpecialization)
    module = load_triton_module(files, tmp_path)
    assert module.TensorDescriptor is None
    pointers = module.linear_gelu_kernel = Recorder(module.linear_gelu_kernel)
    x, w, b = torch.randn(64, 32).half(), torch.randn(48, 32).half(), torch.randn(48).half()
    close(module.linear_gelu(x, w, b), F.gelu(F.linear(x.double(), w.double(), b.double())), 32)
    assert pointers.launches == 1

@pytest.mark.parametrize("text", [
    "C = A @ B, A [64, 32] fp16, B [32, 48] fp16",
    "F.gelu(F.linear(x, w, b)) x [64, 32] w [48, 32] b [48] fp16",
    "out = x @ w + residual, x [64, 32] w [32, 48] residual [64, 48] bf16",
    "y = A @ B * s, A [64, 32] fp16, B [32, 48] fp16, s [64, 1] fp16",
])
def test_the_four_generated_files_have_no_dead_names(text: str, tmp_path: Path) -> None:
    spec = read_spec(text)
    for name, content in GENERATOR.generate(spec, GENERATOR.default_config(spec, "tiled", H100)).files.items():
        (tmp_path / name).write_text(content)
    # Pyflakes' rules: names assigned and never read, imports unused, undefined names.
    found = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F", str(tmp_path)],
                           capture_output=True, text=True)
    assert found.returncode == 0, found.stdout
