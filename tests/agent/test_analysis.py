"""The definition's FLOPs per element and report.json's spec.flops_per_output come from one count."""

from __future__ import annotations

import pytest

from agent.analysis import analyse
from agent.ir.count import total_flops
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo

H100 = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", peak_gbs=3350, peak_tflops=67, memory_bytes=80 << 30)


@pytest.mark.parametrize("text", [
    "fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]",
    "sum of x over dim 1, x [64, 128] fp32",
])
def test_report_and_definition_give_the_same_flops_per_output_element(text: str) -> None:
    spec = read_spec(text)
    case, dtypes = spec.shape_cases()[0], spec.dtype_cases()[0]
    counted = total_flops(spec.expr, spec.input_types(case, dtypes)) / spec.output_type(case, dtypes).numel
    reported = spec.model_dump(mode="json")["flops_per_output"]  # what report.json's "spec" holds
    assert reported == pytest.approx(counted) and reported > 0
    assert analyse(spec, H100).flops_per_element == pytest.approx(reported, abs=0.005)


def test_a_whole_count_prints_without_a_fraction() -> None:
    spec = read_spec("fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]")
    shown = analyse(spec, H100).flops_per_element
    assert isinstance(shown, int) and str(shown) == str(round(spec.flops_per_output))


def test_a_16_bit_product_is_held_to_the_tensor_cores_and_a_float32_one_to_the_cuda_cores() -> None:
    device = H100.model_copy(update={"peak_tensor_tflops": 989.4})
    half = analyse(read_spec("C = A @ B, A [4096, 4096] fp16, B [4096, 4096] fp16"), device)
    assert half.tensor_tflops == 989.4 and half.cases[0].peak_tflops == 989.4 and half.cases[0].bound == "compute"
    # 2 * 4096^3 FLOPs at 989.4 TFLOP/s: 0.139 ms (at the fp32 rate it would read 2.05 ms).
    assert half.cases[0].bound_ms == pytest.approx(2 * 4096**3 / 989.4e12 * 1e3)
    full = analyse(read_spec("C = A @ B, A [4096, 4096] fp32, B [4096, 4096] fp32"), device)
    assert full.cases[0].peak_tflops == 67
    softmax = analyse(read_spec("softmax over the last dim of x [64, 1000] fp16"), device)
    assert softmax.tensor_tflops is None and softmax.cases[0].peak_tflops == 67
