"""scripts/tritonbench.py: the reader measured on TritonBench-T, three tasks end to end, and the classifier itself."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from queue import Queue

import pytest

from agent.reading import InputReading, Reading
from kernelgen.suites.tritonbench.compare import judge
from kernelgen.suites.tritonbench.data import find_references, load_tasks
from kernelgen.suites.tritonbench.report import OUTCOMES
from kernelgen.suites.tritonbench.run import SEEDS, ProbeServer, probe
from kernelgen.suites.tritonbench.spec_text import spec_text

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "benchmarks" / "tritonbench-t"
MIRROR = Path("/work/.mirror/thunlp+TritonBench/repo")
REFS = Path(os.environ.get("TRITONBENCH_REFS", MIRROR))
TASKS = ["torch.sigmoid", "relu_sqrt", "torch.asin"]

pytestmark = pytest.mark.skipif(not (DATA / "TritonBench_T_v1.jsonl").exists() or not REFS.exists(),
                                reason="TritonBench-T's data or reference files are not on this machine")


def _script():
    spec = importlib.util.spec_from_file_location("tritonbench_script", ROOT / "scripts" / "tritonbench.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reading(ir: str, pytorch: str, name: str = "x") -> Reading:
    return Reading(op="asin", family="elementwise", ir=ir, pytorch=pytorch,
                   inputs=[InputReading(name=name, dtypes=["float32"], shapes=[[5]])])


@pytest.fixture(scope="module")
def asin_runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The benchmark's asin, run out of process on its test's first call: capture and reference outputs."""
    task = next(t for t in load_tasks(DATA) if t.name == "torch.asin")
    servers: Queue[ProbeServer] = Queue()
    servers.put(ProbeServer())
    try:
        return probe(task, find_references(DATA, REFS, []), tmp_path_factory.mktemp("probe"), servers, 20.0)
    finally:
        servers.get().close()


def test_the_probe_records_the_tests_first_call_and_the_spec_states_it(asin_runs: dict) -> None:
    capture = asin_runs["capture"]
    assert [(t["name"], t["dtype"], t["shape"]) for t in capture["tensors"]] == [("input_tensor", "float32", [5])]
    assert len(asin_runs["runs"]) == len(SEEDS) and not capture["random"]
    task = next(t for t in load_tasks(DATA) if t.name == "torch.asin")
    text = spec_text(task.instructions["comp"], capture)
    assert text.startswith("Functional Description:") and "After generation" not in text
    assert text.splitlines()[-1] == "Inputs: input_tensor float32 [5]"


def test_the_classifier_tells_a_right_reading_from_a_wrong_one(asin_runs: dict) -> None:
    names = [t["name"] for t in asin_runs["capture"]["tensors"]]
    # The IR has no asin: the reading's PyTorch statements run instead; its input `x` is matched by order.
    right = judge(_reading("", "out = torch.asin(x)"), names, asin_runs["runs"])
    assert (right.outcome, right.mapping, right.evaluator) == ("right", "order", "pytorch")
    wrong = judge(_reading("sin(x)", "out = torch.sin(x)"), names, asin_runs["runs"])
    assert (wrong.outcome, wrong.evaluator) == ("wrong", "ir") and "differ" in wrong.reason
    by_name = judge(_reading("", "out = torch.sin(input_tensor)", "input_tensor"), names, asin_runs["runs"])
    assert (by_name.outcome, by_name.mapping) == ("wrong", "name")
    extra = Reading(op="asin", family="elementwise", ir="x + y", pytorch="out = x + y",
                    inputs=[InputReading(name=n, dtypes=["float32"], shapes=[[5]]) for n in "xy"])
    assert "2 inputs" in judge(extra, names, asin_runs["runs"]).reason


def test_the_harness_reports_every_task_and_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _script().main([str(tmp_path), "--data", str(DATA), "--refs", str(REFS), "--tasks", ",".join(TASKS),
                           "--quiet", "--jobs", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["simp", "comp"]
    assert all(line.endswith("of 3") and line.split(": ")[1].startswith("right ") for line in lines)
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    results = report["results"]
    assert sorted((r["task"], r["form"]) for r in results) == sorted((t, f) for t in TASKS for f in ("simp", "comp"))
    assert all(r["outcome"] in OUTCOMES for r in results)
    assert all(r["appended"][0].startswith("Inputs: ") for r in results)  # every reference ran
    for r in results:
        if r["outcome"] in ("question", "reader exception"):
            assert r["question"]
        if r["outcome"] in ("right", "wrong"):
            assert r["pytorch"] and r["mapping"] in ("name", "order")
    table = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert all(f"| {t} | {f} |" in table for t in TASKS for f in ("simp", "comp"))
    assert report["summary"]["simp"] == lines[0]
    # torch.sigmoid's prompt reads, and its reading is checked against the benchmark's function: right.
    assert {r["form"]: r["outcome"] for r in results if r["task"] == "torch.sigmoid"} == {"simp": "right",
                                                                                           "comp": "right"}
