"""The code reader's harness scripts stay fast on code that is slow on the CPU, and keep reading what they did."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent.reader.code.read_code import HARNESS_DIR, SCRIPTS, TOLERANCE, USER_FILE


def run_harness(folder: Path, script: str, code: str, files: dict[str, Any], args: list[str],
                timeout_s: float = 60.0) -> dict[str, Any]:
    """Run one harness script on the user's code in a fresh folder; return its result file."""
    folder.mkdir()
    (folder / USER_FILE).write_text(code)
    for name in (SCRIPTS[0], script):
        shutil.copy(HARNESS_DIR / name, folder / name)
    for name, data in files.items():
        (folder / name).write_text(json.dumps(data))
    subprocess.run([sys.executable, script, "--json", "result.json", *args], cwd=folder, check=True,
                   timeout=timeout_s, capture_output=True)
    result: dict[str, Any] = json.loads((folder / "result.json").read_text())
    return result


def test_a_large_fp16_matmul_is_traced_without_computing_it(tmp_path: Path) -> None:
    # On this CPU, 4096^3 in fp16 takes minutes to compute; its shapes take no time on the meta device.
    inputs = {"a": {"shape": [4096, 4096], "dtype": "float16"}, "b": {"shape": [4096, 4096], "dtype": "float16"}}
    code = "import torch\n\ndef mm(a, b):\n    return torch.matmul(a, b).relu()\n"
    trace = run_harness(tmp_path / "trace", SCRIPTS[1], code, {"inputs.json": inputs}, ["--inputs", "inputs.json"],
                        timeout_s=30)
    assert trace["status"] == "pass"
    shapes = {n["target"]: n["value"]["tensor"] for n in trace["nodes"] if n["op"] != "placeholder" and n["value"]
              and "tensor" in n["value"]}
    assert set(shapes) == {"torch.matmul", "relu", "output"}
    assert all(value == {"shape": [4096, 4096], "dtype": "float16"} for value in shapes.values())


def test_a_mask_made_inside_forward_is_made_on_the_meta_device_too(tmp_path: Path) -> None:
    inputs = {"q": {"shape": [4096, 4096], "dtype": "float16"}, "k": {"shape": [4096, 4096], "dtype": "float16"}}
    code = ("import torch\n\ndef scores(q, k):\n    n = q.shape[0]\n"
            "    mask = torch.triu(torch.ones((n, n), dtype=torch.bool), 1)\n"
            "    return (q @ k.transpose(0, 1)).masked_fill(mask, float('-inf'))\n")
    trace = run_harness(tmp_path / "trace", SCRIPTS[1], code, {"inputs.json": inputs}, ["--inputs", "inputs.json"],
                        timeout_s=30)
    output = next(n for n in trace["nodes"] if n["op"] == "output")
    assert trace["status"] == "pass" and output["value"]["tensor"] == {"shape": [4096, 4096], "dtype": "float16"}


def test_indices_out_of_range_are_still_refused(tmp_path: Path) -> None:
    # The meta device cannot see an index out of range; code that takes integer tensors runs for real.
    code = ("import torch\n\ndef pick(x, idx):\n    return torch.index_select(x, 0, idx)\n\n"
            "def get_inputs():\n    return [torch.randn(4, 5), torch.tensor([1, 7])]\n")
    trace = run_harness(tmp_path / "trace", SCRIPTS[1], code, {}, [])
    assert trace["status"] == "error" and "raised" in trace["message"] and "IndexError" in trace["message"]


def test_code_whose_shapes_depend_on_values_is_traced_for_real(tmp_path: Path) -> None:
    inputs = {"x": {"shape": [4, 5], "dtype": "float32"}}
    code = "def positives(x):\n    return x[x > 0] * 2\n"
    trace = run_harness(tmp_path / "trace", SCRIPTS[1], code, {"inputs.json": inputs}, ["--inputs", "inputs.json"])
    assert trace["status"] == "pass"
    output = next(n for n in trace["nodes"] if n["op"] == "output")
    kept = next(n for n in trace["nodes"] if n["name"] == output["args"][0]["node"])["value"]["tensor"]["shape"]
    assert len(kept) == 1 and 0 < kept[0] < 20  # a count of positive values, which the meta device cannot know


def plan(budget_s: float | None) -> dict[str, Any]:
    """Return check_code.py's plan for `relu(x)` read from a function `act`."""
    found = {"expr": "torch.relu(x)", "entry": "act", "declared": {"x": {"shape": [3, 7], "dtype": "float32"}},
             "seeds": [1, 2, 3], "arguments": {"x": "x"}, "tensors": {}, "ranges": {}, "positive": [],
             "tolerance": TOLERANCE}
    return found | ({"budget_s": budget_s} if budget_s is not None else {})


