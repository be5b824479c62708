"""Few long rows split across programs: which specs get it, what it refuses, and its kernels against PyTorch.

The kernels run in the Triton interpreter, where the wrapper counts the CPU's cores as SMs: the tests ask for many
programs per SM and short chunks so that every row is dealt out to several programs, some with no chunk at all.
"""

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from agent.generators.offline.dispatch import OfflineGenerator
from agent.generators.offline.rows.generator import launched_on
from agent.generators.offline.rows.split import split_refusal
from agent.reader import read_spec
from agent.runner import run_job
from agent.runtime.devices import DeviceInfo
from agent.state import JobRequest
from kernelgen.settings import Settings
from tests.agent.generators.kernels import load_triton_module

CPU = DeviceInfo(kind="cpu", name="cpu")
H100 = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)
Reference = Callable[..., torch.Tensor]


@pytest.mark.parametrize("text", [
    "sum of all elements of x [8192, 4096] fp32",  # one row of 33.5M
    "row sum, x [8, 4194304] fp32",
    "x.sum(dim=0), x [4194304, 8] fp32",  # a column sum of a tall matrix: 8 lanes, one tile
    "torch.amax(x, dim=-1) x [4, 8388608] fp16",
    "L2 norm of each row of x [16, 2097152] bf16",
])
def test_few_long_rows_start_split_across_programs(text: str) -> None:
    assert OfflineGenerator().schedules(read_spec(text))[0] == "split_row"


def test_many_rows_or_a_small_tensor_are_not_split_first() -> None:
    generator = OfflineGenerator()
    assert "split_row" not in generator.schedules(read_spec("row sum, x [8192, 4096] fp32"))  # 62 rows per SM
    # Three rows of 5000: one launch beats two, though the split stays on offer for the search.
    assert generator.schedules(read_spec("row sum, x [3, 5000] fp32"))[-1] == "split_row"


@pytest.mark.parametrize(("text", "reason"), [
    ("torch.var(x, dim=-1) x [4, 1048576]", "a reduction reads another"),
    ("softmax over the last dim of x [4, 1048576]", "writes every element"),
    ("mse loss of a [4, 1048576] and b [4, 1048576]", "a loss reduced to one number"),
    ("torch.cumsum(x, dim=-1) x [4, 1048576]", "writes every element"),
])
def test_what_the_split_cannot_take_keeps_one_program_per_row_and_says_why(text: str, reason: str) -> None:
    generator = OfflineGenerator()
    spec = read_spec(text)
    graph = generator.rows.graph(spec)
    assert reason in (split_refusal(graph.root, graph.total) or "")
    assert "split_row" not in generator.schedules(spec)


def test_the_split_defaults_take_16_kb_chunks_and_four_programs_per_sm() -> None:
    generator = OfflineGenerator()
    fp32 = generator.default_config(read_spec("sum of all elements of x [8192, 4096] fp32"), "split_row", H100)
    fp16 = generator.default_config(read_spec("torch.amax(x, dim=-1) x [4, 8388608] fp16"), "split_row", H100)
    strided = generator.default_config(read_spec("x.sum(dim=0), x [4194304, 8] fp32"), "split_row", H100)
    assert (fp32.block_size, fp32.num_warps, fp32.programs_per_sm) == (4096, 8, 4)
    assert (fp16.block_size, fp16.num_warps) == (8192, 16)
    assert (strided.block_m, strided.block_size) == (8, 512)  # all 8 columns side by side: coalesced rows
    space = generator.config_space(read_spec("x.sum(dim=0), x [4194304, 8] fp32"), "split_row", H100)
    assert space.kept and all(c.block_m >= 8 for c in space.kept)
    assert "uncoalesced" in space.summary()


@pytest.mark.parametrize("text", ["torch.sum(x, dim=-1) x [64, 20000] fp16",
                                  "torch.amax(x, dim=-1) x [64, 20000] bf16"])
def test_a_split_default_over_few_long_half_rows_is_in_its_own_search_and_launches_the_same_grid(text: str) -> None:
    generator = OfflineGenerator()
    spec = read_spec(text)
    default = generator.default_config(spec, "split_row", H100)
    # A configuration a diagnosis prefers is measured unless the space drops it: the default is not dropped.
    assert default in generator.config_space(spec, "split_row", H100, preferred=[default]).kept
    four_per_sm = default.model_copy(update={"programs_per_sm": 4})  # the rule's figure, capped by the wrapper
    case = spec.shape_cases()[0]
    assert launched_on(spec, default, case, H100) == launched_on(spec, four_per_sm, case, H100)


CASES: list[tuple[str, Reference]] = [
    ("sum of all elements of x [33, 257]", lambda x: x.sum()),
    ("row sum, x [3, 1031]", lambda x: x.sum(-1)),
    ("torch.sum(x, dim=-1, keepdim=True) x [2, 700]", lambda x: x.sum(-1, keepdim=True)),
    ("mean over dim 1 of x [2, 611, 5]", lambda x: x.mean(1)),
    ("torch.amax(x, dim=-1) x [3, 900]", lambda x: x.amax(-1)),
    ("min of x [700, 3] along dim 0", lambda x: x.amin(0)),
    ("prod of x [2, 513] along dim 1", lambda x: x.prod(1)),
    ("torch.linalg.vector_norm(x, ord=2, dim=-1) x [4, 777]", lambda x: torch.linalg.vector_norm(x, 2, -1)),
    ("torch.linalg.vector_norm(x, ord=1, dim=0) x [611, 3]", lambda x: torch.linalg.vector_norm(x, 1, 0)),
]


