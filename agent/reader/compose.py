"""Compose the operator from what the text names: formulas, catalogue operators and step chains."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent.catalogue import Entry, load_catalogue
from agent.ir import registry
from agent.ir.bind import bind
from agent.ir.expr import Const, Expr, Node, Ref, names, ops
from agent.ir.printer import to_text, to_torch
from agent.ir.types import IRError, TensorType, ValueType
from agent.reader.agreement import agree
from agent.reader.bindings import Binding
from agent.reader.dims import ALL, DimPhrase
from agent.reader.errors import SpecQuestion
from agent.reader.formulas import Formula
from agent.reader.lexer import Token
from agent.reader.phrases import Hit
from agent.reader.roles import bind_roles
from agent.reader.steps import ARITH_OPS, Item, items_of, split_steps, step_operands
from agent.reader.vocabulary import NOT_NAMES

_PAIRWISE = {"sum": "add", "max": "elementwise_maximum", "min": "elementwise_minimum", "prod": "mul"}
_APPLY_WORDS = {"of", "on", "to", "over", "onto", "对", "做", "applied"}


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


def compose(scene: Scene) -> Composition:
    """Return the operator the text describes, or raise SpecQuestion when it would be a guess."""
    scene.hits = dedupe(scene.hits, scene)
    formulas = [f for f in scene.formulas if not f.constraint]
    assigned = [f for f in formulas if f.lhs and set(names(f.expr)) >= set(scene.inputs)]
    items = items_of(scene.tokens, scene.hits, formulas, set(scene.inputs))
    steps = None if assigned else split_steps(items, scene.fused)
    if steps is not None:
        return _chain(scene, steps)
    main = _main_formula(scene)
    if main is not None:
        return _with_formula(scene, main, items)
    hits = [h for h in scene.hits if h is not scene.label] or ([scene.label] if scene.label else [])
    if len(hits) == 1 and scene.label is not None and hits[0].entry is scene.label.entry:
        hits[0].values = scene.label.values | hits[0].values  # `二维卷积：…，步长 1，填充 1`: one op, said twice
    if len(hits) == 1:
        expr, name, notes = _apply_entry(scene, hits[0], scene.inputs, None, [])
        return Composition(expr, name, notes, [hits[0]])
    if not hits and scene.output_dtype is not None and len(scene.inputs) == 1:
        cast = load_catalogue().by_name["cast"]  # `把 x 从 float32 转换为 bfloat16`: the cast is the operator
        expr = cast.build({"input": Ref(scene.inputs[0])}, {"dtype": scene.output_dtype})
        return Composition(expr, "cast", [f"a cast of {scene.inputs[0]} to {scene.output_dtype}"])
    if not hits and scene.unknown:
        raise SpecQuestion(f"{', '.join(scene.unknown)} is not an operator the catalogue knows; what does it compute?",
                           understood=_inputs_said(scene),
                           example="a formula over known operators, e.g. 'out = x * sigmoid(1.702 * x)'")
    if not hits:
        strange = _strange_words(scene)
        said = f" ({', '.join(repr(w) for w in strange)} names no operation the catalogue knows)" if strange else ""
        raise SpecQuestion(f"no operation was recognised{said}; what should the kernel compute?",
                           understood=_inputs_said(scene),
                           example="'out = gelu(x + bias)' or 'softmax over the last dim of x [4096, 1024] fp16'")
    nested = _nested(scene, hits)
    if nested is not None:
        return nested
    listed = ", ".join(dict.fromkeys(h.text for h in hits))
    raise SpecQuestion(f"the text names several operations ({listed}) without saying how they combine; in what "
                       "order do they apply?", understood=_inputs_said(scene),
                       example=f"'first {hits[0].text}, then {hits[-1].text}' or a formula such as "
                               f"'out = {hits[-1].entry.name}({hits[0].entry.name}(x))'")


_OF = re.compile(r"^\s*(?:of|of\s+the|of\s+a|on|on\s+the|applied\s+to|applied\s+on|to\s+the|to)\s*$", re.I)


def _nested(scene: Scene, hits: list[Hit]) -> Composition | None:
    """Read `relu of the sum of a and b` as relu(sum(a, b)): each op applies to what the next one gives."""
    if not all(_OF.match(scene.text[a.end:b.start]) for a, b in zip(hits, hits[1:], strict=False)):
        return None
    result: Expr | None = None
    notes: list[str] = []
    for hit in reversed(hits):
        result, _, more = _apply_entry(scene, hit, scene.inputs if result is None else [], result, [])
        notes += more
    assert result is not None
    return Composition(result, "_".join(h.entry.name for h in reversed(hits)), notes, list(hits))


def _strange_words(scene: Scene) -> list[str]:
    """Return the words left over once fillers, names and numbers are set aside: what the person called the op."""
    words = [t.text for t in scene.tokens if t.kind == "word" and len(t.text) > 2 and t.text not in scene.inputs
             and t.text.lower() not in NOT_NAMES and t.text.isascii()]
    return list(dict.fromkeys(words))[:3]


def _inputs_said(scene: Scene) -> str:
    return "inputs: " + (", ".join(f"{n} {list(t.shape)}" for n, t in scene.types.items()
                                   if hasattr(t, "shape")) or "none with a shape")


def _main_formula(scene: Scene) -> Formula | None:
    """Pick the formula that computes the output: the one assigned to an output, else the one over the inputs."""
    over_inputs = [f for f in scene.formulas if set(names(f.expr)) & set(scene.inputs) and not f.constraint]
    assigned = [f for f in over_inputs if f.lhs]
    candidates = assigned or over_inputs or [f for f in scene.formulas if not f.constraint]
    if not candidates:
        return None
    distinct = {to_text(f.expr) for f in candidates}
    if len(distinct) > 1:
        shown = "; ".join(f.text for f in candidates)
        raise SpecQuestion(f"the text gives several formulas ({shown}); which one is the operator?",
                           example="one formula such as 'out = x * sigmoid(1.702 * x)'")
    return candidates[0]


def _with_formula(scene: Scene, formula: Formula, items: list[Item]) -> Composition:
    """Use the formula; a catalogue name beside it must mean the same values, or be applied to it."""
    expr, notes = formula.expr, [f"formula {formula.text!r} read as {to_text(formula.expr)}"]
    used: list[Hit] = []
    labels = [h for h in scene.hits if h is not scene.label] + ([scene.label] if scene.label else [])
    for hit in labels:
        if _applies(hit.entry, formula.expr) and (len(labels) > 1 or hit.entry.op is not None):
            used.append(hit)  # `GELU: out = gelu(x + b)`, `matmul + residual: out = x @ w + r`
            if hit.entry.op is not None and hit.values:
                expr, more = _with_values(expr, hit)
                notes += more
            continue
        applied = _applied_to(scene, hit, formula, items)
        if applied:
            built, name, more = _apply_entry(scene, hit, scene.inputs, formula.expr, [])
            return Composition(built, name, notes + more, [hit])
        defined = _definition(scene, hit, formula)
        used.append(hit)
        if defined is not None:
            expr = defined[0]
            notes = [defined[1]]
    name = _name_of(used[0].entry) if used else _derived_name(expr)
    return Composition(expr, name, notes, used)


def _with_values(expr: Expr, hit: Hit) -> tuple[Expr, list[str]]:
    """Give the formula's calls of the named op the parameters the text sets (`gelu 用 tanh 近似`)."""
    from agent.ir.expr import transform

    op = registry.get(hit.entry.op or "")
    extra = {k: v for k, v in hit.values.items() if op.param(k) is not None}
    if not extra:
        return expr, []

    def fix(e: Expr) -> Expr:
        if not (isinstance(e, Node) and e.op == op.name):
            return e
        given = dict(e.attrs)
        keywords = {k: v for k, v in extra.items() if k not in given}
        if not keywords:
            return e
        operands = {p.name: a for p, a in zip(op.operands, e.args, strict=False)}
        values: dict[str, Any] = dict(given) | {
            k: (v if isinstance(v, str) else Const(v)) for k, v in keywords.items()}
        return bind(op, [], {**operands, **values}, hit.text)

    changed = transform(expr, fix)
    shown = ", ".join(f"{k}={v!r}" for k, v in extra.items())
    return changed, ([f"{hit.text}: {shown} applied to the formula's {op.name}"] if changed != expr else [])


