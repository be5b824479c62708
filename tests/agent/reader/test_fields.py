"""Header facts: device, target speedup, rounds, tolerances and dtype spellings."""

from __future__ import annotations

import pytest

from agent.reader import read_spec
from agent.spec import MAX_ROUNDS, SpecError, Tolerance

BASE = "relu on x [64, 64] fp32.\n"


@pytest.mark.parametrize(
    ("extra", "device"),
    [
        ("Target device: NVIDIA GPU (CUDA)", "cuda"),
        ("测评设备：昇腾 910B", "npu"),
        ("runs on Ascend NPU", "npu"),
        ("测评设备：NVIDIA GPU（CUDA）；如有昇腾 910B 亦需保证可运行", "cuda"),
        ("Device: CPU", "cpu"),
        ("", "auto"),
    ],
)
def test_device(extra: str, device: str) -> None:
    assert read_spec(BASE + extra).device == device


@pytest.mark.parametrize(
    ("extra", "speedup"),
    [
        ("目标加速比 ≥ 1.2", 1.2),
        ("Target speedup: >= 2.0", 2.0),
        ("It must be at least 2x faster than PyTorch.", 2.0),
        ("性能要求：> 1.3", 1.3),
        ("", None),  # none stated: the loop aims for the limit (agent.targets), not x1.0 eager
    ],
)
def test_target_speedup(extra: str, speedup: float | None) -> None:
    assert read_spec(BASE + extra).target_speedup == speedup


@pytest.mark.parametrize(
    ("extra", "rounds"),
    [("自动优化最大迭代轮次：3", 3), ("Maximum optimization rounds: 2", 2),
     ("Maximum optimization rounds: 12", 5)],
)
def test_rounds_are_read_and_capped(extra: str, rounds: int) -> None:
    assert read_spec(BASE + extra).max_rounds == min(rounds, MAX_ROUNDS)


def test_zero_rounds_is_an_error() -> None:
    with pytest.raises(SpecError, match="rounds"):
        read_spec(BASE + "Maximum optimization rounds: 0")


def test_tolerances_by_dtype_group() -> None:
    spec = read_spec(
        "relu on x [64, 64] fp16. Accuracy: fp16/bf16 rtol=2e-2, atol=3e-2; fp32 rtol=1e-5, atol=1e-6"
    )
    assert spec.tolerances["float16"] == Tolerance(rtol=2e-2, atol=3e-2)
    assert spec.tolerances["bfloat16"] == Tolerance(rtol=2e-2, atol=3e-2)
    assert spec.tolerances["float32"] == Tolerance(rtol=1e-5, atol=1e-6)
    assert spec.inputs[0].dtypes == ["float16"]


def test_tolerance_words_do_not_become_input_dtypes() -> None:
    spec = read_spec("精度要求：fp32 rtol=1e-4、atol=1e-4\n"
                              "对形状为 [8, 8] 的 bf16 张量 x 做 sigmoid")
    assert spec.inputs[0].dtypes == ["bfloat16"]


@pytest.mark.parametrize(
    ("word", "dtype"),
    [("float32", "float32"), ("fp32", "float32"), ("f32", "float32"), ("float", "float32"),
     ("float16", "float16"), ("fp16", "float16"), ("half", "float16"), ("bfloat16", "bfloat16"),
     ("bf16", "bfloat16"), ("torch.bfloat16", "bfloat16")],
)
def test_dtype_spellings(word: str, dtype: str) -> None:
    assert read_spec(f"exp of x [4, 4] {word}").inputs[0].dtypes == [dtype]


def test_several_dtypes_on_one_input() -> None:
    spec = read_spec("tanh of x [256, 256], dtype float16 / bfloat16 / float32")
    assert spec.inputs[0].dtypes == ["float16", "bfloat16", "float32"]
