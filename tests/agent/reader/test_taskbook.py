"""Splitting task books into self-contained task texts."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_helpers import same_formula

from agent.reader import read_spec, split_tasks

BOOK = """# Task book: activation kernels

Target device: NVIDIA H100 (CUDA). Maximum optimization rounds: 3.
Accuracy: fp16/bf16 rtol=1e-2, atol=1e-2; fp32 rtol=1e-4, atol=1e-4.

## Task: add_relu

- Operator type: Pointwise
- Description: relu of the sum of a and b
- Inputs:
  - a: Tensor [4096, 4096], dtype float16
  - b: Tensor [4096], same dtype as a
- Output: out, same shape as a
- Target speedup: >= 1.4

## Task: layer_norm

- Operator type: Reduction
- Description: normalise x over the last dimension
- Inputs:
  - x: Tensor [512, 768], dtype float32
- Output: y
"""
SHARED_BOOK = Path(__file__).resolve().parents[4] / "shared" / "taskbooks" / "norm-ops-taskbook.en.md"


def test_each_task_carries_the_shared_header() -> None:
    tasks = split_tasks(BOOK)
    assert len(tasks) == 2
    for task in tasks:
        assert "Maximum optimization rounds: 3" in task
        assert "rtol=1e-4" in task
        assert "# Task book" not in task
    assert "add_relu" in tasks[0] and "layer_norm" not in tasks[0]
    assert "layer_norm" in tasks[1] and "add_relu" not in tasks[1]


def test_split_tasks_parse_alone() -> None:
    add_relu = read_spec(split_tasks(BOOK)[0])
    assert add_relu.name == "add_relu"
    assert [(t.name, t.shapes, t.dtypes) for t in add_relu.inputs] == [
        ("a", [[4096, 4096]], ["float16"]), ("b", [[4096]], ["float16"])]
    assert (add_relu.device, add_relu.max_rounds, add_relu.target_speedup) == ("cuda", 3, 1.4)
    layer_norm = read_spec(split_tasks(BOOK)[1])  # "normalise x over the last dimension" names no operator
    assert layer_norm.category == "norm"


def test_single_task_text_is_returned_unchanged() -> None:
    text = "relu on x [10, 10] fp16"
    assert split_tasks(text) == [text]
    one = "# Book\n\n## Task: relu\n\n- Inputs: x [4, 4]\n"
    assert split_tasks(one) == [one]


def test_numbered_chinese_headings_and_trailing_shared_section() -> None:
    book = (
        "测评设备：CPU\n\n## 任务 1：ReLU\n- 输入参数：x 形状 [8, 8]\n\n"
        "## 任务 2：Sigmoid\n- 输入参数：x 形状 [4, 4]\n\n"
        "## 统一要求\n自动优化最大迭代轮次：2\n"
    )
    tasks = split_tasks(book)
    assert len(tasks) == 2
    specs = [read_spec(t) for t in tasks]
    assert [s.name for s in specs] == ["relu", "sigmoid"]
    assert [s.max_rounds for s in specs] == [2, 2]
    assert {s.device for s in specs} == {"cpu"}


@pytest.mark.skipif(not SHARED_BOOK.exists(), reason="shared example task book not present")
def test_shared_english_book_is_read_task_by_task() -> None:
    rms_norm, softmax = (read_spec(t) for t in split_tasks(SHARED_BOOK.read_text(encoding="utf-8")))
    assert (rms_norm.name, rms_norm.category) == ("rms_norm", "norm")
    assert [t.shapes for t in rms_norm.inputs] == [[[2048, 4096], [8192, 4096]], [[4096]]]
    assert same_formula(rms_norm, "x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + 1e-6) * weight")
    assert (softmax.name, softmax.category) == ("softmax_lastdim", "softmax")
    assert softmax.inputs[0].shapes == [[4096, 1024], [16384, 4096], [1024, 32000]]
    assert same_formula(softmax, "torch.softmax(x, dim=-1)")
