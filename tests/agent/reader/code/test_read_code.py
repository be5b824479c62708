"""read_code end to end: real sandbox runs (CPU, seconds each) for tracing and for the check."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent.ir.expr import Node
from agent.ir.printer import to_text
from agent.reader.code import CodeInput, CodeReading, CodeSource, find_code, read_code
from agent.reader.code.to_ir import Mapped
from agent.reader.errors import SpecQuestion

pytestmark = pytest.mark.bubblewrap  # each test traces code in the sandbox

read_code_impl = sys.modules["agent.reader.code.read_code"]  # the module; the package's read_code is the function
MARKER = "kernelgen-code-spec-side-effect.txt"

MODULE = '''import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, features, alpha, slope=0.2):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.ln = nn.LayerNorm(features, eps=1e-6)
        self.alpha = alpha
        self.slope = slope

    def forward(self, x):
        h = self.ln(self.fc(x))
        return F.elu(h, alpha=self.alpha) + F.leaky_relu(h, self.slope) + F.hardtanh(h, min_val=-0.5, max_val=2.0)

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return [32, 0.5]
'''


FENCED = ("Make this one kernel please, x is [64, 128] bf16:\n```python\nimport os\n"
          "secret = open('/etc/passwd').read()\n"
          f"os.system('touch {MARKER}')\n\n"
          "def scaled_silu(x, scale=2.0):\n    return F.silu(x) * scale\n```\nThanks!")
LOSS = "def loss(logits, target):\n    return F.cross_entropy(logits, target)\n"
Declared = dict[str, tuple[list[int], str]] | None
Readings = tuple[Path, dict[str, CodeReading | SpecQuestion]]  # the folder of the runs, and each job's result
# name -> (code, declared shapes, timeout): read together, two or more at a time, in `readings`.
JOBS: dict[str, tuple[str, Declared, float]] = {
    "fenced": (FENCED, {"x": ([64, 128], "bf16")}, 60),
    "module": (MODULE, {"x": ([8, 32], "float16")}, 60),
    "loss": (LOSS, {"logits": ([16, 10], "float32"), "target": ([16], "int64")}, 60),
    "import": ("import not_a_module_kernelgen\ndef f(x):\n    return x.relu()\n", None, 60),
    "forward": ("class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.w = nn.Parameter(torch.randn(3, 3))\n    def forward(self, x):\n"
                "        return x @ self.w\ndef get_inputs():\n    return [torch.randn(4, 5)]\n", None, 60),
    "unmapped": ("def f(x):\n    return torch.fft.fft(x).abs() + torch.nonzero(x > 0).sum()\n",
                 {"x": ([4], "float32")}, 60),
    "timeout": ("import time\ntime.sleep(60)\ndef f(x):\n    return x\n", None, 3),
}
REFUSALS = {
    "import": ["importing the code failed", "ModuleNotFoundError", "line 1"],
    "forward": ["the code raised RuntimeError", "line 6", "x [4, 5] float32"],
    "unmapped": ["torch.fft.fft and torch.nonzero, which the IR does not have"],
    "timeout": ["ran past 3 s"],
}


def _job(name: str, root: Path) -> CodeReading | SpecQuestion:
    text, declared, timeout = JOBS[name]
    code = find_code(text)
    assert code is not None, name
    try:
        return read_code(code, work_dir=root / name, declared=declared, timeout_s=timeout)
    except SpecQuestion as exc:
        return exc


@pytest.fixture(scope="module")
def readings(tmp_path_factory: pytest.TempPathFactory) -> Readings:
    """Read every job in the sandbox, several at a time; return the folder of the runs and the readings."""
    root = tmp_path_factory.mktemp("read-code")
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        return root, dict(zip(JOBS, pool.map(lambda n: _job(n, root), JOBS), strict=True))


def _reading(readings: Readings, name: str) -> CodeReading:
    reading = readings[1][name]
    assert isinstance(reading, CodeReading), reading
    return reading


def test_fenced_function_with_declared_shapes_runs_only_in_the_sandbox(readings: Readings) -> None:
    """Check a fenced function in prose reads with the prose's shapes, and its import-time code never runs here."""
    code = find_code(FENCED)
    assert code is not None and code.kind == "function" and "bf16" in code.prose
    reading = _reading(readings, "fenced")
    assert to_text(reading.expr) == "silu(x) * 2.0"
    assert reading.inputs == (CodeInput("x", (64, 128), "bfloat16", "argument"),)
    assert str(reading.output) == "bfloat16[64, 128]" and reading.entry == "scaled_silu"
    assert reading.source == code.source and reading.kind == "function"
    assert "scale = 2.0 is fixed (its default)" in reading.notes
    assert "inputs as declared: x [64, 128] bfloat16" in reading.notes
    assert any(n.startswith("checked: the IR computes the same values") for n in reading.notes)
    assert "user_spec" not in sys.modules
    root = readings[0]
    assert (root / "fenced" / "trace" / MARKER).exists() and (root / "fenced" / "check" / MARKER).exists()
    assert not (Path.cwd() / MARKER).exists() and not (root / MARKER).exists()


