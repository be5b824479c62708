"""What a verdict covers (the spec's own shapes, or only reduced ones, and why) and whether a spec fits the device."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel

from agent.analysis import Analysis
from agent.ir.edges import CPU_MAX_ELEMENTS
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec


class Coverage(BaseModel):
    """Which shapes the accepted version was checked on."""

    shapes: Literal["spec", "reduced"]
    ran: list[dict[str, list[int]]] = []  # the spec's shape cases that ran
    skipped: list[dict[str, Any]] = []  # the spec's shape cases that did not, each with its reason
    edge_cases: int = 0  # how many odd-shape cases ran beside them

    def line(self) -> str:
        """Say in one line what the verdict covers."""
        if self.shapes == "spec":
            return f"checked on every spec shape ({len(self.ran)}) and {self.edge_cases} odd-shape cases"
        reasons = "; ".join(dict.fromkeys(str(s.get("reason", "")) for s in self.skipped))
        missing = ", ".join(_shown(s["shapes"]) for s in self.skipped[:3]) + (" ..." if len(self.skipped) > 3 else "")
        ran = f"{len(self.ran)} spec shape(s) and " if self.ran else ""
        return (f"checked on reduced shapes only: {ran}{self.edge_cases} odd-shape cases ran; not run: {missing} "
                f"({reasons})")


ReferenceSource = Literal["the spec's reading", "your code", "model-written"]
MODEL_REFERENCE_NOTE = ("checked against a model-written reference only (the spec was read in words, with no formula "
                        "the service can render as PyTorch): read the baseline before trusting the verdict, or restate "
                        "the spec as a formula or PyTorch code")


def reference_of(spec: OpSpec) -> ReferenceSource:
    """Say what the verdict's reference is: the reading rendered as PyTorch, the person's own code, or the model's."""
    if spec.category == "custom":
        return "model-written"
    return "your code" if spec.reading is not None and spec.reading.code is not None else "the spec's reading"


def checked_result(accuracy: dict[str, Any]) -> dict[str, Any]:
    """Return the result the verdict rests on: our own independent check for model-written files, else the test."""
    cross = accuracy.get("cross_check")
    return cross if isinstance(cross, dict) else accuracy


def coverage_of(accuracy: dict[str, Any]) -> Coverage:
    """Read the coverage from an accuracy result: the cases that ran and the spec cases skipped."""
    ran = [c for c in accuracy.get("cases", []) if isinstance(c, dict)]
    spec_ran = list({_key(c["shapes"]): c["shapes"] for c in ran if c.get("kind") == "spec" and "shapes" in c}.values())
    skipped = [s for s in accuracy.get("skipped", []) if isinstance(s, dict) and s.get("kind", "spec") == "spec"]
    skipped = list({_key(s["shapes"]): s for s in skipped if "shapes" in s}.values())
    edges = len({_key(c["shapes"]) for c in ran if c.get("kind") in ("edge", "probe") and "shapes" in c})
    return Coverage(shapes="reduced" if skipped or not spec_ran else "spec", ran=spec_ran, skipped=skipped,
                    edge_cases=edges)


def planned(analysis: Analysis, device: DeviceInfo, max_elements: int = CPU_MAX_ELEMENTS) -> str:
    """Say before any run which spec shapes the verdict will cover on this device (interpreter cap `max_elements`)."""
    if device.kind != "cpu":
        return f"every spec shape runs on {device.name}, beside odd-shape cases that exercise the masks"
    large = list({_key(c.shapes): c.shapes for c in analysis.cases
                  if max([math.prod(c.out_shape), *(math.prod(s) for s in c.shapes.values())]) > max_elements
                  }.values())
    if not large:
        return "every spec shape runs in the Triton interpreter, beside odd-shape cases that exercise the masks"
    shown = "; ".join(_shown(s) for s in large[:3]) + (" ..." if len(large) > 3 else "")
    return (f"on the CPU interpreter, cases above {max_elements:,} elements do not run: {shown} will not be "
            "checked here, so a pass is reported as verified on reduced shapes (the odd-shape cases carry it). "
            "Run on an accelerator to check them")


def memory_refusal(analysis: Analysis, device: DeviceInfo) -> str | None:
    """Say why the spec cannot run on the device when its largest case's tensors exceed the device memory."""
    if device.memory_bytes is None or not analysis.cases:
        return None
    largest = max(analysis.cases, key=lambda c: c.bytes_read + c.bytes_written)
    needed = largest.bytes_read + largest.bytes_written
    if needed <= device.memory_bytes:
        return None
    return (f"the tensors of the case {_shown(largest.shapes)} (output {list(largest.out_shape)}) need "
            f"{_bytes(needed)}, more than the {_bytes(device.memory_bytes)} of {device.name}; no kernel can be "
            "checked or timed at this size here. Give shapes that fit, or run on a device with more memory.")


def _key(shapes: dict[str, list[int]]) -> str:
    return repr(sorted((name, list(shape)) for name, shape in shapes.items()))


def _shown(shapes: dict[str, list[int]]) -> str:
    return ", ".join(f"{name} {list(shape)}" for name, shape in shapes.items())


def _bytes(count: float) -> str:
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    power = min(len(units) - 1, int(math.log(max(count, 1), 1024)))
    return f"{count / 1024 ** power:.1f} {units[power]}"