@pytest.mark.parametrize(("text", "reference"), CASES, ids=[c[0] for c in CASES])
def test_a_split_row_kernel_matches_pytorch(text: str, reference: Reference, tmp_path: Path) -> None:
    generator = OfflineGenerator()
    spec = read_spec(text)
    assert split_refusal(generator.rows.graph(spec).root, None) is None
    # 32-element chunks and 16 programs per core: rows of several hundred go to a few dozen programs.
    config = generator.default_config(spec, "split_row", CPU).model_copy(
        update={"block_size": 32, "programs_per_sm": 16})
    kernel = getattr(load_triton_module(generator.generate(spec, config), tmp_path), spec.name)
    name = spec.inputs[0].name
    first = spec.shape_cases()[0][name]
    shapes = [first, [1] * len(first), [max(1, d // 7) for d in first]]  # the spec's, rows of length 1, short rows
    for index, shape in enumerate(shapes):
        for dtype in (torch.float32, torch.float16):
            torch.manual_seed(index)
            x = torch.randn(shape).to(dtype)
            if spec.expr.op == "prod":
                x = (1 + 0.01 * x.float()).to(dtype)  # a product of hundreds of N(0, 1) values underflows to 0
            got, want = kernel(x), reference(x.double())
            assert got.shape == want.shape and got.dtype == dtype
            tolerance = 1e-4 if dtype == torch.float32 else 2e-2
            scale = max(1.0, (x.numel() / max(1, want.numel())) ** 0.5)
            torch.testing.assert_close(got.double(), want, rtol=tolerance, atol=tolerance * scale,
                                       msg=lambda m, where=(shape, dtype): f"{where}: {m}")


def test_a_split_max_keeps_a_nan_from_any_span_and_sums_are_the_same_every_run(tmp_path: Path) -> None:
    generator = OfflineGenerator()
    files = {}
    for text in ("torch.amax(x, dim=-1) x [3, 900]", "sum of all elements of x [33, 257]"):
        spec = read_spec(text)
        config = generator.default_config(spec, "split_row", CPU).model_copy(
            update={"block_size": 32, "programs_per_sm": 16})
        files[spec.expr.op] = getattr(load_triton_module(generator.generate(spec, config), tmp_path / spec.name),
                                      spec.name)
    x = torch.randn(3, 900)
    x[1, 777] = float("nan")  # in a late span of row 1
    x[2, 5] = float("inf")
    got = files["amax"](x)
    assert torch.isnan(got[1]) and got[2] == float("inf") and got[0] == x[0].max()
    y = torch.randn(33, 257)
    # The last program folds the partials in split order (its ticket is atomic, the sum is not): the same bits.
    assert torch.equal(files["sum"](y), files["sum"](y))


def test_a_row_starts_aligned_as_the_wrapper_works_it_out(tmp_path: Path) -> None:
    # Told that rows of 5000 fp16 values start at multiples of 8 elements, the compiler keeps 16-byte loads
    # (H100, softmax over [8192, 5000] fp16: 0.063 ms, against 0.106 ms without the hint).
    generator = OfflineGenerator()
    spec = read_spec("softmax over the last dim of x [8192, 5000] fp16")
    module = load_triton_module(generator.generate(spec, generator.default_config(spec, "whole_row", CPU)), tmp_path)
    assert "tl.multiple_of(lanes * x_sm, ROW_ALIGN)" in (tmp_path / "softmax_triton.py").read_text()
    assert module.launch_plan(((8192, 5000),), (torch.float16,))[-1] == 8
    assert module.launch_plan(((8192, 4096),), (torch.float16,))[-1] == 16
    assert module.launch_plan(((3, 257),), (torch.float16,))[-1] == 1
    x = torch.randn(5, 257).half()
    torch.testing.assert_close(module.softmax(x).float(), x.float().softmax(-1), rtol=2e-2, atol=2e-3)


def test_a_whole_tensor_sum_job_is_verified_with_the_split_row(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    request = JobRequest(spec_text="sum of all elements of x [300, 4001] fp32", out_dir=str(tmp_path / "out"),
                         device="cpu", rounds=1)
    final = run_job(request, settings, lambda stage, message: None)
    assert final["status"] == "verified", final.get("message")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "split_row" in json.dumps(report["rounds"][0])
    assert "reduce_sum_kernel[grid + (n_splits,)]" in (tmp_path / "out" / "reduce_sum_triton.py").read_text()
    definition = (tmp_path / "out" / "definition.md").read_text()
    assert "chunks shared among several programs" in definition and "PROGRAMS_PER_SM" in definition


def test_strided_lanes_start_aligned_as_the_wrapper_works_it_out(tmp_path: Path) -> None:
    # Reduced along dim 0 of [N, 8] fp32, each reduced step is 8 elements further on: an integer stride of 8 is not
    # one Triton sees as divisible, so the kernel is told (H100, x.sum(0) of [4194304, 8] fp32, split: 0.111 ms
    # with 4-byte loads, 0.058 ms told).
    generator = OfflineGenerator()
    spec = read_spec("x.sum(dim=0), x [4194304, 8] fp32")
    module = load_triton_module(generator.generate(spec, generator.default_config(spec, "split_row", CPU)), tmp_path)
    assert "x_sk = x_sk // ROW_ALIGN * ROW_ALIGN" in (tmp_path / "reduce_sum_triton.py").read_text()
    assert module.launch_plan(((4194304, 8),), (torch.float32,))[-1] == 8
    assert module.launch_plan(((611, 3),), (torch.float32,))[-1] == 1
    x = torch.randn(611, 8)
    torch.testing.assert_close(getattr(module, spec.name)(x), x.sum(0), rtol=1e-4, atol=1e-4)
