"""The JSON answers the structured stages ask for, validated before use."""

from __future__ import annotations

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
        """Build the custom OpSpec this answer describes."""
        extra = {k: v for k, v in (("target_speedup", self.target_speedup), ("max_rounds", self.max_rounds),
                                   ("device", self.device)) if v is not None}
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