def _applies(entry: Entry, expr: Expr) -> bool:
    """Tell whether a formula applies the entry's op (or every op of the entry's own formula)."""
    if entry.op is not None:
        return entry.op in ops(expr)
    try:
        own = set(ops(entry.build({r.name: Ref(r.name) for r in entry.roles if not r.many},
                                  {p.name: -1 for p in entry.params if p.required})))
    except IRError:
        return False
    return bool(own) and own <= set(ops(expr))


def dedupe(hits: list[Hit], scene: Scene) -> list[Hit]:
    """Merge hits that name one operation twice (`指数 exp`, `MSE, 均方误差`, `HardTanh (clip to [-1, 1])`)."""
    kept: list[Hit] = []
    for hit in hits:
        previous = kept[-1] if kept else None
        if previous is not None and _same_operation(previous, hit, scene):
            previous.values = hit.values | previous.values
            continue
        if previous is not None and _qualifies(previous, hit, scene):
            continue  # `GELU (erf-based)`, `suffix sum (a cumulative sum from the right)`: a description
        if previous is not None and _qualifies(hit, previous, scene):
            kept[-1] = hit  # `exact (erf-based) GELU`: the description came first
            continue
        kept.append(hit)
    return kept


def _adjacent(a: Hit, b: Hit, scene: Scene) -> bool:
    between = scene.text[a.end:b.start]
    return len(between) <= 40 and not re.search(r"\b(?:then|and then|followed)\b|然后|再|之后|->|→", between) and \
        not any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", between) for n in scene.inputs)


