"""A parameter search checks each configuration with the accuracy test's own bound, eager's error included."""

from pathlib import Path

import pytest

from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.reader import read_spec
from agent.runtime.tuning import search_configs

FLAT = LaunchConfig(schedule="flat", block_size=256, num_warps=4)
LAUNCH_END = "        num_warps=NUM_WARPS,\n    )\n    return out\n"


def _search(kernel_error: float, eager_error: float, workdir: Path):  # noqa: ANN202
    spec = read_spec("ReLU of x, x [16, 300] fp32")
    files = dict(ElementwiseGenerator().generate(spec, FLAT).files)
    assert LAUNCH_END in files["relu_triton.py"]
    files["relu_triton.py"] = files["relu_triton.py"].replace(
        LAUNCH_END, LAUNCH_END.replace("return out", f"return out + {kernel_error}"))
    # Eager PyTorch in float32 off the float64 truth by eager_error (as a variance of large values is, say).
    off = f"({eager_error} if x.dtype == torch.float32 else 0.0)"
    files["relu_baseline.py"] = files["relu_baseline.py"].replace(
        "    out = torch.relu(x)\n", f"    out = torch.relu(x) + {off}\n")
    kernel = ElementwiseGenerator().generate(spec, FLAT).model_copy(update={"files": files})
    return search_configs(kernel, spec, [FLAT], workdir, device="cpu", timeout_s=120.0)


@pytest.mark.parametrize(("kernel_error", "eager_error", "status"), [
    (5e-3, 1e-2, "ok"),  # closer to float64 than eager is: not rejected ("no configuration passed" before)
    (5e-3, 0.0, "wrong"),  # eager exact: the spec's own float32 tolerance holds
    (5e-2, 1e-2, "wrong"),  # further than eager's own error
])
def test_the_search_bound_allows_eagers_own_error(kernel_error: float, eager_error: float, status: str,
                                                   tmp_path: Path) -> None:
    result = _search(kernel_error, eager_error, tmp_path / "search")
    assert result.status == "pass", result.message
    trial = result.trials[0]
    assert trial.status == status, trial.message
    if status == "wrong":
        assert "the accuracy test's bound" in trial.message and "eager's own error" in trial.message


def test_the_search_scales_atol_for_long_sums_as_the_accuracy_test_does(tmp_path: Path) -> None:
    # A row sum over 4096 values: the accuracy test allows atol * sqrt(4096); the search allowed the bare atol and
    # so rejected every configuration of versions the accuracy test passes (issue 50: fp32 matmul, cumsum searches).
    from agent.generators.offline.dispatch import OfflineGenerator
    from agent.runtime.devices import detect

    spec = read_spec("Sum each row of x, x [16, 4096] fp32")
    generator = OfflineGenerator()
    config = generator.default_config(spec, generator.schedules(spec)[0], detect("cpu"))
    generated = generator.generate(spec, config)
    files = dict(generated.files)
    name = f"{generated.op}_triton.py"
    end = "        num_warps=NUM_WARPS,\n    )\n    return out\n"
    assert files[name].count(end) == 1
    files[name] = files[name].replace(end, end.replace("return out", "return out + 3e-3"))  # within 1e-4 * 64
    result = search_configs(generated.model_copy(update={"files": files}), spec, [config], tmp_path / "search",
                            device="cpu", timeout_s=120.0)
    assert result.status == "pass" and result.trials[0].status == "ok", result.trials[0].message