def test_the_check_uses_fewer_seeds_only_when_they_would_not_fit_its_time(tmp_path: Path) -> None:
    code = "import torch\n\ndef act(x):\n    return torch.relu(x)\n"
    full = run_harness(tmp_path / "full", SCRIPTS[2], code, {"plan.json": plan(120.0)}, ["--plan", "plan.json"])
    assert full["status"] == "pass" and [s["seed"] for s in full["seeds"]] == [1, 2, 3] and full["notes"] == []
    short = run_harness(tmp_path / "short", SCRIPTS[2], code, {"plan.json": plan(1e-9)}, ["--plan", "plan.json"])
    assert short["status"] == "pass" and [s["seed"] for s in short["seeds"]] == [1]
    assert short["notes"][0].startswith("checked on 1 of 3 seeds")


VARIANCE_BY_MOMENTS = ("import torch\n\ndef var(x):\n    return (x * x).mean(-1) - x.mean(-1) ** 2{extra}\n\n"
                       "def get_inputs():\n    return [torch.randn(8, 4096) + 300.0]\n")


def test_one_function_rounded_differently_agrees_in_float64_and_a_different_one_does_not(tmp_path: Path) -> None:
    # E[x^2] - E[x]^2 of values near 300 loses digits in float32 (on a GPU, a reduction order does the same), while
    # torch.var does not: the same function, ~1e-2 apart in float32, ~1e-10 in float64.
    checked = {"expr": "torch.var(x, dim=-1, unbiased=False)", "entry": "var", "declared": {}, "seeds": [1, 2],
               "arguments": {"x": "x"}, "tensors": {}, "ranges": {}, "positive": [], "tolerance": TOLERANCE}
    same = run_harness(tmp_path / "same", SCRIPTS[2], VARIANCE_BY_MOMENTS.format(extra=""), {"plan.json": checked},
                       ["--plan", "plan.json"])
    assert same["status"] == "pass", same
    assert same["max_abs"] > 1e-4 and all(s["float64_max_abs"] < 1e-7 for s in same["seeds"])
    assert "in float64 they agree" in same["notes"][0]
    # A reading that misses a term (here 1e-4, under the float32 noise) is still refused: float64 sees it
    other = run_harness(tmp_path / "other", SCRIPTS[2], VARIANCE_BY_MOMENTS.format(extra=" + 1e-4"),
                        {"plan.json": checked}, ["--plan", "plan.json"])
    assert other["status"] == "fail"


# check_code.py's plan for `relu(x)` read from a class `Model` whose inputs come from get_inputs()
RELU_MODULE_PLAN = {"expr": "torch.relu(x)", "entry": "Model", "declared": {}, "seeds": [1], "arguments": {"x": "x"},
                    "tensors": {}, "ranges": {}, "positive": [], "tolerance": TOLERANCE}


def test_a_check_of_inputs_too_large_to_draw_runs_them_with_a_smaller_batch(tmp_path: Path) -> None:
    # As KernelBench publishes its ReLU: 4096 x 393216 floats, 6 GiB, more than a check needs or may allocate.
    code = ("import torch\n\nbatch_size = 4096\ndim = 393216\n\nclass Model(torch.nn.Module):\n"
            "    def forward(self, x):\n        return torch.relu(x)\n\n"
            "def get_inputs():\n    return [torch.rand(batch_size, dim)]\n\ndef get_init_inputs():\n    return []\n")
    checked = RELU_MODULE_PLAN
    result = run_harness(tmp_path / "check", SCRIPTS[2], code, {"plan.json": checked}, ["--plan", "plan.json"])
    assert result["status"] == "pass", result
    assert any(n.startswith("checked with batch_size = ") and "6.0 GiB" in n for n in result["notes"])


def test_a_smaller_batch_leaves_a_size_the_model_was_built_with(tmp_path: Path) -> None:
    # KernelBench's BatchNorm: batch_size = features = 64; both were made smaller, and the model built with 64
    # features got inputs of 4 (its own check failed, and the task asked).
    code = ("import torch\n\nbatch_size = 64\nfeatures = 64\n\nclass Model(torch.nn.Module):\n"
            "    def __init__(self, features):\n        super().__init__()\n        self.features = features\n"
            "    def forward(self, x):\n        assert x.shape[1] == self.features, x.shape\n"
            "        return torch.relu(x)\n\n"
            "def get_inputs():\n    return [torch.rand(batch_size, features, 1024, 1024)]\n\n"
            "def get_init_inputs():\n    return [features]\n")
    checked = RELU_MODULE_PLAN
    result = run_harness(tmp_path / "check", SCRIPTS[2], code, {"plan.json": checked}, ["--plan", "plan.json"])
    assert result["status"] == "pass", result
    assert any(n.startswith("checked with batch_size = ") for n in result["notes"]), result["notes"]
