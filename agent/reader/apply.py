"""Apply one catalogue operator a phrase names: its operands, its axis and its parameters."""

from __future__ import annotations

import re
from typing import Any

from agent.catalogue import Entry, load_catalogue
from agent.ir import registry
from agent.ir.expr import Expr, Node, Ref
from agent.ir.infer import infer
from agent.ir.types import IRError, TensorType
from agent.reader.dims import ALL, DimPhrase
from agent.reader.errors import SpecQuestion
from agent.reader.phrases import Hit
from agent.reader.roles import bind_roles
from agent.reader.scene import Scene, inputs_said
from agent.reader.signature_docs import signature_defaults

_PAIRWISE = {"sum": "add", "max": "elementwise_maximum", "min": "elementwise_minimum", "prod": "mul"}


def two_operands(entry: Entry, first: Expr, second: Expr) -> dict[str, Expr | list[Expr]]:
    roles = [r.name for r in entry.roles]
    return {roles[0]: first, roles[1]: second}


def apply_entry(scene: Scene, hit: Hit, available: list[str], first: Expr | None,
                 consumed: set[str] | list[str], reserved: set[str] | None = None) -> tuple[Expr, str, list[str]]:
    """Build one catalogue operator over inputs (and a running result), with its axis and parameters."""
    entry, notes = hit.entry, []
    if first is None and entry.name in _PAIRWISE and len(available) >= 2 and not dim_near(scene, hit):
        entry = load_catalogue().by_name[_PAIRWISE[entry.name]]  # `max of x and y`: elementwise
        notes.append(f"{hit.text} of two tensors read as the elementwise {entry.name}")
    if first is None and len([r for r in entry.roles if not r.many]) == 1 and not any(r.many for r in entry.roles) \
            and len(available) > 1:
        shown = ", ".join(available)
        raise SpecQuestion(f"{hit.text} takes one tensor but the text gives {shown}; how do they combine? Write the "
                           "formula", understood=inputs_said(scene),
                           example=f"'out = {entry.name}({' + '.join(available)})'")
    operands, used_inputs = bind_roles(entry, available, first, reserved=reserved or set())
    if isinstance(consumed, set):
        consumed.update(used_inputs)
    values = dict(hit.values)
    values.update(_dims_for(scene, hit, entry, notes))
    if entry.op == "cast" and "dtype" not in values:
        if scene.output_dtype is None:
            raise SpecQuestion(f"{hit.text} to which dtype?", example="'cast x from float32 to bfloat16'")
        values["dtype"] = scene.output_dtype
    if entry.op in ("layer_norm", "rms_norm") and "normalized_ndim" not in values:
        ndim = _normalized_dims(scene, hit, operands)
        if ndim is not None:
            values["normalized_ndim"] = ndim
            notes.append(f"{hit.text}: over the last {ndim} dims, as the text says")
    if scene.keepdim is not None and entry.param("keepdim") is not None:
        values["keepdim"] = scene.keepdim
    try:
        expr = entry.build(dict(operands), values)
    except IRError as exc:
        raise SpecQuestion(f"{hit.text}: {exc}", example=_param_example(entry)) from None
    return expr, entry.name, notes


def _normalized_dims(scene: Scene, hit: Hit, operands: dict[str, Expr | list[Expr]]) -> int | None:
    """Return how many trailing dims a layer norm of an image-like tensor (4-D and more) normalizes when the text
    lists them (`over dims (1, 2, 3)`); ask when it does not: the last dim (nn.LayerNorm(W)) and every dim but the
    batch (C, H, W) are both usual."""
    operand = operands.get("input")
    if not isinstance(operand, (Node, Ref)):
        return None
    try:
        kind = infer(operand, dict(scene.types))
    except IRError:
        return None
    if not isinstance(kind, TensorType) or len(kind.shape) < 4:
        return None
    rank = len(kind.shape)
    phrase = dim_near(scene, hit)
    said = (phrase.dims,) if phrase is not None and isinstance(phrase.dims, int) else \
        phrase.dims if phrase is not None and isinstance(phrase.dims, tuple) else ()
    listed = sorted(d % rank for d in said if isinstance(d, int))
    if listed and len(listed) == len(said) and listed == list(range(rank - len(listed), rank)):
        return len(listed)
    tail = ", ".join(str(d) for d in range(1, rank))
    raise SpecQuestion(f"{hit.text} over which dims of a {rank}-D tensor {list(kind.shape)}? The text does not say "
                       "(the last dim, or every dim but the batch)", understood=inputs_said(scene),
                       example=f"'{hit.text} over dims ({tail})' or '{hit.text} over the last dim'")


