"""The JSON answers the structured stages ask for, validated before use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from agent.spec import MAX_ROUNDS, DType, OpSpec


class TensorReply(BaseModel):
    """An input tensor as the model read it."""

    name: str
    shapes: list[list[int]] = Field(min_length=1)
    dtypes: list[DType] = Field(min_length=1)


class ParamReply(BaseModel):
    """A scalar parameter and its default."""

    name: str
    value: int | float


class SpecReply(BaseModel):
    """The requirements stage's answer: a custom operator spec, or why there is none."""

    supported: bool = True
    reason: str = ""
    name: str = ""
    description: str = ""
    semantics: str = ""
    # The operator in the IR's text language (`softmax(x, dim=-1)`, `gelu(x + bias)`), when it can be written so.
    ir: str = ""
    inputs: list[TensorReply] = []
    params: list[ParamReply] = []
    output: str = "out"
    output_shapes: list[list[int]] = []
    edge_cases: list[dict[str, list[int]]] = []
    flops_per_output: float = Field(default=1.0, ge=0)
    target_speedup: float | None = Field(default=None, gt=0)
    max_rounds: int | None = Field(default=None, ge=1, le=MAX_ROUNDS)
    device: Literal["auto", "cuda", "npu", "cpu"] | None = None

    @model_validator(mode="after")
    def _complete(self) -> SpecReply:
        if self.supported:
            self.to_spec()  # a spec that would not validate is re-asked, with the reason
        return self

    def to_spec(self) -> OpSpec:
        """Build the OpSpec this answer describes: on the IR when the model wrote one, else a custom op."""
        extra = {k: v for k, v in (("target_speedup", self.target_speedup), ("max_rounds", self.max_rounds),
                                   ("device", self.device)) if v is not None}
        if self.ir.strip():
            return model_spec(self, extra)
        return OpSpec(
            name=self.name, category="custom", description=self.description, formula=self.semantics,
            inputs=[t.model_dump() for t in self.inputs], params=[p.model_dump() for p in self.params],
            output=self.output, output_shapes=self.output_shapes, edge_cases=self.edge_cases,
            flops_per_output=self.flops_per_output, **extra,
        )


class DefinitionReply(BaseModel):
    """The definition stage's answer: the analysis the figures cannot give."""

    constraints: list[str] = Field(min_length=1)
    complexity: str = Field(min_length=1)
    strategy: list[str] = Field(min_length=1)
    risks: list[str] = []


class DiagnosisReply(BaseModel):
    """The diagnosis stage's answer: the bottleneck and the next change."""

    bottleneck: Literal["memory", "compute", "latency", "under-utilized", "other"]
    evidence: str
    change: str = ""
    edit_type: Literal["parameter", "interface", "logic"] = "parameter"
    predicted_gain: str = ""
    stop: bool = False

    @model_validator(mode="after")
    def _change_unless_stopping(self) -> DiagnosisReply:
        if not self.stop and not self.change.strip():
            raise ValueError("name the change to make, or set stop to true")
        return self


def model_spec(reply: SpecReply, extra: Mapping[str, object]) -> OpSpec:
    """Build an IR OpSpec (and its reading) from the model's structured answer; ValueError if the IR is wrong."""
    from agent.ir.family import family_of
    from agent.ir.parse import parse_text
    from agent.ir.printer import to_statements, to_text
    from agent.ir.types import IRError
    from agent.reading import InputReading, Reading

    try:
        expr = parse_text(reply.ir)
    except IRError as exc:
        raise ValueError(f"ir: {exc}") from None
    spec = OpSpec(
        name=reply.name, category="elementwise", description=reply.description, formula=to_text(expr),
        inputs=[t.model_dump() for t in reply.inputs], params=[p.model_dump() for p in reply.params],
        output=reply.output, **extra,  # type: ignore[arg-type]
    )
    family = family_of(spec.expr)
    outputs = [spec.output_type(case, spec.dtype_cases()[0]) for case in spec.shape_cases()]
    reading = Reading(
        source="model", op=spec.name, family=family, ir=spec.formula,
        pytorch="\n".join(to_statements(spec.expr, spec.output)),
        inputs=[InputReading(name=t.name, dtypes=list(t.dtypes), shapes=t.shapes) for t in spec.inputs],
        params={p.name: float(p.value) for p in spec.params}, output=spec.output,
        output_shapes=[list(o.shape) for o in outputs], output_dtype=outputs[0].dtype,
    )
    return spec.model_copy(update={"category": family, "reading": reading})
