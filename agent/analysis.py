"""Bytes, FLOPs, arithmetic intensity and roofline bounds computed from a spec."""

from __future__ import annotations

import math

from pydantic import BaseModel

from agent.ir.count import minimal_bytes, total_flops
from agent.ir.family import family_of
from agent.runtime.devices import PEAKS, REFERENCE_DEVICE, DeviceInfo
from agent.spec import OpSpec

BYTES_PER_ELEMENT = {"float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "bool": 1}
# Families whose FLOPs are matrix products: with 16-bit operands they run on the tensor cores.
PRODUCT_FAMILIES = frozenset({"matmul", "conv", "attention"})


class CaseFigures(BaseModel):
    """Roofline figures of one shape and dtype case."""

    shapes: dict[str, list[int]]
    dtypes: dict[str, str]
    out_shape: list[int]
    elements: int
    bytes_read: int
    bytes_written: int
    flops: int
    intensity: float  # FLOP per byte
    bound_ms: float  # the larger of memory time and compute time at peak
    bound: str  # "memory" or "compute"
    peak_tflops: float  # the compute peak this case is held to: the tensor cores for 16-bit products


class Analysis(BaseModel):
    """Figures for every case, against one device's peaks."""

    device_name: str
    peak_gbs: float
    peak_tflops: float
    tensor_tflops: float | None  # the 16-bit matrix peak, where the spec's FLOPs are matrix products
    reference_only: bool  # True when the peaks are a reference device's, not this machine's
    ridge: float  # FLOP per byte where memory and compute bounds meet
    flops_per_element: int | float  # the spec's flops_per_output: whole counts print without a trailing .0
    cases: list[CaseFigures]


def analyse(spec: OpSpec, device: DeviceInfo) -> Analysis:
    """Compute the definition document's figures for every case of the spec."""
    if device.peak_gbs is not None and device.peak_tflops is not None:
        name, gbs, tflops, reference = device.name, device.peak_gbs, device.peak_tflops, False
        tensor = device.peak_tensor_tflops
    else:
        peak = PEAKS[REFERENCE_DEVICE]
        name, gbs, tflops, reference = f"{REFERENCE_DEVICE} (reference)", peak["gbs"], peak["tflops"], True
        tensor = peak["tensor_tflops"]
    if spec.category == "custom" or family_of(spec.expr) not in PRODUCT_FAMILIES:
        tensor = None
    cases = []
    for shapes in spec.shape_cases():
        out_shape = spec.output_shape(shapes)
        elements = math.prod(out_shape)
        for dtypes in spec.dtype_cases():
            if spec.category == "custom":
                read = sum(math.prod(shapes[t.name]) * BYTES_PER_ELEMENT.get(dtypes[t.name], 4) for t in spec.inputs)
                written = elements * max(BYTES_PER_ELEMENT.get(d, 4) for d in dtypes.values())
                total_flops_case = round(spec.flops_per_output * elements)
            else:
                types = spec.input_types(shapes, dtypes)
                read, written = minimal_bytes(spec.expr, types)
                total_flops_case = total_flops(spec.expr, types)
            memory_ms = (read + written) / (gbs * 1e9) * 1e3
            case_tflops = tensor if tensor and on_tensor_cores(dtypes) else tflops
            compute_ms = total_flops_case / (case_tflops * 1e12) * 1e3
            cases.append(CaseFigures(
                shapes=shapes, dtypes=dtypes, out_shape=out_shape, elements=elements,
                bytes_read=read, bytes_written=written, flops=total_flops_case,
                intensity=total_flops_case / max(1, read + written),
                bound_ms=max(memory_ms, compute_ms),
                bound="memory" if memory_ms >= compute_ms else "compute", peak_tflops=case_tflops,
            ))
    per_element = round(spec.flops_per_output, 2)
    return Analysis(
        device_name=name, peak_gbs=gbs, peak_tflops=tflops, tensor_tflops=tensor, reference_only=reference,
        ridge=tflops * 1e12 / (gbs * 1e9), cases=cases,
        flops_per_element=int(per_element) if float(per_element).is_integer() else per_element,
    )


def on_tensor_cores(dtypes: dict[str, str]) -> bool:
    """Tell whether a product's operands in this dtype case are 16-bit (float32 ones run IEEE on the CUDA cores)."""
    floats = [d for d in dtypes.values() if d in ("float32", "float16", "bfloat16")]
    return bool(floats) and all(d != "float32" for d in floats)