def _same_operation(a: Hit, b: Hit, scene: Scene) -> bool:
    if a.entry.name == b.entry.name:
        return True
    if not _adjacent(a, b, scene) or len(a.entry.roles) != len(b.entry.roles):
        return False
    probe = [f"p{i}" for i in range(len(a.entry.roles))]
    try:
        left = a.entry.build({r.name: Ref(p) for r, p in zip(a.entry.roles, probe, strict=True)}, dict(a.values))
        right = b.entry.build({r.name: Ref(p) for r, p in zip(b.entry.roles, probe, strict=True)},
                              dict(b.values) | {k: v for k, v in a.values.items() if b.entry.param(k)})
    except (IRError, ValueError):
        return False
    from agent.ir.types import TensorType

    same, _ = agree(left, right, {p: TensorType("float32", (5, 7)) for p in probe})
    return same


def _qualifies(a: Hit, b: Hit, scene: Scene) -> bool:
    """Tell whether b only describes a (`erf` in `GELU (erf-based)`): b's op is part of a's own definition."""
    if not _adjacent(a, b, scene) or b.entry.op is None:
        return False
    definition = a.entry.check or a.entry.formula or ""
    return bool(re.search(rf"(?<![\w.]){re.escape(b.entry.op)}\s*\(", definition))


def _applied_to(scene: Scene, hit: Hit, formula: Formula, items: list[Item]) -> bool:
    """Tell whether `NAME of FORMULA` applies the named op to the formula (not defines it)."""
    if hit.start > formula.start or formula.spaced_call or formula.lhs:
        return False
    between = scene.text[hit.end:formula.start].strip().lower().split()
    if not between or between[-1] not in _APPLY_WORDS and between[0] not in _APPLY_WORDS:
        return False
    if hit.entry.operand_count != 1:
        return False
    if _multi_term(formula.expr) and not formula.text.startswith("("):
        raise SpecQuestion(
            f"'{hit.text} {' '.join(between)} {formula.text}' can be read two ways: {hit.entry.name}({formula.text}) "
            f"or {hit.entry.name} of the first term only; which one?",
            example=f"'out = {hit.entry.name}({formula.text})'")
    return True


def _multi_term(expr: Expr) -> bool:
    return isinstance(expr, Node) and registry.get(expr.op).infix in ("+", "-", "*", "/")


