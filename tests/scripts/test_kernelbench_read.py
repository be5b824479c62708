"""scripts/kernelbench_read.py: two task files of KernelBench's form, one read and one not, and a rerun that skips."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HEADER = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n" \
         "        super(Model, self).__init__()\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
FOOTER = "\ndef get_inputs():\n    return [torch.rand(4, 8)]\n\ndef get_init_inputs():\n    return []\n"
RELU = HEADER + "        return torch.relu(x)\n" + FOOTER
TOPK = HEADER + "        return torch.topk(x, 2, dim=1)\n" + FOOTER  # values and indices: not one tensor


def _script():
    spec = importlib.util.spec_from_file_location("kernelbench_read_script", ROOT / "scripts" / "kernelbench_read.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.bubblewrap
def test_read_and_not_read_then_a_rerun_skips(tmp_path: Path) -> None:
    script = _script()
    tasks, out = tmp_path / "level1", tmp_path / "out"
    tasks.mkdir()
    (tasks / "1_ReLU.py").write_text(RELU)
    (tasks / "2_TopK.py").write_text(TOPK)
    (tasks / "notes.txt").write_text("not a task")
    assert script.main([str(tasks), str(out), "--quiet"]) == 0
    report = json.loads((out / "kernelbench_read.json").read_text())
    rows = {row["name"]: row for row in report["rows"]}
    assert list(rows) == ["1_ReLU", "2_TopK"]
    assert rows["1_ReLU"]["status"] == "read" and "relu" in rows["1_ReLU"]["pytorch"]
    assert rows["2_TopK"]["status"] in ("question", "refused") and rows["2_TopK"]["text"]
    summary = (out / "kernelbench_read.md").read_text()
    assert "| read | 1 |" in summary and "2_TopK" in summary.split("## Questions")[1]
    seconds = {name: row["seconds"] for name, row in rows.items()}
    assert script.main([str(tasks), str(out), "--quiet"]) == 0  # nothing left to read: returns at once
    again = json.loads((out / "kernelbench_read.json").read_text())["rows"]
    assert {row["name"]: row["seconds"] for row in again} == seconds


def test_classify_and_first_sentence() -> None:
    script = _script()
    assert script.classify("question", "The code uses torch.fft.fft, which the IR does not have.") == "refused"
    assert script.classify("question", "The code returns several tensors (values and indices).") == "question"
    assert script.first_sentence("It ran past 80 s and was stopped. More.") == "It ran past N s and was stopped."