def dim_near(scene: Scene, hit: Hit) -> DimPhrase | None:
    """Return the axis phrase closest to the hit in its sentence, if any."""
    lo = max([t.end for t in scene.tokens if t.kind == "sep" and t.end <= hit.start], default=0)
    hi = min([t.start for t in scene.tokens if t.kind == "sep" and t.start >= hit.end], default=len(scene.text))
    near = [d for d in scene.dims if lo <= d.start < hi and d.kind not in ("row", "channel") or
            lo <= d.start < hi and registry.get(hit.entry.op or "add").family != "elementwise"]
    if not near and len(scene.dims) == 1:
        near = scene.dims
    return min(near, key=lambda d: abs(d.start - hit.end), default=None)


def _dims_for(scene: Scene, hit: Hit, entry: Entry, notes: list[str]) -> dict[str, Any]:
    op = registry.get(entry.op) if entry.op else None
    if op is not None and op.param("dims") is not None and "dims" not in hit.values:
        order = next((d for d in scene.dims if d.kind in ("order", "tuple") and isinstance(d.dims, tuple)), None)
        return {"dims": order.dims} if order is not None else {}
    # An op's dim, or a formula entry's `dim` parameter (`cumsum(x, dim=dim) - x`): "over dim 1" sets either.
    dim_param = op.param("dim") if op is not None else entry.param("dim")
    if dim_param is None or "dim" in hit.values:
        return {}
    phrase = dim_near(scene, hit)
    if phrase is not None:
        if phrase.dims == ALL:
            if dim_param.default is None:
                return {}
            raise SpecQuestion(f"{hit.text} over all elements is not defined; over which dim?",
                               example=f"'{hit.text} over the last dim'")
        return {"dim": phrase.dims}
    if re.search(r"\brow\b|行", hit.text, re.I):
        return {"dim": -1}  # `row sum`, `row max`, `行和`: over each row
    if entry.dim == "required":
        stated = _signature_dim(scene, hit, op, notes)
        if stated is not None:
            return stated
        raise SpecQuestion(f"{hit.text} over which dim? The text does not say (each row, the last dim, dim=1, "
                           "or all elements)", understood=inputs_said(scene),
                           example=f"'{hit.text} over the last dim' or '{hit.text} of all elements'")
    if entry.dim == "last" and entry.family == "scan" and _widest_rank(scene) > 1:
        # torch makes a scan name its dim and numpy flattens: on a matrix, either reading is a guess.
        raise SpecQuestion(f"{hit.text} along which dim? The text does not say, and a scan of a matrix could run "
                           "along its rows, its columns or the flattened tensor", understood=inputs_said(scene),
                           example=f"'{hit.text} along the last dim'")
    if entry.dim == "last":
        notes.append(f"{hit.text}: no axis given, read as the last dim (dim=-1)")
        return {"dim": -1}
    return {}


def _signature_dim(scene: Scene, hit: Hit, op: Any, notes: list[str]) -> dict[str, Any] | None:
    """Take a reduction's dim from the default its signature states (`def gelu_std(input, dim=None, ...)`), when
    the prose leaves it to that argument and one operation alone takes a dim."""
    defaults = signature_defaults(scene.text)
    name = next((n for n in ("dim", "axis") if n in defaults), None)
    takers = {h.entry.name for h in scene.hits if h.entry.dim == "required" and "dim" not in h.values}
    if name is None or takers != {hit.entry.name}:
        return None
    value = defaults[name]
    if value == "None":
        if op.param("dim").default is not None:
            return None
        notes.append(f"{hit.text}: over all elements, the signature's default {name}=None")
        return {}
    if re.fullmatch(r"-?\d+", value):
        notes.append(f"{hit.text}: over dim {value}, the signature's default {name}={value}")
        return {"dim": int(value)}
    return None


def _widest_rank(scene: Scene) -> int:
    return max((len(t.shape) for t in scene.types.values() if isinstance(t, TensorType)), default=0)


def _param_example(entry: Entry) -> str:
    required = [p.name for p in entry.params if p.required]
    return f"'{entry.name} with {required[0]} = 8'" if required else f"'{entry.name} on x [1024, 1024]'"