def _definition(scene: Scene, hit: Hit, formula: Formula) -> tuple[Expr, str] | None:
    """Check that a name and the formula beside it compute the same; return the canonical IR and a note."""
    inputs = [n for n in names(formula.expr) if n in scene.inputs]
    params = {n: Ref(n) for n in names(formula.expr) if n in scene.bindings and n not in scene.inputs}
    try:
        operands, _ = bind_roles(hit.entry, inputs)
        values = dict(hit.values) | {k: v for k, v in params.items() if hit.entry.param(k) is not None}
        if hit.entry.dim and "dim" not in values and registry.get(hit.entry.op or "add").param("dim"):
            values["dim"] = -1
        named = hit.entry.build(dict(operands), values)
    except (IRError, SpecQuestion):
        return None
    same, figure = agree(named, formula.expr, scene.types)
    if not same:
        raise SpecQuestion(
            f"the text names {hit.text} ({to_torch(named)}) and gives the formula {formula.text}, but {figure}; "
            "which one did you mean?",
            example=f"'{hit.text} on x [1024, 1024]' or 'out = {formula.text}'")
    return named, f"{hit.text} and the formula {formula.text!r} mean the same: {figure}"


def _chain(scene: Scene, steps: list[list[Item]]) -> Composition:
    """Apply the steps in order, each to the result of the one before."""
    result: Expr | None = None
    notes: list[str] = []
    used: list[Hit] = []
    consumed: set[str] = set()
    numbers_used: set[int] = set()
    named_in = [step_operands(step)[2] for step in steps]
    for index, step in enumerate(steps):
        hits, formulas, mentioned, numbers, _ = step_operands(step)
        later = {n for names_of_step in named_in[index + 1:] for n in names_of_step}
        arith = [i for i in step if i.kind == "arith"]
        if arith and not hits and not formulas:
            if result is None or len(arith) != 1 or len(numbers) + len(mentioned) != 1:
                raise SpecQuestion("a step of arithmetic needs a result before it and one operand",
                                   example="'x -> silu -> * 2'")
            other: Expr = numbers[0] if numbers else Ref(mentioned[0])
            result = bind(registry.get(ARITH_OPS[arith[0].value]), [result, other], {}, "step")
            numbers_used.update(i.start for i in step if i.kind == "number")
            continue
        if formulas:
            if result is not None or len(formulas) > 1:
                raise SpecQuestion(f"a formula ({formulas[-1].text}) comes after an earlier step; write the whole "
                                   "operator as one formula", example="'out = relu(x @ w)'")
            result = formulas[0].expr
            consumed.update(n for n in names(result) if n in scene.inputs)
            if not hits:
                continue
        if len(hits) != 1:
            listed = ", ".join(h.text for h in hits)
            raise SpecQuestion(f"one step names {listed}; each step should name one operation",
                               example="'first clamp x into [-1, 1], then multiply the result by 3'")
        hit = hits[0]
        rest = [n for n in scene.inputs if n not in consumed and n not in mentioned]
        available = mentioned + rest if result is None else list(mentioned)
        if hit.entry.operand_count == 2 and numbers and _number_right_after(step, hit):
            subject = result if result is not None else Ref(_subject_of(scene, mentioned, consumed))
            operand: Expr = numbers[0]
            result = hit.entry.build(_two(hit.entry, subject, operand), dict(hit.values))
            numbers_used.add(next(i.start for i in step if i.kind == "number" and i.start > hit.start))
        elif result is not None and hit.entry.operand_count > 1 and not available:
            available = [n for n in scene.inputs if n not in consumed]
            result, _, more = _apply_entry(scene, hit, available, result, consumed, reserved=later)
            notes += more
        else:
            result, _, more = _apply_entry(scene, hit, available, result, consumed, reserved=later)
            notes += more
        used.append(hit)
    assert result is not None
    name = "_".join(dict.fromkeys(h.entry.name for h in used)) if used else _derived_name(result)
    return Composition(result, name, notes, used, numbers_used)


def _subject_of(scene: Scene, mentioned: list[str], consumed: set[str]) -> str:
    """Return the tensor a first step applies to: the one it names, or the only input."""
    if mentioned:
        return mentioned[0]
    left = [n for n in scene.inputs if n not in consumed]
    if len(left) != 1:
        raise SpecQuestion(f"the first step does not say which tensor it applies to ({', '.join(left)})",
                           example="'first multiply x by 2, then add y'")
    return left[0]


