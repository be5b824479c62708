"""The structured operator spec every stage reads, and its validation."""

from __future__ import annotations

import keyword
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from agent.expr import FormulaError, names, parse_formula

DType = Literal["float32", "float16", "bfloat16"]
Device = Literal["auto", "cuda", "npu", "cpu"]
# elementwise: the offline formula language; custom: an LLM-read spec, its semantics in words.
Category = Literal["elementwise", "custom"]

SUPPORTED_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
MAX_ROUNDS = 5


class SpecError(ValueError):
    """A spec that cannot be turned into a kernel; the message says why."""


class Tolerance(BaseModel):
    """Relative and absolute error allowed for one dtype."""

    rtol: float = Field(gt=0)
    atol: float = Field(ge=0)


DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(rtol=1e-4, atol=1e-4),
    "float16": Tolerance(rtol=1e-2, atol=1e-2),
    "bfloat16": Tolerance(rtol=1e-2, atol=1e-2),
}


class TensorSpec(BaseModel):
    """A named tensor with the shapes and dtypes the user cares about."""

    name: str
    shapes: list[list[int]] = Field(min_length=1)
    dtypes: list[DType] = Field(min_length=1)
    # Output dimension where this input's first dimension sits (per-channel scale on
    # NCHW: 1). None aligns trailing dimensions, as PyTorch broadcasting does.
    align: int | None = Field(default=None, ge=0)

    @field_validator("shapes")
    @classmethod
    def _positive_dims(cls, shapes: list[list[int]]) -> list[list[int]]:
        for shape in shapes:
            if not shape or any(d <= 0 for d in shape):
                raise ValueError(f"shape {shape} must list positive sizes")
        return shapes


class ScalarSpec(BaseModel):
    """A scalar parameter of the operator, with its default value."""

    name: str
    value: int | float  # an int stays an int: dim=-1 must not reach torch as -1.0


