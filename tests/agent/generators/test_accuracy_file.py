"""The generated accuracy test catches broken kernels, including unwritten outputs."""

from pathlib import Path

import pytest

from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.runtime.sandbox import run_file
from agent.spec import OpSpec, TensorSpec

pytestmark = pytest.mark.bubblewrap  # each test runs an accuracy file as untrusted code

SPEC = OpSpec(name="bias_gelu", formula="gelu(x + bias)", inputs=[
    TensorSpec(name="x", shapes=[[37, 129]], dtypes=["float16"]),
    TensorSpec(name="bias", shapes=[[129]], dtypes=["float16"]),
])


def _accuracy(files: dict[str, str], workdir: Path) -> dict:
    result = run_file(files, "bias_gelu_accuracy.py", workdir, device="cpu", timeout_s=300)
    return {"status": result.status, **result.result}


def test_correct_kernel_passes_every_case(tmp_path: Path) -> None:
    files = ElementwiseGenerator().generate(SPEC, LaunchConfig()).files
    result = _accuracy(files, tmp_path)
    assert result["status"] == "pass"
    assert result["cases_run"] >= 6 and result["cases_failed"] == 0


@pytest.mark.parametrize(
    ("original", "broken"),
    [
        ("mask = offsets < n_elements", "mask = offsets < n_elements - 1"),  # last element never written
        ("out = _gelu_erf(t0)", "out = 0.9 * _gelu_erf(t0)"),  # wrong math
        ("(offsets // bias_inner0) % bias_size0", "(offsets // bias_inner0) % (bias_size0 - 1)"),  # wrong broadcast
    ],
)
def test_broken_kernel_fails_accuracy(original: str, broken: str, tmp_path: Path) -> None:
    files = dict(ElementwiseGenerator().generate(SPEC, LaunchConfig()).files)
    source = files["bias_gelu_triton.py"]
    assert original in source
    files["bias_gelu_triton.py"] = source.replace(original, broken)
    result = _accuracy(files, tmp_path)
    assert result["status"] == "fail"
    assert result["cases_failed"] > 0


@pytest.mark.parametrize("text", [
    "cumsum along the last dim of x, x [3, 257] fp32",  # large values: errors grow with them, so does atol
    "l2 normalize each row of x, x [3, 257] fp32",  # a NaN row stays NaN, as F.normalize gives it
])
def test_a_right_row_kernel_passes_the_special_cases(text: str, tmp_path: Path) -> None:
    from agent.generators.offline.dispatch import OfflineGenerator
    from agent.reader import read_spec
    from agent.runtime.devices import detect

    spec = read_spec(text)
    generator = OfflineGenerator()
    schedule = generator.schedules(spec)[0]
    files = generator.generate(spec, generator.default_config(spec, schedule, detect("cpu"))).files
    result = run_file(files, f"{spec.name}_accuracy.py", tmp_path, device="cpu", timeout_s=300)
    special = [c for c in result.result["cases"] if c["kind"].startswith("special:")]
    assert len(special) == 3 and all(c["status"] == "pass" for c in special), special
    assert result.status == "pass"


def test_an_elementwise_kernel_that_drops_nan_fails_its_nan_case(tmp_path: Path) -> None:
    from agent.reader import read_spec

    spec = read_spec("relu of x [33, 65] fp32")
    files = dict(ElementwiseGenerator().generate(spec, LaunchConfig()).files)
    assert ", propagate_nan=tl.PropagateNan.ALL)" in files["relu_triton.py"]
    files["relu_triton.py"] = files["relu_triton.py"].replace(", propagate_nan=tl.PropagateNan.ALL)", ")")
    result = run_file(files, "relu_accuracy.py", tmp_path, device="cpu", timeout_s=300)
    failed = [c["kind"] for c in result.result["cases"] if c["status"] != "pass"]
    assert result.status == "fail" and failed == ["special:nan"]  # relu(NaN) is NaN in PyTorch, 0 here
