"""KernelBench level-1 modules given as the spec: activations become verified kernels offline, on the CPU, checked
against the person's own module; reductions, norms and matmul are read and refused at generation, node named."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from agent.runner import run_job
from agent.state import JobRequest
from kernelgen.settings import Settings

sys.path.insert(0, str(Path(__file__).parent / "reader"))
from corpus_loader import code_of, load_corpus  # noqa: E402

ELEMENTWISE = ["kb-relu", "kb-gelu", "kb-softsign", "kb-hardtanh", "kb-elu-alpha-init", "kb-selu", "kb-swish",
               "kb-softplus", "kb-leaky-relu-slope-init", "kb-sigmoid", "kb-tanh", "kb-mingpt-new-gelu"]
# The node the offline generator does not lower, as the refusal names it and as the IR text writes it.
NOT_ELEMENTWISE = {"kb-sum-dim-keepdim": ("sum", "sum("), "kb-softmax": ("softmax", "softmax("),
                   "kb-layer-norm-module": ("layer_norm", "layer_norm("), "kb-matmul": ("matmul", "A @ B")}


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    return {case.id: code_of(case) for case in load_corpus() if case.id in [*ELEMENTWISE, *NOT_ELEMENTWISE]}


def _run(tmp_path: Path, source: str) -> tuple[dict[str, object], Path]:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    out = tmp_path / "out"
    request = JobRequest(spec_text=source, out_dir=str(out), device="cpu", rounds=1)
    final = run_job(request, settings, lambda stage, message: None)
    return dict(final), out


def _small(source: str) -> str:
    """Shrink KernelBench's sizes to an odd shape the interpreter checks quickly (the edges stay covered)."""
    source = re.sub(r"^batch_size = \d+$", "batch_size = 3", source, flags=re.M)
    return re.sub(r"^dim = \d+$", "dim = 333", source, flags=re.M)


@pytest.mark.parametrize("case_id", ELEMENTWISE)
def test_a_kernelbench_activation_becomes_a_verified_kernel_offline(case_id: str, corpus: dict[str, str],
                                                                    tmp_path: Path) -> None:
    source = _small(corpus[case_id])
    final, out = _run(tmp_path, source)
    assert final["status"] == "verified", final.get("message")
    report = json.loads((out / "report.json").read_text())
    assert report["understood"]["source"] == "code" and report["understood"]["inputs"][0]["shapes"] == [[3, 333]]
    baseline = next(out.glob("*_baseline.py")).read_text()
    assert "class Model(nn.Module)" in baseline  # the reference is the person's module, not our reading of it


@pytest.mark.parametrize("case_id", list(NOT_ELEMENTWISE))
def test_a_kernelbench_reduction_norm_or_matmul_is_read_then_refused_naming_the_node(
        case_id: str, corpus: dict[str, str], tmp_path: Path) -> None:
    final, out = _run(tmp_path, corpus[case_id])
    assert final["status"] == "rejected"
    message = str(final["message"])
    node, written = NOT_ELEMENTWISE[case_id]
    assert "offline generator" in message and node in message, message
    report = json.loads((out / "report.json").read_text())
    assert report["understood"]["source"] == "code" and written in report["understood"]["ir"]
