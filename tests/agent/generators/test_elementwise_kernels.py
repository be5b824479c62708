"""Spec text in, generated Triton kernel out, checked against PyTorch written here.

Each case goes through the real parser and generator, imports the generated
`_triton.py` and runs it in the Triton interpreter on fresh random inputs: the
spec's own shapes when small, else odd shapes with the same broadcast pattern.
"""

import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator, edge_cases
from agent.reader import read_spec, split_tasks
from tests.agent.generators.kernels import TORCH_DTYPES, load_triton_module

SMALL = 1 << 18
TASKBOOK = Path(__file__).parents[3].parent / "shared" / "taskbooks" / "pointwise-ops-taskbook.zh.md"


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


CASES: list[tuple[str, Callable[..., torch.Tensor]]] = [
    ("ReLU on a float32 tensor x of shape [1000, 1000]", lambda x: x.clamp_min(0)),
    ("fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]", lambda x, bias: F.gelu(x + bias)),
    ("SwiGLU: out = silu(gate) * up, gate and up [4096, 11008] bf16", lambda gate, up: gate * torch.sigmoid(gate) * up),
    ("y = residual + alpha * y_in with alpha = 0.5, residual and y_in float16 [2048, 1024]",
     lambda residual, y_in: residual + 0.5 * y_in),
    ("x * scale[c] + shift[c] for x NCHW [8, 64, 56, 56] fp32, scale and shift [64]",
     lambda x, scale, shift: x * scale[None, :, None, None] + shift[None, :, None, None]),
    ("leaky relu with negative slope 0.2 on x (4096, 4096) bf16", lambda x: torch.where(x > 0, x, 0.2 * x)),
    ("clamp x to [-2, 2], x fp32 [333, 777]", lambda x: torch.minimum(torch.maximum(x, torch.tensor(-2.0)),
                                                                         torch.tensor(2.0))),
    ("hardswish on x [127, 129] fp16", lambda x: x * torch.clamp(x + 3, 0, 6) / 6),
    ("softplus of x with shape [3, 1025] float32", lambda x: torch.log1p(torch.exp(-x.abs())) + x.clamp_min(0)),
    ("gelu tanh approximation on x [4096, 4096] fp16", _gelu_tanh),
    ("sigmoid of x [1, 17] bf16", lambda x: 1 / (1 + torch.exp(-x))),
    ("exp of x [999] fp32", torch.exp),
    ("rsqrt of x [64, 129] fp32", lambda x: 1 / torch.sqrt(x)),
    ("elu on x [2, 3, 5, 7] fp16", lambda x: torch.where(x > 0, x, torch.expm1(x))),
    ("selu x [513] fp32", lambda x: 1.0507009873554805 * torch.where(x > 0, x, 1.6732632423543772 * torch.expm1(x))),
    ("hardsigmoid x [33, 31] bf16", lambda x: torch.clamp(x / 6 + 0.5, 0, 1)),
    ("softsign x [7, 9, 11] fp16", lambda x: x / (1 + x.abs())),
    ("tanh on x [257, 3] fp32", torch.tanh),
    ("mish x [5, 200] fp32", lambda x: x * torch.tanh(torch.log1p(torch.exp(x)))),
    ("relu(x - y), x [3, 1, 5] fp32, y [4, 5] fp32", lambda x, y: (x - y).clamp_min(0)),
    ("对形状为 [1024, 1024] 的 float16 张量 x 做 ReLU", lambda x: x.clamp_min(0)),
    ("融合 bias 加法和 GELU：x 形状 [8192, 4096]，bias 形状 [4096]，数据类型 fp16", lambda x, bias: F.gelu(x + bias)),
    ("SiLU 激活，输入 x 形状 [37, 129]，数据类型 bf16", lambda x: x / (1 + torch.exp(-x))),
    ("对 x 做 sigmoid，x 的形状为 (65, 3)，float32", torch.sigmoid),
]
TASKBOOK_EXPECTED: dict[str, Callable[..., torch.Tensor]] = {
    "bias_add": lambda x, bias: x + bias,
    "gelu_tanh": _gelu_tanh,
    "swiglu": lambda gate, up: F.silu(gate) * up,
}


def _taskbook_cases() -> list[tuple[str, Callable[..., torch.Tensor]]]:
    tasks = split_tasks(TASKBOOK.read_text(encoding="utf-8"))
    cases = []
    for task in tasks:
        name = read_spec(task).name
        cases.append((task, TASKBOOK_EXPECTED[name]))
    return cases


def _shape_cases(spec) -> list[dict[str, list[int]]]:  # type: ignore[no-untyped-def]
    small = [c for c in spec.shape_cases() if math.prod(spec.output_shape(c)) <= SMALL]
    return small + edge_cases(spec)


