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
from tests.sampling import ci_sample

sys.path.insert(0, str(Path(__file__).parent / "reader"))
from corpus_loader import code_of, load_corpus  # noqa: E402

pytestmark = pytest.mark.bubblewrap  # a code spec runs only inside bubblewrap

ELEMENTWISE = ["kb-relu", "kb-gelu", "kb-softsign", "kb-hardtanh", "kb-elu-alpha-init", "kb-selu", "kb-swish",
               "kb-softplus", "kb-leaky-relu-slope-init", "kb-sigmoid", "kb-tanh", "kb-mingpt-new-gelu"]
# Written offline by the matmul engine, the IR text as the reading shows it.
PRODUCTS = {"kb-matmul": "A @ B"}
# Written offline by the row engine.
ROW_FAMILY = {"kb-sum-dim-keepdim": "sum(", "kb-softmax": "softmax(", "kb-layer-norm-module": "layer_norm("}


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    wanted = [*ELEMENTWISE, *PRODUCTS, *ROW_FAMILY]
    return {case.id: code_of(case) for case in load_corpus() if case.id in wanted}


def _run(tmp_path: Path, source: str) -> tuple[dict[str, object], Path]:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    out = tmp_path / "out"
    request = JobRequest(spec_text=source, out_dir=str(out), device="cpu", rounds=1)
    final = run_job(request, settings, lambda stage, message: None)
    return dict(final), out


def _small(source: str) -> str:
    """Shrink KernelBench's sizes to an odd shape the interpreter checks quickly (the edges stay covered)."""
    for name, size in (("batch_size", 3), ("dim", 333), ("features", 4), ("dim1", 5), ("dim2", 7), ("M", 37),
                       ("K", 45), ("N", 29)):
        source = re.sub(rf"^{name} = \d+$", f"{name} = {size}", source, flags=re.M)
    return source


@pytest.mark.parametrize("case_id", ci_sample(ELEMENTWISE, every=6))
def test_a_kernelbench_activation_becomes_a_verified_kernel_offline(case_id: str, corpus: dict[str, str],
                                                                    tmp_path: Path) -> None:
    source = _small(corpus[case_id])
    final, out = _run(tmp_path, source)
    assert final["status"] == "verified", final.get("message")
    report = json.loads((out / "report.json").read_text())
    assert report["understood"]["source"] == "code" and report["understood"]["inputs"][0]["shapes"] == [[3, 333]]
    baseline = next(out.glob("*_baseline.py")).read_text()
    assert "class Model(nn.Module)" in baseline  # the reference is the person's module, not our reading of it


# Softmax stands for the family in CI; the sum and the layer-norm module (a minute each here) run in a full run.
@pytest.mark.parametrize("case_id", [c if c == "kb-softmax" else pytest.param(c, marks=pytest.mark.slow)
                                     for c in ROW_FAMILY])
def test_a_kernelbench_reduction_softmax_or_norm_module_becomes_a_verified_kernel_offline(
        case_id: str, corpus: dict[str, str], tmp_path: Path) -> None:
    final, out = _run(tmp_path, _small(corpus[case_id]))
    assert final["status"] == "verified", final.get("message")
    report = json.loads((out / "report.json").read_text())
    assert report["understood"]["source"] == "code" and ROW_FAMILY[case_id] in report["understood"]["ir"]
    baseline = next(out.glob("*_baseline.py")).read_text()
    assert "class Model(nn.Module)" in baseline  # the reference is the person's module, not our reading of it


@pytest.mark.parametrize("case_id", list(PRODUCTS))
def test_a_kernelbench_matmul_becomes_a_verified_kernel_against_the_persons_module(
        case_id: str, corpus: dict[str, str], tmp_path: Path) -> None:
    final, out = _run(tmp_path, _small(corpus[case_id]))
    assert final["status"] == "verified", final.get("message")
    report = json.loads((out / "report.json").read_text())
    assert report["understood"]["source"] == "code" and PRODUCTS[case_id] in report["understood"]["ir"]
    assert "class Model(nn.Module)" in next(out.glob("*_baseline.py")).read_text()
    assert "tl.dot(" in next(out.glob("*_triton.py")).read_text()


def test_a_pasted_snippet_becomes_a_baseline_that_runs_on_its_own(tmp_path: Path) -> None:
    import subprocess

    snippet = "```python\nh = x * torch.sigmoid(x)\nreturn h * y\n```\nx, y: float32 [16, 33]\n"
    final, out = _run(tmp_path, snippet)  # no imports, a top-level return: the way people paste
    assert final["status"] == "verified", final.get("message")
    baseline = next(out.glob("*_baseline.py"))
    run = subprocess.run([sys.executable, baseline.name], cwd=out, capture_output=True, text=True, timeout=120,
                         env={"KERNELGEN_DEVICE": "cpu", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("case_id", ["kb-relu", pytest.param("kb-layer-norm-module", marks=pytest.mark.slow)])
def test_the_baseline_of_code_given_as_the_spec_runs_under_torch_compile(case_id: str, corpus: dict[str, str],
                                                                         tmp_path: Path) -> None:
    import subprocess

    _, out = _run(tmp_path, _small(corpus[case_id]))
    baseline = next(out.glob("*_baseline.py"))
    op = baseline.name.removesuffix("_baseline.py")
    inputs = json.loads((out / "report.json").read_text())["understood"]["inputs"]
    # The performance file compares with torch.compile of this baseline: it must compile, not only run eagerly.
    script = (f"import torch\nfrom {op}_baseline import {op} as reference\n"
              f"inputs = [torch.randn(*shape) for shape in {[i['shapes'][0] for i in inputs]!r}]\n"
              "compiled = torch.compile(reference, dynamic=False)\n"
              "assert torch.allclose(compiled(*inputs), reference(*inputs), atol=1e-5)\nprint('compiled')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=out, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-2000:]
