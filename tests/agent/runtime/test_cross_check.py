"""The independent check judges a kernel on the service's own inputs, whatever the kernel's own files say."""

from pathlib import Path

import pytest

from agent.generators.base import KernelFiles, LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.ir.edges import odd_sizes
from agent.reader import read_spec
from agent.runtime.cross_check import SEEDS, cross_check

SPEC = read_spec("fused bias-add + GELU, x [16, 300] fp32, bias [300]")
TIMEOUT_S = 180.0


def _files() -> KernelFiles:
    return ElementwiseGenerator().generate(SPEC, LaunchConfig(schedule="flat", block_size=256, num_warps=4))


def _with_kernel(files: KernelFiles, old: str, new: str) -> KernelFiles:
    name = files.name_of("triton")
    assert old in files.files[name]
    return files.model_copy(update={"files": {**files.files, name: files.files[name].replace(old, new)}})


def test_a_correct_kernel_passes_every_case_and_seed_including_our_own_odd_shapes(tmp_path: Path) -> None:
    result = cross_check(_files(), SPEC, tmp_path, device="cpu", timeout_s=TIMEOUT_S)
    assert result.status == "pass"
    edges = [c for c in result.result["cases"] if c["kind"] == "edge"]
    assert edges and {tuple(c["shapes"]["bias"]) for c in edges} >= {(1,), (3,)}  # size 1 and a small prime
    expected = (len(SPEC.shape_cases()) + len(edges) // len(SEEDS)) * len(SPEC.dtype_cases()) * len(SEEDS)
    assert result.result["cases_run"] == expected and result.result["cases_failed"] == 0


def test_a_reference_file_that_computes_something_else_fails_against_the_spec(tmp_path: Path) -> None:
    files = _files()  # a colluding pair: kernel and baseline both compute gelu(x) - bias, not gelu(x + bias)
    name = files.name_of("baseline")
    baseline = files.files[name].replace("out = F.gelu(x + bias)", "out = F.gelu(x) - bias")
    assert baseline != files.files[name]
    kernel = _with_kernel(files, "out = _gelu_erf(t0)", "out = _gelu_erf(x) - bias")
    colluding = kernel.model_copy(update={"files": {**kernel.files, name: baseline}})
    result = cross_check(colluding, SPEC, tmp_path, device="cpu", timeout_s=TIMEOUT_S)
    assert result.result["status"] == "fail"
    assert all("something other than the spec's reading" in c["message"] for c in result.result["cases"])


def test_an_element_the_kernel_never_writes_fails_the_check(tmp_path: Path) -> None:
    files = _with_kernel(_files(), "mask = offsets < n_elements", "mask = offsets < n_elements - 1")
    result = cross_check(files, SPEC, tmp_path, device="cpu", timeout_s=TIMEOUT_S)
    assert result.result["status"] == "fail" and result.result["cases_failed"] == result.result["cases_run"]


def test_a_kernel_that_fixed_its_device_when_written_is_refused_with_the_reason(tmp_path: Path) -> None:
    files = _with_kernel(_files(), "DEVICE = resolve_device()", 'DEVICE = "cuda"')
    result = cross_check(files, SPEC, tmp_path, device="cpu", timeout_s=TIMEOUT_S)
    assert result.result == {
        "status": "error",
        "message": "bias_add_gelu_triton.DEVICE is 'cuda' but the job runs on 'cpu': "
                   "resolve it at run time (KERNELGEN_DEVICE)",
    }


def test_a_result_torch_computed_beside_the_launch_fails_whatever_the_source_looks_like(tmp_path: Path) -> None:
    # The launch runs, then the wrapper hands back what torch computed (as a hidden method or a builtin would).
    files = _with_kernel(_files(), "        num_warps=NUM_WARPS,\n    )\n    return out\n",
                         "        num_warps=NUM_WARPS,\n    )\n    return torch.nn.functional.gelu(x + bias)\n")
    result = cross_check(files, SPEC, tmp_path, device="cpu", timeout_s=TIMEOUT_S)
    assert result.result["status"] == "fail" and result.result["cases_failed"] == result.result["cases_run"]
    message = result.result["cases"][0]["message"]
    assert "computed with torch outside its Triton kernels" in message and "aten.add" in message


def test_a_result_without_any_launch_fails(tmp_path: Path) -> None:
    files = _with_kernel(_files(), "    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)\n",
                         "    return out.zero_()\n    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)\n")
    result = cross_check(files, SPEC, tmp_path, device="cpu", timeout_s=TIMEOUT_S)
    assert result.result["status"] == "fail"
    assert all("launched no Triton kernel" in c["message"] for c in result.result["cases"])


@pytest.mark.parametrize(("returned", "words"), [
    ("out.copy_(x)", "torch wrote into the result after the kernel did"),
    ("x.clone()", "returned memory no Triton kernel was given"),
])
def test_data_torch_moved_into_the_result_after_the_launch_fails(returned: str, words: str, tmp_path: Path) -> None:
    # Copies and clones compute nothing, so the op log alone would let them through: whose memory the result is,
    # and who wrote it last, decide.
    files = _with_kernel(_files(), "        num_warps=NUM_WARPS,\n    )\n    return out\n",
                         f"        num_warps=NUM_WARPS,\n    )\n    return {returned}\n")
    result = cross_check(files, SPEC, tmp_path, device="cpu", timeout_s=TIMEOUT_S)
    assert result.result["status"] == "fail"
    assert all(words in c["message"] for c in result.result["cases"])


def test_probes_of_a_spec_read_in_words_change_each_size_everywhere_it_appears() -> None:
    # No IR says how the dims relate: a size shared by two inputs (the bias and x's last dim) changes together.
    assert odd_sizes({"x": [64, 300], "bias": [300]}) == [
        {"x": [1, 1], "bias": [1]}, {"x": [5, 3], "bias": [3]}, {"x": [127, 129], "bias": [129]},
        {"x": [3, 257], "bias": [257]}, {"x": [1, 1031], "bias": [1031]}]
