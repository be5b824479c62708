"""Compare two readings of one spec (the offline reader's and a model's): same inputs, same values."""

from __future__ import annotations

from agent.ir.types import ScalarType, TensorType, ValueType
from agent.reader.agreement import agree
from agent.spec import OpSpec


def disagreement(offline: OpSpec, model: OpSpec) -> str | None:
    """Say how two readings differ; None when they read the same inputs and compute the same values."""
    ours = [(t.name, t.shapes, list(t.dtypes)) for t in offline.inputs]
    theirs = [(t.name, t.shapes, list(t.dtypes)) for t in model.inputs]
    if ours != theirs:
        return f"the inputs differ: offline {_inputs(offline)}; model {_inputs(model)}"
    if model.category == "custom":
        return None  # a reading in words only cannot be compared value by value
    case, dtypes = offline.shape_cases()[0], offline.dtype_cases()[0]
    types: dict[str, ValueType] = {t.name: TensorType(dtypes[t.name], tuple(case[t.name])) for t in offline.inputs}
    types.update({p.name: ScalarType(p.value) for p in offline.params})
    types.update({p.name: ScalarType(p.value) for p in model.params if p.name not in types})
    same, figure = agree(offline.expr, model.expr, types)
    if same:
        return None
    return f"offline reads {offline.formula}, the model reads {model.formula}: {figure}"


def _inputs(spec: OpSpec) -> str:
    return ", ".join(f"{t.name} {'/'.join(t.dtypes)} {t.shapes}" for t in spec.inputs)
