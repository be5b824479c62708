"""Fill an entry's operand roles with inputs; align 1-D inputs per channel or per row; keep reduced dims."""

from __future__ import annotations

from agent.catalogue import Entry
from agent.catalogue.entries import Role
from agent.ir import registry
from agent.ir.bind import bind
from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.infer import infer
from agent.ir.printer import to_text
from agent.ir.types import IRError, TensorType, ValueType
from agent.reader.errors import SpecQuestion

_REDUCTIONS = {"sum", "mean", "amax", "amin", "prod", "var", "std", "vector_norm", "logsumexp"}
_ELEMENTWISE_BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "where"}


# The short names people prefix an operand with to say which operation it belongs to (`conv_weight`, `bn_bias`).
_PREFIXES = {"conv1d": ("conv",), "conv2d": ("conv",), "conv3d": ("conv",), "conv_transpose2d": ("conv", "deconv"),
             "batch_norm": ("bn", "batch_norm", "batchnorm"), "layer_norm": ("ln", "layer_norm", "layernorm"),
             "group_norm": ("gn", "group_norm", "groupnorm"), "instance_norm": ("instance_norm", "instancenorm"),
             "rms_norm": ("rms", "rms_norm", "rmsnorm"), "linear": ("fc", "linear", "lin"),
             "embedding": ("emb", "embedding")}
_ALL_PREFIXES = {p for prefixes in _PREFIXES.values() for p in prefixes}


def _owner_prefix(name: str) -> str | None:
    """Return the operation prefix a name carries (`bn` of `bn_weight`), if any."""
    low = name.lower()
    return next((p for p in sorted(_ALL_PREFIXES, key=len, reverse=True) if low.startswith(p + "_")), None)


def role_matches(entry: Entry, role: Role, inputs: list[str]) -> list[str]:
    """Return the inputs a role's hints name: `bn_weight` for batch_norm's weight, before a bare `weight`; a name
    that carries another operation's prefix (`conv_weight` for batch_norm) is never this role's."""
    own = _PREFIXES.get(entry.name, ())
    hints = [h.lower() for h in role.hints]
    prefixed = [n for n in inputs if any(n.lower() == f"{p}_{h}" for p in own for h in hints)]
    if prefixed:
        return prefixed
    return [n for n in inputs if n.lower() in hints]


def foreign(entry: Entry, name: str) -> bool:
    """Tell whether a name carries the prefix of another operation than this one, itself an operation with weights
    (`bn_bias` for conv2d)."""
    if entry.name not in _PREFIXES:
        return False  # `add fc_out and y`: an elementwise op takes any tensor
    prefix = _owner_prefix(name)
    return prefix is not None and prefix not in _PREFIXES[entry.name]


def bind_roles(entry: Entry, available: list[str], first: Expr | None = None,
               reserved: set[str] | None = None) -> tuple[dict[str, Expr | list[Expr]], list[str]]:
    """Return {role: operand} and the inputs used: `first` (a running result) takes the first role, hints the rest.

    Inputs in `reserved` (named by a later step: `rms_norm, then multiply by weight`) fill no optional role.
    """
    reserved = reserved or set()
    chosen: dict[str, Expr | list[Expr]] = {}
    used: list[str] = []
    roles = [r for r in entry.roles if not r.many]
    many = next((r for r in entry.roles if r.many), None)
    if many is not None:
        operands: list[Expr] = ([first] if first is not None else []) + [Ref(n) for n in available]
        return {many.name: operands}, list(available)
    left = list(available)
    if first is not None and roles:
        chosen[roles[0].name] = first
    for role in roles:
        if role.name in chosen:
            continue
        match = next((n for n in role_matches(entry, role, left) if not (role.optional and n in reserved)), None)
        if match is not None:
            chosen[role.name] = Ref(match)
            left.remove(match)
            used.append(match)
    for role in roles:
        if role.name in chosen or role.optional or not left:
            continue
        own = [n for n in left if not foreign(entry, n)]
        if not own:
            continue
        chosen[role.name] = Ref(own[0])
        left.remove(own[0])
        used.append(own[0])
    optional = [r for r in roles if r.optional and r.name not in chosen]
    left = [n for n in left if n not in reserved and not foreign(entry, n)]
    for role in optional:
        if left:
            chosen[role.name] = Ref(left.pop(0))
            used.append(chosen[role.name].name)  # type: ignore[union-attr]
    missing = [r.name for r in roles if not r.optional and r.name not in chosen]
    if missing:
        have = ", ".join(available) or "none"
        raise SpecQuestion(f"{entry.name} needs {' and '.join(missing)}, but the inputs with shapes are: {have}; "
                           f"which tensor is {missing[0]}?", example=_example(entry))
    return chosen, used


def _example(entry: Entry) -> str:
    roles = [r.name for r in entry.roles if not r.optional]
    return ", ".join(f"{r} [4096, 1024]" for r in roles)