def test_module_parameters_are_inputs_and_declared_dtype_overrides(readings: Readings) -> None:
    """Check nn modules read with their tensors as parameter inputs, init args as constants, the check passing."""
    reading = _reading(readings, "module")
    assert reading.kind == "module" and reading.source == MODULE
    h = "layer_norm(linear(x, fc_weight, fc_bias), weight=ln_weight, bias=ln_bias, eps=1e-06)"
    assert to_text(reading.expr) == (f"elu({h}, alpha=0.5) + leaky_relu({h}, negative_slope=0.2) + "
                                     f"hardtanh({h}, min_val=-0.5, max_val=2.0)")
    assert [tuple(i) for i in reading.inputs] == [
        ("x", (8, 32), "float16", "argument"), ("fc_weight", (32, 32), "float16", "parameter"),
        ("fc_bias", (32,), "float16", "parameter"), ("ln_weight", (32,), "float16", "parameter"),
        ("ln_bias", (32,), "float16", "parameter")]
    assert reading.parameter_path("fc_weight") == "fc.weight" and reading.arguments == reading.inputs[:1]
    assert reading.entry == "Model" and reading.init_args == (32, 0.5)
    assert "constructor arguments from get_init_inputs(): [32, 0.5]" in reading.notes
    assert any("cast to float16" in n for n in reading.notes)
    assert reading.max_abs_error <= 1e-2


def test_integer_targets_are_drawn_below_the_class_count(readings: Readings) -> None:
    """Check class targets of a declared loss are drawn in [0, classes) for the check."""
    reading = _reading(readings, "loss")
    assert to_text(reading.expr) == "cross_entropy(logits, target)"
    plan = json.loads((readings[0] / "loss" / "check" / "plan.json").read_text())
    assert plan["ranges"] == {"target": [0, 10]}


def test_refusals_say_why_in_one_line(readings: Readings) -> None:
    """Check import errors, raising forwards, missing ops and timeouts are refused (more in test_to_ir.py)."""
    for name, words in REFUSALS.items():
        question = readings[1][name]
        assert isinstance(question, SpecQuestion), (name, question)
        assert "\n" not in question.question, (name, question.question)
        for word in words:
            assert word in question.question, (name, question.question)


def test_a_mapping_that_disagrees_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Check the sandboxed check refuses a reading that computes other values than the code."""
    real = read_code_impl.graph_to_ir

    def wrong(trace: dict) -> Mapped:
        mapped = real(trace)
        assert isinstance(mapped.expr, Node) and mapped.expr.op == "relu"
        return Mapped(Node("sigmoid", mapped.expr.args), mapped.inputs, mapped.output, mapped.notes)

    monkeypatch.setattr(read_code_impl, "graph_to_ir", wrong)
    code = CodeSource("def f(x):\n    return torch.relu(x)\n", "", "function")
    with pytest.raises(SpecQuestion) as caught:
        read_code(code, work_dir=tmp_path, declared={"x": ([32, 32], "float32")})
    assert "torch.sigmoid(x)" in caught.value.question and "other values" in caught.value.question
