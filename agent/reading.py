"""What the service understood from a spec: shown before generating, kept with the job."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

ReadingSource = Literal["text", "code", "model"]


class InputReading(BaseModel):
    """One input as understood: its name, dtypes and shapes (one per case)."""

    name: str
    dtypes: list[str]
    shapes: list[list[int]]
    role: Literal["argument", "parameter"] = "argument"  # parameter: a module's weight in a code spec


class CodeSpec(BaseModel):
    """PyTorch code given as the spec: the reference the generated baseline runs."""

    source: str
    entry: str  # the nn.Module class or the function
    kind: Literal["module", "function"]
    init_args: list[object] = []  # get_init_inputs()
    parameters: dict[str, str] = {}  # input name -> module attribute path (`fc_weight` -> `fc.weight`)


class Reading(BaseModel):
    """The reading of a spec: the operator as PyTorch, its inputs, parameters, and what was assumed or left out."""

    source: ReadingSource = "text"
    op: str = Field(description="The operator's name (the kernel's entry point).")
    named: bool = Field(default=False, description="True when the spec names the operator (a title, a name field).")
    family: str = Field(description="elementwise, reduction, softmax, norm, scan, loss, matmul, conv, attention, "
                                    "data-movement, or custom.")
    ir: str = Field(default="", description="The operator in the IR's canonical text.")
    pytorch: str = Field(description="The operator rendered as PyTorch: the reference it is checked against.")
    inputs: list[InputReading] = []
    params: dict[str, float] = {}
    output: str = "out"
    output_shapes: list[list[int]] = []
    output_dtype: str = ""
    device: str = "auto"
    target_speedup: float | None = None
    max_rounds: int | None = None
    notes: list[str] = Field(default=[], description="What was assumed or checked while reading.")
    ignored: list[str] = Field(default=[], description="Text the reading did not use.")
    accounting: str = Field(default="accounted", description="The accounting pass's verdict: 'accounted' when every "
                                                             "word of the text is used by the reading or is filler; "
                                                             "'code' when the spec is code, checked against itself.")
    code: CodeSpec | None = Field(default=None, description="The user's code, when the spec is code.")

    def render(self) -> str:
        """Render the `Understood as:` block shown before any kernel is generated."""
        lines = [f"Understood as: {self.op} ({self.family}, read from {self.source})"]
        code = self.pytorch.strip().splitlines()
        lines += ["  " + line for line in code]
        for item in self.inputs:
            shapes = item.shapes[0] if len(item.shapes) == 1 else " | ".join(str(s) for s in item.shapes)
            kind = " (module parameter)" if item.role == "parameter" else ""
            lines.append(f"  input {item.name}: {'/'.join(item.dtypes)} {shapes}{kind}")
        for name, value in self.params.items():
            lines.append(f"  parameter {name} = {value:g}")
        if self.output_shapes:
            shapes = " | ".join(str(list(s)) for s in dict.fromkeys(map(tuple, self.output_shapes)))
            lines.append(f"  output {self.output}: {self.output_dtype} {shapes}")
        facts = [f"device {self.device}"] + ([f"target x{self.target_speedup:g}"] if self.target_speedup else []) + (
            [f"at most {self.max_rounds} rounds"] if self.max_rounds else [])
        lines.append(f"  {', '.join(facts)}")
        lines += [f"  note: {n}" for n in self.notes]
        if self.ignored:
            lines.append(f"  not used: {'; '.join(repr(i) for i in self.ignored)}")
        return "\n".join(lines)