def align_vectors(expr: Expr, types: dict[str, ValueType], cue: str | None) -> tuple[Expr, list[str]]:
    """Broadcast 1-D inputs per channel (dim 1) or per row when the text says so or trailing alignment fails.

    Works on each elementwise region of the expression: a 1-D input anywhere in the region aligns to the
    region's highest-rank tensor (`(x - mean) / sqrt(var + eps) * gamma + beta` on NCHW, per channel).
    """
    notes: list[str] = []

    def region_refs(e: Expr) -> list[Ref]:
        if isinstance(e, Ref):
            return [e]
        if isinstance(e, Node) and registry.get(e.op).family == "elementwise":
            return [r for a in e.args for r in region_refs(a)]
        return []

    def full_shape(e: Expr) -> tuple[int, ...] | None:
        shapes = [t.shape for r in region_refs(e) if isinstance(t := types.get(r.name), TensorType)]
        inner = [t.shape for a in _region_leaves(e) if isinstance(t := _type(a, types), TensorType)]
        candidates = [s for s in shapes + inner if len(s) >= 2]
        return max(candidates, key=len) if candidates else None

    def align(e: Expr, shape: tuple[int, ...]) -> Expr:
        if isinstance(e, Ref):
            t = types.get(e.name)
            if not isinstance(t, TensorType) or len(t.shape) != 1 or len(shape) < 2:
                return e
            axis = _axis(t.shape[0], shape, cue)
            if axis is None:
                return e
            aligned: Expr = e
            for _ in range(len(shape) - 1 - axis):
                aligned = bind(registry.get("unsqueeze"), [aligned, Const(-1)], {}, e.name)
            where = {1: "per channel (dim 1)"}.get(axis, f"along dim {axis}")
            note = f"{e.name} {list(t.shape)} is applied {where} of {list(shape)}"
            if note not in notes:
                notes.append(note)
            return aligned
        if isinstance(e, Node) and registry.get(e.op).family == "elementwise":
            return Node(e.op, tuple(align(a, shape) for a in e.args), e.attrs)
        return fix(e)

    def fix(e: Expr) -> Expr:
        if not isinstance(e, Node):
            return e
        if registry.get(e.op).family == "elementwise":
            shape = full_shape(e)
            if shape is not None:
                return align(e, shape)
        return Node(e.op, tuple(fix(a) for a in e.args), e.attrs)

    return fix(expr), notes


def _region_leaves(e: Expr) -> list[Expr]:
    """Return the non-elementwise sub-expressions an elementwise region combines."""
    if isinstance(e, Node) and registry.get(e.op).family == "elementwise":
        return [leaf for a in e.args for leaf in _region_leaves(a)]
    return [e] if isinstance(e, Node) else []


def _type(expr: Expr, types: dict[str, ValueType]) -> ValueType | None:
    try:
        return infer(expr, types)
    except IRError:
        return None


def _axis(size: int, shape: tuple[int, ...], cue: str | None) -> int | None:
    """Return the dim a vector of `size` aligns to, or None for ordinary trailing broadcasting."""
    if cue == "channel" and len(shape) >= 3 and shape[1] == size:
        return 1
    if cue == "row" and len(shape) >= 2 and shape[-2] == size:
        return len(shape) - 2
    if cue is None and shape[-1] == size or size == 1:
        return None
    matches = [d for d, s in enumerate(shape) if s == size]
    if len(matches) == 1 and cue in ("channel", "row"):
        return matches[0]
    if matches:
        raise SpecQuestion(
            f"a vector of {size} does not broadcast against {list(shape)} from the right; should it apply along "
            f"dim {matches[0]} (e.g. per channel or per row)?",
            example=f"per-channel scale[c] over x {list(shape)}, or 'multiply each row i of x by s[i]'")
    return None


def keep_reduced_dims(expr: Expr, types: dict[str, ValueType]) -> tuple[Expr, list[str]]:
    """Set keepdim=True on reductions whose result meets, through elementwise ops, a tensor of their input's rank.

    In math notation `x / sqrt(mean(x^2, -1) + eps)` means the mean of each row, broadcast back over the row.
    """
    notes: list[str] = []

    def fix(e: Expr) -> Expr:
        if not isinstance(e, Node):
            return e
        e = Node(e.op, tuple(fix(a) for a in e.args), e.attrs)
        if registry.get(e.op).family != "elementwise" or len(e.args) < 2:
            return e
        args = list(e.args)
        ranks = [_rank(a, types) for a in args]
        for i, arg in enumerate(args):
            others = [r for j, r in enumerate(ranks) if j != i and r is not None]
            args[i] = _keep(arg, others, types, notes)
        return Node(e.op, tuple(args), e.attrs)

    return fix(expr), notes


def _keep(expr: Expr, others: list[int], types: dict[str, ValueType], notes: list[str]) -> Expr:
    """Keep the dims of the reductions reached from expr through elementwise ops, when a sibling has their rank."""
    if not isinstance(expr, Node):
        return expr
    if expr.op in _REDUCTIONS and not expr.attr("keepdim") and expr.attr("dim") is not None:
        source = _rank(expr.args[0], types)
        if source is not None and source in others:
            notes.append(f"{to_text(expr)} keeps the reduced dim so that it broadcasts back (keepdim=True)")
            return Node(expr.op, expr.args, tuple(kv for kv in expr.attrs if kv[0] != "keepdim") + (("keepdim", True),))
        return expr
    if registry.get(expr.op).family != "elementwise":
        return expr
    return Node(expr.op, tuple(_keep(a, others, types, notes) for a in expr.args), expr.attrs)


def _rank(expr: Expr, types: dict[str, ValueType]) -> int | None:
    found = _type(expr, types)
    return len(found.shape) if isinstance(found, TensorType) else None
