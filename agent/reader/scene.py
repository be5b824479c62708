"""What the reader found in a text, ready to compose, and the operator it composes."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.ir.expr import Expr, ops
from agent.ir.family import VIEWS
from agent.ir.types import ValueType
from agent.reader.bindings import Binding
from agent.reader.dims import DimPhrase
from agent.reader.formulas import Formula
from agent.reader.lexer import Token
from agent.reader.phrases import Hit


@dataclass
class Scene:
    """Everything the reader found in the text, ready to be composed into one operator."""

    text: str
    tokens: list[Token]
    inputs: list[str]  # input names in the order the text names them
    bindings: dict[str, Binding]
    formulas: list[Formula]
    hits: list[Hit]
    dims: list[DimPhrase]
    keepdim: bool | None
    fused: bool
    types: dict[str, ValueType]  # the first case's types, for agreement checks
    label: Hit | None = None  # the operator a name field or title gives
    output_dtype: str | None = None  # the dtype the text asks the output in (a cast's target)
    unknown: list[str] = field(default_factory=list)  # functions called in formulas that no catalogue entry names


@dataclass
class Composition:
    """The operator as an IR expression, with what it used and what was assumed."""

    expr: Expr
    name: str
    notes: list[str] = field(default_factory=list)
    used_hits: list[Hit] = field(default_factory=list)
    used_numbers: set[int] = field(default_factory=set)  # where the numbers the steps used are written


def inputs_said(scene: Scene) -> str:
    return "inputs: " + (", ".join(f"{n} {list(t.shape)}" for n, t in scene.types.items()
                                   if hasattr(t, "shape")) or "none with a shape")


def derived_name(expr: Expr) -> str:
    """Name an operator after the ops its formula applies, innermost first."""
    computed = [o for o in ops(expr) if o not in VIEWS] or ops(expr)  # `scale.unsqueeze(-1)` names nothing
    meaningful = [o for o in computed if o not in ("add", "sub", "mul", "div")]
    parts = (meaningful or computed)[:4]
    return "_".join(parts) or "identity"