def _number_right_after(step: list[Item], hit: Hit) -> bool:
    """Tell whether the step's operand is a number (`乘 0.25`, `multiply by 3`) rather than a tensor."""
    after = [i for i in step if i.start > hit.start and i.kind in ("number", "name")]
    return bool(after) and after[0].kind == "number"


def _two(entry: Entry, first: Expr, second: Expr) -> dict[str, Expr | list[Expr]]:
    roles = [r.name for r in entry.roles]
    return {roles[0]: first, roles[1]: second}


def _apply_entry(scene: Scene, hit: Hit, available: list[str], first: Expr | None,
                 consumed: set[str] | list[str], reserved: set[str] | None = None) -> tuple[Expr, str, list[str]]:
    """Build one catalogue operator over inputs (and a running result), with its axis and parameters."""
    entry, notes = hit.entry, []
    if first is None and entry.name in _PAIRWISE and len(available) >= 2 and not _dim_near(scene, hit):
        entry = load_catalogue().by_name[_PAIRWISE[entry.name]]  # `max of x and y`: elementwise
        notes.append(f"{hit.text} of two tensors read as the elementwise {entry.name}")
    if first is None and len([r for r in entry.roles if not r.many]) == 1 and not any(r.many for r in entry.roles) \
            and len(available) > 1:
        shown = ", ".join(available)
        raise SpecQuestion(f"{hit.text} takes one tensor but the text gives {shown}; how do they combine? Write the "
                           "formula", understood=_inputs_said(scene),
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
    if scene.keepdim is not None and entry.param("keepdim") is not None:
        values["keepdim"] = scene.keepdim
    try:
        expr = entry.build(dict(operands), values)
    except IRError as exc:
        raise SpecQuestion(f"{hit.text}: {exc}", example=_param_example(entry)) from None
    return expr, _name_of(entry), notes


def _dim_near(scene: Scene, hit: Hit) -> DimPhrase | None:
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
    if op is None or op.param("dim") is None or "dim" in hit.values:
        return {}
    phrase = _dim_near(scene, hit)
    if phrase is not None:
        if phrase.dims == ALL:
            if op.param("dim").default is None:  # type: ignore[union-attr]
                return {}
            raise SpecQuestion(f"{hit.text} over all elements is not defined; over which dim?",
                               example=f"'{hit.text} over the last dim'")
        return {"dim": phrase.dims}
    if re.search(r"\brow\b|行", hit.text, re.I):
        return {"dim": -1}  # `row sum`, `row max`, `行和`: over each row
    if entry.dim == "required":
        raise SpecQuestion(f"{hit.text} over which dim? The text does not say (each row, the last dim, dim=1, "
                           "or all elements)", understood=_inputs_said(scene),
                           example=f"'{hit.text} over the last dim' or '{hit.text} of all elements'")
    if entry.dim == "last" and entry.family == "scan" and _widest_rank(scene) > 1:
        # torch makes a scan name its dim and numpy flattens: on a matrix, either reading is a guess.
        raise SpecQuestion(f"{hit.text} along which dim? The text does not say, and a scan of a matrix could run "
                           "along its rows, its columns or the flattened tensor", understood=_inputs_said(scene),
                           example=f"'{hit.text} along the last dim'")
    if entry.dim == "last":
        notes.append(f"{hit.text}: no axis given, read as the last dim (dim=-1)")
        return {"dim": -1}
    return {}


def _widest_rank(scene: Scene) -> int:
    return max((len(t.shape) for t in scene.types.values() if isinstance(t, TensorType)), default=0)


def _param_example(entry: Entry) -> str:
    required = [p.name for p in entry.params if p.required]
    return f"'{entry.name} with {required[0]} = 8'" if required else f"'{entry.name} on x [1024, 1024]'"


def _name_of(entry: Entry) -> str:
    return entry.name


def _derived_name(expr: Expr) -> str:
    """Name an operator after the ops its formula applies, innermost first."""
    meaningful = [o for o in ops(expr) if o not in ("add", "sub", "mul", "div")]
    parts = (meaningful or ops(expr))[:4]
    return "_".join(parts) or "identity"


__all__ = ["Composition", "Const", "Scene", "compose"]
