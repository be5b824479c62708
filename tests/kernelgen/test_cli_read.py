"""`kernelgen read`: the specs the old reader misread or refused now read right, and a vague one asks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.catalogue import load_catalogue
from agent.ir.parse import parse_text
from agent.ir.types import TensorType
from agent.reader.agreement import agree
from kernelgen.cli import app

# The issue's table (shapes written in where the table elided them as `[..]`), with what each must compute.
TABLE = [
    ("SiLU (x * sigmoid(x)) on x [37, 53], float32.", "x * sigmoid(x)", {"x": ([37, 53], "float32")}),
    ("QuickGELU: x * sigmoid(1.702 * x) for x in bf16, shape [30, 64].", "x * sigmoid(1.702 * x)",
     {"x": ([30, 64], "bfloat16")}),
    ("Elementwise exp on x, a 128x256 float32 matrix.", "exp(x)", {"x": ([128, 256], "float32")}),
    ("hardtanh with min_val=-0.5 and max_val=0.5 on float32 x [30, 50]", "clamp(x, -0.5, 0.5)",
     {"x": ([30, 50], "float32")}),
    ("实现 SiLU 激活算子（x * sigmoid(x)），输入 x 为 float16，形状 [3, 40, 50]。", "x * sigmoid(x)",
     {"x": ([3, 40, 50], "float16")}),
    ("Softplus activation log(1 + exp(x)) for float32 x with shape [100, 77]", "log(1 + exp(x))",
     {"x": ([100, 77], "float32")}),
    ("Clamp x to the range [-2.5, 2.5] and then multiply by 0.5. x is float32 of shape [101, 37]",
     "clamp(x, -2.5, 2.5) * 0.5", {"x": ([101, 37], "float32")}),
    ("First clamp x into [-1, 1], then multiply the result by 3; x float32 [64, 128]", "clamp(x, -1, 1) * 3",
     {"x": ([64, 128], "float32")}),
    ("Take the absolute value of x and then its square root, x: fp32 [333, 77]", "sqrt(abs(x))",
     {"x": ([333, 77], "float32")}),
    ("squared ReLU (relu(x)**2) on x [256, 1024] fp16", "relu(x) ** 2", {"x": ([256, 1024], "float16")}),
    ("(a + b) * c with a, b, c float32 [1024, 513]", "(a + b) * c",
     {n: ([1024, 513], "float32") for n in "abc"}),
    ("maximum(x, y) + minimum(x, y) * 0.1; x, y bf16 [64, 4096]", "maximum(x, y) + minimum(x, y) * 0.1",
     {"x": ([64, 4096], "bfloat16"), "y": ([64, 4096], "bfloat16")}),
    ("Multiply each row i of x by s[i]. x is [512, 768] float32, s is [512] float32", "x * s[:, None]",
     {"x": ([512, 768], "float32"), "s": ([512], "float32")}),
    ("Sigmoid of a 2-D float32 tensor x with 1000 rows and 513 columns", "sigmoid(x)",
     {"x": ([1000, 513], "float32")}),
    ("y = torch.nn.functional.hardsigmoid(x), x: torch.float32 [128, 4096]", "clamp(x / 6 + 0.5, 0, 1)",
     {"x": ([128, 4096], "float32")}),
]


def _read(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["read", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(("spec", "expected", "inputs"), TABLE, ids=[t[0][:40] for t in TABLE])
def test_the_issue_table_reads_right(spec: str, expected: str, inputs: dict[str, tuple[list[int], str]]) -> None:
    code, output = _read(spec, "--json")
    assert code == 0, output
    outcome = json.loads(output)
    assert outcome["status"] == "read" and outcome["understood"].startswith("Understood as:")
    reading = outcome["reading"]
    assert {i["name"]: (i["shapes"][0], i["dtypes"][0]) for i in reading["inputs"]} == inputs
    # Same values as the formula the person meant, on small random inputs (several draws inside agree()).
    small = {n: TensorType(d, tuple(min(s, 17) for s in shape)) for n, (shape, d) in inputs.items()}
    same, why = agree(parse_text(reading["ir"]), parse_text(expected, macros=load_catalogue().macro), small)
    assert same, f"{spec!r} read as {reading['ir']}: {why}"


def test_the_reading_is_shown_as_pytorch_before_anything_runs() -> None:
    code, output = _read("QuickGELU: x * sigmoid(1.702 * x) for x in bf16, shape [30, 64].")
    assert code == 0
    assert "Understood as:" in output and "torch.sigmoid(1.702 * x)" in output
    assert "input x: bfloat16 [30, 64]" in output


def test_a_spec_without_shapes_asks_for_them() -> None:
    code, output = _read("First clamp x into [-1, 1], then multiply the result by 3")
    assert code == 2
    assert "question" in output and "shape" in output


def test_an_unknown_word_is_named_in_the_question() -> None:
    code, output = _read("frobnicate x [128, 128] fp16", "--json")
    assert code == 2
    outcome = json.loads(output)
    assert outcome["status"] == "question" and "frobnicate" in outcome["question"]


def test_each_task_of_a_book_is_read_and_one_question_fails_the_whole_read(tmp_path: Path) -> None:
    book = tmp_path / "book.md"
    book.write_text("# 任务书\n设备: cpu\n\n## 任务 1: SiLU\nx [64, 64] float32, y = x * sigmoid(x)\n\n"
                    "## 任务 2: 缩放\nscale x [32, 32] fp16 by something\n", encoding="utf-8")
    code, output = _read("--file", str(book), "--json")
    outcomes = json.loads(output)
    assert [o["status"] for o in outcomes] == ["read", "question"]
    assert [o["task"] for o in outcomes] == ["SiLU", "缩放"] and outcomes[0]["reading"]["device"] == "cpu"
    assert code == 2
