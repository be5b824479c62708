"""The structured operator spec every stage reads, and its validation."""

from __future__ import annotations

import builtins
import keyword
import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from agent.ir.count import flops_per_output
from agent.ir.edges import edge_cases
from agent.ir.expr import Expr, names
from agent.ir.index_inputs import IndexInput, index_inputs
from agent.ir.infer import infer
from agent.ir.parse import parse_text
from agent.ir.types import IRError, ScalarType, TensorType, ValueType
from agent.reading import Reading

# Float dtypes are what kernels compute in; int64/int32/bool inputs carry indices, class targets and masks.
DType = Literal["float32", "float16", "bfloat16", "int64", "int32", "bool"]
Device = Literal["auto", "cuda", "npu", "cpu"]
# The op family of the IR (`formula` is the IR's canonical text); custom: a model-read spec, semantics in words.
Category = Literal["elementwise", "reduction", "softmax", "norm", "scan", "loss", "matmul", "conv", "attention",
                   "data-movement", "custom"]

SUPPORTED_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
MAX_ROUNDS = 5


# More elements than any device's memory holds (2**40: 4 TiB of float32); also keeps sizes far from overflow.
MAX_ELEMENTS = 2**40


# The most dims a torch tensor takes.
MAX_DIMS = 64


def too_large(shape: Sequence[int]) -> str | None:
    """Say how many elements a shape has when no device could hold them, else None."""
    if len(shape) > MAX_DIMS:
        return f"{len(shape)} dims, more than the {MAX_DIMS} a tensor can have"
    count = math.prod(shape)
    if count <= MAX_ELEMENTS:
        return None
    digits = len(str(count))  # a product of thousands of dims is too large for a float
    shown = f"{count:.3g}" if digits < 300 else f"about 10^{digits - 1}"
    return f"{shown} elements, more than any device holds"


def shape_problem(shape: Sequence[int]) -> str | None:
    """Say what makes a shape impossible (an empty shape is a scalar: allowed), else None."""
    if any(d <= 0 for d in shape):
        return "must list positive sizes"
    problem = too_large(shape)
    return f"has {problem}" if problem else None


BUILTIN_NAMES = frozenset(n for n in dir(builtins) if not n.startswith("_"))


def safe_name(name: str) -> str:
    """Return an operator name that shadows no Python builtin (`sum` -> `reduce_sum`, `abs` -> `abs_op`)."""
    if name not in BUILTIN_NAMES:
        return name
    return f"reduce_{name}" if name in ("sum", "max", "min", "all", "any") else f"{name}_op"


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

    @field_validator("shapes")
    @classmethod
    def _positive_dims(cls, shapes: list[list[int]]) -> list[list[int]]:
        for shape in shapes:
            problem = shape_problem(shape)
            if problem:
                raise ValueError(f"shape {shape} {problem}")
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
    target_speedup: float | None = Field(default=None, gt=0)  # None: aim for the limit (agent.targets)
    tolerances: dict[str, Tolerance] = Field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    max_rounds: int = Field(default=MAX_ROUNDS, ge=1, le=MAX_ROUNDS)
    # custom only: the output shape of each shape case, odd shapes worth testing.
    output_shapes: list[list[int]] = []
    edge_cases: list[dict[str, list[int]]] = []
    # FLOPs per output element of the first shape and dtype case: the model's estimate for a custom op, else
    # counted from the IR when the spec is validated (report.json, the definition and the timing harness share it).
    flops_per_output: float = Field(default=0.0, ge=0)
    reading: Reading | None = None  # what the reader understood, shown before generating and kept with the job

    @field_validator("name", "output")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not value.isidentifier() or keyword.iskeyword(value):
            raise ValueError(f"{value!r} is not a Python identifier")
        return value

    @field_validator("name")
    @classmethod
    def _not_builtin(cls, value: str) -> str:
        if value in BUILTIN_NAMES:
            # The generated files define a function of this name beside code that calls the builtin.
            raise ValueError(f"{value!r} shadows a Python builtin the generated files use; call it {safe_name(value)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> OpSpec:
        if self.category == "custom":
            return self._consistent_custom()
        expr = self.expr
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
        self.flops_per_output = flops_per_output(expr, self.input_types(self.shape_cases()[0], self.dtype_cases()[0]))
        for dtype in {d for t in self.inputs for d in t.dtypes if d in DEFAULT_TOLERANCES}:
            self.tolerances.setdefault(dtype, DEFAULT_TOLERANCES[dtype])
        return self

    @property
    def expr(self) -> Expr:
        """Return the operator as an IR expression (parsed from the canonical formula text)."""
        try:  # the formula is to_text's output: IR text, not math (`|` is `or`, `e` is a name)
            return parse_text(self.formula, math_notation=False, euler=False)
        except IRError as exc:
            raise ValueError(str(exc)) from exc

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
            problem = "must list positive sizes" if not shape else shape_problem(shape)
            if problem:
                raise ValueError(f"shape {shape} {problem}")
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

    def output_shape(self, case: dict[str, list[int]]) -> list[int]:
        """Return the output shape of one shape case (inferred from the IR; a custom op lists its own)."""
        if self.category == "custom":
            return list(self.output_shapes[self.shape_cases().index(case)])
        return list(self.output_type(case, self.dtype_cases()[0]).shape)

    def input_types(self, case: dict[str, list[int]], dtypes: dict[str, str]) -> dict[str, ValueType]:
        """Return the IR types of the inputs and scalar parameters for one shape case and dtype case."""
        types: dict[str, ValueType] = {t.name: TensorType(dtypes[t.name], tuple(case[t.name])) for t in self.inputs}
        types.update({p.name: ScalarType(p.value) for p in self.params})
        return types

    def output_type(self, case: dict[str, list[int]], dtypes: dict[str, str]) -> TensorType:
        """Return the output's shape and dtype for one shape case and dtype case."""
        types = self.input_types(case, dtypes)
        try:
            found = infer(self.expr, types)
        except IRError as exc:
            raise SpecError(str(exc)) from None
        if not isinstance(found, TensorType):
            raise SpecError("the operator gives a number, not a tensor")
        return found

    def index_inputs(self) -> dict[str, IndexInput]:
        """Return the inputs holding indices into another input (cross_entropy's class target), by name."""
        if self.category == "custom":
            return {}
        return index_inputs(self.expr, self.input_types(self.shape_cases()[0], self.dtype_cases()[0]))

    def odd_shape_cases(self) -> list[dict[str, list[int]]]:
        """Return the IR's odd-shape cases for this spec; sizes a code spec's module parameters were built at stay."""
        code = self.reading.code if self.reading else None
        fixed = {d for t in self.inputs if code and t.name in code.parameters for shape in t.shapes for d in shape}
        return edge_cases(self.expr, self.shape_cases()[0], self.dtype_cases()[0],
                          {p.name: p.value for p in self.params}, fixed=fixed)

    def dtype_cases(self) -> list[dict[str, str]]:
        """Return one {input: dtype} mapping per dtype variant the spec lists."""
        count = max(len(t.dtypes) for t in self.inputs)
        return [{t.name: t.dtypes[min(i, len(t.dtypes) - 1)] for t in self.inputs} for i in range(count)]