def _check(text: str, expected: Callable[..., torch.Tensor], tmp_path: Path) -> None:
    spec = read_spec(text)
    config = LaunchConfig(block_size=256, num_warps=4)  # small blocks: many programs, ragged tails
    module = load_triton_module(ElementwiseGenerator().generate(spec, config), tmp_path)
    kernel = getattr(module, spec.name)
    params = {p.name: p.value for p in spec.params}
    checked = 0
    for seed, (shapes, dtypes) in enumerate((s, d) for s in _shape_cases(spec) for d in spec.dtype_cases()):
        generator = torch.Generator().manual_seed(seed)
        inputs = []
        for t in spec.inputs:
            values = torch.randn(shapes[t.name], generator=generator, dtype=torch.float64) * 2
            if "sqrt" in spec.formula or "log" in spec.formula:
                values = values.abs() + 0.25
            inputs.append(values.to(TORCH_DTYPES[dtypes[t.name]]))
        got = kernel(*inputs, **params)
        want = expected(*[t.double() for t in inputs])
        tolerance = spec.tolerances[dtypes[spec.inputs[0].name]]
        assert got.shape == want.shape, (text, shapes)
        assert got.dtype == inputs[0].dtype
        assert torch.isfinite(got).all()
        where = f"{text} {shapes} {dtypes}"
        torch.testing.assert_close(got.double(), want, rtol=tolerance.rtol, atol=tolerance.atol,
                                   msg=lambda m, where=where: f"{where}: {m}")
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_generated_kernel_matches_pytorch(text: str, expected: Callable[..., torch.Tensor], tmp_path: Path) -> None:
    _check(text, expected, tmp_path)


@pytest.mark.skipif(not TASKBOOK.exists(), reason="the shared task books are not beside this checkout")
def test_chinese_task_book_kernels_match_pytorch(tmp_path: Path) -> None:
    cases = _taskbook_cases()
    assert [read_spec(t).name for t, _ in cases] == ["bias_add", "gelu_tanh", "swiglu"]
    for index, (text, expected) in enumerate(cases):
        _check(text, expected, tmp_path / str(index))


SPECIAL_VALUES = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 0.3, -0.3, 1.0, -1.0, 100.0, -100.0]
NAN_KEEPING: list[tuple[str, Callable[..., torch.Tensor]]] = [
    ("relu of x [11] fp32", F.relu),
    ("relu6 of x [11] fp32", F.relu6),
    ("celu of x [11] fp32", F.celu),
    ("hardsigmoid of x [11] fp32", F.hardsigmoid),
    ("hardtanh of x [11] fp32", F.hardtanh),
    ("hardshrink of x [11] fp32", F.hardshrink),
    ("softshrink of x [11] fp32", F.softshrink),
    ("clamp x to [-2, 2], x fp32 [11]", lambda x: x.clamp(-2, 2)),
    ("out = maximum(x, y), x and y [11] fp32", lambda x: torch.maximum(x, x.flip(0))),
    # In float64: torch's float32 GELU on the CPU gives NaN for +inf on AVX-512 machines (its vector path) and inf
    # elsewhere (its scalar path); float64 gives inf on both, as the generated accuracy files' reference does.
    ("gelu of x [11] fp32", lambda x: F.gelu(x.double()).float()),
]


@pytest.mark.parametrize(("text", "expected"), NAN_KEEPING, ids=[c[0][:20] for c in NAN_KEEPING])
def test_nan_and_inf_come_out_as_pytorch_gives_them(text: str, expected: Callable[..., torch.Tensor],
                                                    tmp_path: Path) -> None:
    spec = read_spec(text)
    module = load_triton_module(ElementwiseGenerator().generate(spec, LaunchConfig(block_size=16, num_warps=1)),
                                tmp_path)
    x = torch.tensor(SPECIAL_VALUES)
    got = getattr(module, spec.name)(*([x, x.flip(0)] if len(spec.inputs) == 2 else [x]),
                                     **{p.name: p.value for p in spec.params})
    torch.testing.assert_close(got, expected(x), equal_nan=True)


def test_the_exact_gelu_is_as_close_to_erf_as_pytorchs_own_float32_gelu(tmp_path: Path) -> None:
    spec = read_spec("F.gelu(x) x [200001] fp32")
    module = load_triton_module(ElementwiseGenerator().generate(spec, LaunchConfig(block_size=4096, num_warps=4)),
                                tmp_path)
    x = torch.linspace(-12, 12, 200001, dtype=torch.float32)
    got, exact = getattr(module, spec.name)(x).double(), F.gelu(x.double())
    assert (got - exact).abs().max() <= 1e-6  # torch's float32 GELU: 5.7e-7
    tail = (x > -6) & (x < -1)  # where 1 + erf(x / sqrt(2)) cancels: the value is still right to a fraction of 1%
    assert ((got - exact)[tail] / exact[tail]).abs().max() <= 1e-2
