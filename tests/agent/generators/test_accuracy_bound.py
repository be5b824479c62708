"""The generated accuracy test's bound allows the reference's own error (eager vs float64), and no more."""

import importlib
import sys
from pathlib import Path

import torch

from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.spec import OpSpec, TensorSpec

SPEC = OpSpec(name="bound_relu", formula="relu(x)", inputs=[TensorSpec(name="x", shapes=[[4, 8]], dtypes=["float32"])])


def _compare(tmp_path: Path):  # noqa: ANN202
    for name, source in ElementwiseGenerator().generate(SPEC, LaunchConfig()).files.items():
        (tmp_path / name).write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module("bound_relu_accuracy").compare
    finally:
        sys.path.remove(str(tmp_path))


def test_a_kernel_as_close_as_eager_passes_and_a_further_one_fails(tmp_path: Path) -> None:
    compare = _compare(tmp_path)
    expected = torch.linspace(-1000.0, 1000.0, 32, dtype=torch.float64).reshape(4, 8)
    eager = (expected + 1e-2).float()  # eager itself is 1e-2 from float64 (far past fp32's atol and rtol)
    closer = (expected - 5e-3).float()
    passed = compare(closer, expected, eager, {"x": [4, 8]})
    assert passed["status"] == "pass" and passed["eager_max_abs_err"] >= 1e-2 - 1e-6
    further = expected.clone().float()
    further[1, 1] += 0.5  # one value well past eager's own error
    failed = compare(further, expected, eager, {"x": [4, 8]})
    assert failed["status"] == "fail" and failed["mismatches"] == 1


def test_with_an_exact_eager_the_bound_is_the_old_one(tmp_path: Path) -> None:
    compare = _compare(tmp_path)
    expected = torch.linspace(-1.0, 1.0, 32, dtype=torch.float64).reshape(4, 8)
    off = (expected + 1e-3).float()
    result = compare(off, expected, expected.float(), {"x": [4, 8]})
    assert result["status"] == "fail" and result["eager_max_abs_err"] < 1e-7
