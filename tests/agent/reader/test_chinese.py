"""Chinese requests and Chinese task books parse, including multi-shape and multi-dtype inputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from reader_helpers import evaluate, inputs_of, same_formula

from agent.reader import read_spec, split_tasks
from agent.spec import SpecError, Tolerance

BOOK = """# 第二批 Pointwise 算子

测评设备：NVIDIA GPU（CUDA），另需兼容昇腾 910B
统一要求：fp16/bf16 使用 rtol=1e-2、atol=1e-2，fp32 使用 rtol=1e-4、atol=1e-4；
自动优化最大迭代轮次：4。

## 任务 1：ResidualAdd（广播）

- 算子名称：residual_add
- 算子类型：Pointwise
- 功能描述：把残差 res 与 x 逐元素相加，out = x + res
- 输入参数：
  - x：torch.Tensor，形状 [n, 2048]，n 取 4 / 16，数据类型 float16 / bfloat16 / float32
  - res：torch.Tensor，形状与 x 相同，数据类型与 x 相同
- 输出参数：out，形状与 x 相同
- 性能要求：目标加速比 ≥ 1.1

## 任务 2：GELU（tanh 近似）

- 算子名称：gelu_tanh
- 功能描述：out = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
- 输入参数：
  - x：torch.Tensor，形状 [1024, 1024] 与 [4, 512, 512]，数据类型 float16
- 输出参数：out，形状与数据类型同 x
- 性能要求：目标加速比 ≥ 1.25

## 任务 3：Mish

- 算子名称：mish
- 算子类型：Pointwise（单输入）
- 功能描述：对 x 做 Mish 激活
- 输入参数：
  - x：torch.Tensor，形状 [4096, 4096]，数据类型 bfloat16
- 输出参数：out
- 性能要求：加速比不低于 1.5（相对 PyTorch）

## 补充说明

- 应用场景：卷积网络与 Transformer 的激活层
"""
SHARED_BOOK = Path(__file__).resolve().parents[4] / "shared" / "taskbooks" / "pointwise-ops-taskbook.zh.md"


def test_relu_with_shape_before_name() -> None:
    spec = read_spec("对形状为 [1024, 1024] 的 float16 张量 x 做 ReLU")
    assert spec.name == "relu"
    assert same_formula(spec, "relu(x)")
    assert inputs_of(spec) == [("x", [[1024, 1024]], ["float16"])]


def test_bias_gelu_with_trailing_shared_dtype() -> None:
    spec = read_spec("融合 bias 加法和 GELU：x 形状 [8192, 4096]，bias 形状 [4096]，数据类型 fp16")
    assert spec.name == "bias_add_gelu"
    assert same_formula(spec, "gelu(x + bias)")
    assert inputs_of(spec) == [("x", [[8192, 4096]], ["float16"]), ("bias", [[4096]], ["float16"])]


def test_book_task_with_symbolic_batch_and_three_dtypes() -> None:
    spec = read_spec(split_tasks(BOOK)[0])
    assert spec.name == "residual_add"
    assert same_formula(spec, "x + res")
    expected_shapes = [[4, 2048], [16, 2048]]
    dtypes = ["float16", "bfloat16", "float32"]
    assert inputs_of(spec) == [("x", expected_shapes, dtypes), ("res", expected_shapes, dtypes)]
    assert spec.device == "cuda"
    assert spec.target_speedup == 1.1
    assert spec.max_rounds == 4
    assert spec.tolerances["float32"] == Tolerance(rtol=1e-4, atol=1e-4)
    assert spec.tolerances["bfloat16"] == Tolerance(rtol=1e-2, atol=1e-2)


def test_book_task_with_power_formula_and_two_shapes() -> None:
    spec = read_spec(split_tasks(BOOK)[1])
    assert spec.name == "gelu_tanh"
    x = torch.linspace(-4.0, 4.0, 101)
    assert torch.allclose(evaluate(spec, x=x), F.gelu(x, approximate="tanh"), atol=1e-6)
    assert inputs_of(spec) == [("x", [[1024, 1024], [4, 512, 512]], ["float16"])]
    assert spec.target_speedup == 1.25


def test_book_task_described_in_words() -> None:
    spec = read_spec(split_tasks(BOOK)[2])
    assert spec.name == "mish"
    assert same_formula(spec, "mish(x)")
    assert inputs_of(spec) == [("x", [[4096, 4096]], ["bfloat16"])]
    assert spec.target_speedup == 1.5


def test_unsplit_book_is_refused() -> None:
    with pytest.raises(SpecError, match="3 tasks"):  # names the way out, not an internal function
        read_spec(BOOK)


@pytest.mark.skipif(not SHARED_BOOK.exists(), reason="shared example task book not present")
def test_shared_pointwise_book() -> None:
    specs = [read_spec(t) for t in split_tasks(SHARED_BOOK.read_text(encoding="utf-8"))]
    assert [s.name for s in specs] == ["bias_add", "gelu_tanh", "swiglu"]
    bias_add, gelu_tanh, swiglu = specs
    assert same_formula(bias_add, "x + bias")
    assert bias_add.inputs[0].shapes == [[8, 1024, 1024], [32, 1024, 1024]]
    assert bias_add.inputs[1].dtypes == ["float16", "bfloat16", "float32"]
    assert gelu_tanh.inputs[0].shapes == [[4096, 4096], [16, 2048, 2048]]
    assert same_formula(swiglu, "silu(gate) * up")
    assert [s.target_speedup for s in specs] == [1.0, 1.2, 1.5]
    assert {s.device for s in specs} == {"cuda"}
