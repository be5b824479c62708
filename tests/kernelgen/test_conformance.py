"""The conformance suite: its specs read as written, its references fit the readings, and its own check judges."""

import inspect
import json
from pathlib import Path

import pytest
import torch

from agent.reader.outcome import read_outcomes
from kernelgen import conformance_check
from kernelgen.bench import SUITES
from kernelgen.conformance import prose_suite, records, stage_clock, to_markdown

SUITE = SUITES / "conformance.jsonl"
# Specs the reader asks about although they are plain (the suite keeps them: they are findings, not typos). Empty
# since "|x| for x of shape ..." reads (agent/reader/formulas.py: a formula may start at a bar).
KNOWN_QUESTIONS: set[str] = set()


def test_the_suite_covers_every_engine_dtype_and_odd_shapes() -> None:
    rows = records(SUITE)
    assert len(rows) >= 60 and len({r["name"] for r in rows}) == len(rows)
    text = " ".join(r["spec"] for r in rows)
    for word in ("fp16", "bf16", "float32", "[1, ", "形状"):
        assert word in text
    for reference in (r["reference"] for r in rows):
        namespace: dict = {"torch": torch}
        exec(reference, namespace)  # noqa: S102
        assert callable(namespace["reference"])


def test_every_spec_reads_into_the_inputs_its_reference_takes(tmp_path: Path) -> None:
    questions = []
    for row in records(SUITE):
        outcome = read_outcomes(row["spec"], tmp_path / row["name"])[0]
        if outcome.status != "read":
            questions.append(row["name"])
            continue
        assert outcome.reading is not None
        namespace: dict = {"torch": torch}
        exec(row["reference"], namespace)  # noqa: S102
        arguments = list(inspect.signature(namespace["reference"]).parameters)
        assert arguments == [i.name for i in outcome.reading.inputs], row["name"]
    assert set(questions) == KNOWN_QUESTIONS


def test_the_jobs_get_the_prose_alone(tmp_path: Path) -> None:
    written = prose_suite(SUITE, tmp_path)
    lines = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    assert written.name == SUITE.name and len(lines) == len(records(SUITE))
    assert all(set(line) == {"name", "spec"} for line in lines)


def test_stage_clock_keeps_each_stages_seconds(tmp_path: Path) -> None:
    seen = []
    report = stage_clock(tmp_path / "task_001_relu", lambda stage, message: seen.append(stage))
    for stage in ("requirements", "accuracy", "accuracy", "finalize"):
        report(stage, "")
    kept = json.loads((tmp_path / "stage_seconds" / "task_001_relu.json").read_text())
    assert seen == ["requirements", "accuracy", "accuracy", "finalize"]
    assert set(kept["stages"]) == {"requirements", "accuracy"} and kept["last"] == "finalize"


def _verdict(kernel_source: str, reference: str, inputs: list, tmp_path: Path, family: str = "") -> dict:
    (tmp_path / "k.py").write_text(kernel_source)
    case = {"name": "c", "module": "k.py", "entry": "op", "family": family, "inputs": inputs, "reference": reference}
    return conformance_check.check(case, tmp_path, "cpu")


RELU = "def reference(x):\n    return torch.relu(x)"


def test_the_check_passes_a_right_kernel_and_names_what_is_wrong(tmp_path: Path) -> None:
    right = "import torch\ndef op(x):\n    return torch.relu(x.float()).to(x.dtype)\n"
    assert _verdict(right, RELU, [["x", "bfloat16", [3, 5]]], tmp_path)["correct"]
    off_by_one = "import torch\ndef op(x):\n    y = torch.relu(x)\n    y[-1, -1] += 1\n    return y\n"
    verdict = _verdict(off_by_one, RELU, [["x", "float32", [3, 5]]], tmp_path)
    assert not verdict["correct"] and "1 of 15 values" in verdict["why"]
    wrong_dtype = "import torch\ndef op(x):\n    return torch.relu(x).float()\n"
    assert "dtype" in _verdict(wrong_dtype, RELU, [["x", "float16", [4]]], tmp_path)["why"]
    nan = "import torch\ndef op(x):\n    return torch.full_like(x, float('nan'))\n"
    assert "NaN" in _verdict(nan, RELU, [["x", "float32", [4]]], tmp_path)["why"]


def test_the_bound_allows_the_references_own_error(tmp_path: Path) -> None:
    # An fp16 sum of 4096 values: eager (fp16 in, fp16 out) is itself off float64; a kernel as far passes.
    reference = "def reference(x):\n    return x.sum(dim=-1)"
    like_eager = "import torch\ndef op(x):\n    return x.sum(dim=-1)\n"
    verdict = _verdict(like_eager, reference, [["x", "float16", [2, 4096]]], tmp_path)
    assert verdict["correct"] and verdict["eager_err"] == pytest.approx(verdict["kernel_err"])


def test_class_indices_stay_below_the_class_count() -> None:
    logits, target = conformance_check.make_inputs([["logits", "float32", [64, 3]], ["target", "int64", [64]]],
                                                   "cpu", 1)
    assert target.dtype == torch.int64 and int(target.max()) < 3 and logits.shape == (64, 3)


def test_the_markdown_names_each_case_and_the_pass_rate() -> None:
    case = {"name": "relu", "family": "elementwise", "dtype": "float32", "shape": [7], "status": "verified",
            "verified": True, "correct": True, "kernel_err": 0.0, "eager_err": 0.0, "check": "ok",
            "kernel_ms": 0.01, "eager_ms": 0.02, "compile_ms": None, "x_compile": None, "pct_of_roofline": None,
            "job_s": 12.5, "stage_s": {"accuracy": 3.0}, "reason": None}
    totals = {"cases": 1, "verified": 1, "correct": 1, "pass_rate": 1.0, "not_run": 0, "median_job_s": 12.5,
              "sum_job_s": 12.5, "below_0_95_compile": 0}
    text = to_markdown({"suite": "conformance", "device": "cpu", "totals": totals, "cases": [case]})
    assert "independently correct 1 of 1 (100%)" in text and "| relu | elementwise |" in text