class OpSpec(BaseModel):
    """What the user asked for, validated: one schema for CLI, service and database."""

    name: str
    category: Category = "elementwise"
    description: str = ""
    formula: str
    inputs: list[TensorSpec] = Field(min_length=1)
    params: list[ScalarSpec] = []
    output: str = "out"
    device: Device = "auto"
    target_speedup: float = Field(default=1.0, gt=0)
    tolerances: dict[str, Tolerance] = Field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    max_rounds: int = Field(default=MAX_ROUNDS, ge=1, le=MAX_ROUNDS)
    # custom only: the output shape of each shape case, odd shapes worth testing, FLOPs per output element.
    output_shapes: list[list[int]] = []
    edge_cases: list[dict[str, list[int]]] = []
    flops_per_output: float = Field(default=0.0, ge=0)

    @field_validator("name", "output")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not value.isidentifier() or keyword.iskeyword(value):
            raise ValueError(f"{value!r} is not a Python identifier")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> OpSpec:
        if self.category == "custom":
            return self._consistent_custom()
        try:
            expr = parse_formula(self.formula)
        except FormulaError as exc:
            raise ValueError(str(exc)) from exc
        declared = [t.name for t in self.inputs] + [p.name for p in self.params]
        if len(set(declared)) != len(declared):
            raise ValueError(f"names are declared twice: {declared}")
        for name in [t.name for t in self.inputs] + [p.name for p in self.params] + [self.name]:
            self._identifier(name)
        used = names(expr)
        unknown = [n for n in used if n not in declared]
        if unknown:
            raise ValueError(f"the formula uses {unknown}, which are neither inputs nor parameters")
        unused = [t.name for t in self.inputs if t.name not in used]
        if unused:
            raise ValueError(f"inputs {unused} are declared but the formula never uses them")
        if self.output in declared:
            raise ValueError(f"the output name {self.output!r} clashes with an input")
        for field_name, counts in (
            ("shapes", [len(t.shapes) for t in self.inputs]),
            ("dtypes", [len(t.dtypes) for t in self.inputs]),
        ):
            many = {c for c in counts if c > 1}
            if len(many) > 1:
                raise ValueError(f"inputs list different numbers of {field_name}: {counts}")
        for case in self.shape_cases():
            self.output_shape(case)
        for dtype in {d for t in self.inputs for d in t.dtypes}:
            self.tolerances.setdefault(dtype, DEFAULT_TOLERANCES[dtype])
        return self

    def _consistent_custom(self) -> OpSpec:
        if not self.formula.strip():
            raise ValueError("a custom operator needs its semantics in words or a formula")
        declared = [t.name for t in self.inputs] + [p.name for p in self.params]
        if len(set(declared)) != len(declared):
            raise ValueError(f"names are declared twice: {declared}")
        for name in [*declared, self.name]:
            self._identifier(name)
        if self.output in declared:
            raise ValueError(f"the output name {self.output!r} clashes with an input")
        cases = self.shape_cases()
        if len(self.output_shapes) != len(cases):
            raise ValueError(f"give one output shape per shape case: {len(cases)} cases, "
                             f"{len(self.output_shapes)} output shapes")
        for shape in [*self.output_shapes, *(s for case in self.edge_cases for s in case.values())]:
            if not shape or any(d <= 0 for d in shape):
                raise ValueError(f"shape {shape} must list positive sizes")
        for case in self.edge_cases:
            if set(case) != {t.name for t in self.inputs}:
                raise ValueError(f"edge case {case} must give a shape for every input")
        for dtype in {d for t in self.inputs for d in t.dtypes}:
            self.tolerances.setdefault(dtype, DEFAULT_TOLERANCES[dtype])
        return self

    def shape_cases(self) -> list[dict[str, list[int]]]:
        """Return one {input: shape} mapping per shape case the spec lists."""
        count = max(len(t.shapes) for t in self.inputs)
        return [{t.name: t.shapes[min(i, len(t.shapes) - 1)] for t in self.inputs} for i in range(count)]

    def aligned_shapes(self, case: dict[str, list[int]]) -> dict[str, list[int]]:
        """Return each input's shape with the trailing 1s its alignment implies."""
        rank = max(
            len(case[t.name]) + (t.align if t.align is not None else 0) for t in self.inputs
        )
        result = {}
        for t in self.inputs:
            shape = list(case[t.name])
            if t.align is not None:
                shape = shape + [1] * (rank - t.align - len(shape))
            result[t.name] = shape
        return result

    def output_shape(self, case: dict[str, list[int]]) -> list[int]:
        """Return the output shape of one shape case (broadcast; a custom op lists its own)."""
        if self.category == "custom":
            return list(self.output_shapes[self.shape_cases().index(case)])
        aligned = self.aligned_shapes(case)
        return broadcast_shape([aligned[t.name] for t in self.inputs], [t.name for t in self.inputs])

    def dtype_cases(self) -> list[dict[str, str]]:
        """Return one {input: dtype} mapping per dtype variant the spec lists."""
        count = max(len(t.dtypes) for t in self.inputs)
        return [{t.name: t.dtypes[min(i, len(t.dtypes) - 1)] for t in self.inputs} for i in range(count)]


def broadcast_shape(shapes: list[list[int]], labels: list[str]) -> list[int]:
    """Return the broadcast result of shapes, or raise SpecError naming the clash."""
    rank = max(len(s) for s in shapes)
    result = [1] * rank
    for shape, label in zip(shapes, labels, strict=True):
        padded = [1] * (rank - len(shape)) + list(shape)
        for i, d in enumerate(padded):
            if d != 1 and result[i] != 1 and d != result[i]:
                raise SpecError(
                    f"shapes cannot broadcast: {label} {shape} against "
                    f"{dict(zip(labels, shapes, strict=True))} (dimension {i - rank})"
                )
            result[i] = max(result[i], d)
    return result
