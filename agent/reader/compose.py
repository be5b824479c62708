"""Compose the operator from what the text names: formulas, catalogue operators and step chains."""

from __future__ import annotations

import re
from typing import Any

from agent.catalogue import Entry, load_catalogue
from agent.ir import registry
from agent.ir.bind import bind
from agent.ir.expr import Const, Expr, Node, Ref, names, ops, walk
from agent.ir.printer import to_text, to_torch
from agent.ir.types import IRError
from agent.reader.agreement import agree
from agent.reader.apply import apply_entry, two_operands
from agent.reader.errors import SpecQuestion
from agent.reader.formulas import Formula
from agent.reader.phrases import Hit
from agent.reader.roles import bind_roles, role_matches
from agent.reader.scene import Composition, Scene, derived_name, inputs_said
from agent.reader.steps import ARITH_OPS, Item, drop_restatements, items_of, split_listed, split_steps, step_operands
from agent.reader.vocabulary import NOT_NAMES

_APPLY_WORDS = {"of", "on", "to", "over", "onto", "对", "做", "applied"}


def compose(scene: Scene) -> Composition:
    """Return the operator the text describes (its hits already deduped), or raise SpecQuestion for a guess."""
    formulas = [f for f in scene.formulas if not f.constraint]
    assigned = [f for f in formulas if f.lhs and set(names(f.expr)) >= set(scene.inputs)]
    items = items_of(scene.tokens, scene.hits, formulas, set(scene.inputs))
    steps = None if assigned else split_steps(items, scene.fused)
    if steps is not None:
        steps, restated, again = drop_restatements(split_listed(steps, scene.text), scene.text)
        composition = _chain(scene, steps)
        composition.notes[:0] = restated
        composition.used_hits += again
        return composition
    main = _main_formula(scene)
    if main is not None:
        return _with_formula(scene, main, items)
    hits = [h for h in scene.hits if h is not scene.label] or ([scene.label] if scene.label else [])
    if len(hits) == 1 and scene.label is not None and hits[0].entry is scene.label.entry:
        hits[0].values = scene.label.values | hits[0].values  # `二维卷积：…，步长 1，填充 1`: one op, said twice
    if len(hits) == 1:
        expr, name, notes = apply_entry(scene, hits[0], scene.inputs, None, [])
        return Composition(expr, name, notes, [hits[0]])
    if not hits and scene.output_dtype is not None and len(scene.inputs) == 1:
        cast = load_catalogue().by_name["cast"]  # `把 x 从 float32 转换为 bfloat16`: the cast is the operator
        expr = cast.build({"input": Ref(scene.inputs[0])}, {"dtype": scene.output_dtype})
        return Composition(expr, "cast", [f"a cast of {scene.inputs[0]} to {scene.output_dtype}"])
    if not hits and scene.unknown:
        raise SpecQuestion(f"{', '.join(scene.unknown)} is not an operator the catalogue knows; what does it compute?",
                           understood=inputs_said(scene),
                           example="a formula over known operators, e.g. 'out = x * sigmoid(1.702 * x)'")
    if not hits:
        _ask_about_operator_names(scene)
        strange = _strange_words(scene)
        said = f" ({', '.join(repr(w) for w in strange)} names no operation the catalogue knows)" if strange else ""
        raise SpecQuestion(f"no operation was recognised{said}; what should the kernel compute?",
                           understood=inputs_said(scene),
                           example="'out = gelu(x + bias)' or 'softmax over the last dim of x [4096, 1024] fp16'")
    nested = _nested(scene, hits)
    if nested is not None:
        return nested
    listed = ", ".join(dict.fromkeys(h.text for h in hits))
    raise SpecQuestion(f"the text names several operations ({listed}) without saying how they combine; in what "
                       "order do they apply?", understood=inputs_said(scene),
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
        result, _, more = apply_entry(scene, hit, scene.inputs if result is None else [], result, [])
        notes += more
    assert result is not None
    return Composition(result, "_".join(h.entry.name for h in reversed(hits)), notes, list(hits))


def _ask_about_operator_names(scene: Scene) -> None:
    """Ask when an operation's name was read as an input's (`conv2d [3, 3]`): a shape right after a name names it."""
    catalogue = load_catalogue()
    named = [n for n in scene.inputs if (n.lower(),) in catalogue.by_alias]
    if not named:
        return
    name = named[0]
    shape = list(getattr(scene.types.get(name), "shape", None) or [1024, 1024])
    raise SpecQuestion(f"no operation was recognised: the shape right after {name!r} makes it an input's name; if "
                       f"{name} is the operation, give each input its own name", understood=inputs_said(scene),
                       example=f"'{name} of x {shape}'")


def _strange_words(scene: Scene) -> list[str]:
    """Return the words left over once fillers, names and numbers are set aside: what the person called the op."""
    words = [t.text for t in scene.tokens if t.kind == "word" and len(t.text) > 2 and t.text not in scene.inputs
             and t.text.lower() not in NOT_NAMES and t.text.isascii()]
    return list(dict.fromkeys(words))[:3]


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
        if len(labels) > 1 and _computes_a_part(scene, hit, formula):
            used.append(hit)  # one of the names of a fused chain: it names a step of the formula
            continue
        applied = _applied_to(scene, hit, formula, items)
        if applied:
            built, name, more = apply_entry(scene, hit, scene.inputs, formula.expr, [])
            # another name of the whole (`log1p(input)` beside `the natural logarithm of (1 + input)`) is the same op
            same = [h for h in labels if h is not hit and (named := _named(scene, h, built)) is not None
                    and agree(named, built, scene.types)[0]]
            more += [f"{h.text} names the same operation as {hit.text} of {formula.text}" for h in same]
            return Composition(built, name, notes + more, [hit, *same])
        defined = _definition(scene, hit, formula)
        used.append(hit)
        if defined is not None:
            expr = defined[0]
            notes = [defined[1]]
    name = used[0].entry.name if used else derived_name(expr)
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


def _named(scene: Scene, hit: Hit, expr: Expr) -> Expr | None:
    """Build the named op over the inputs of an expression, in their order; None if it cannot take them."""
    inputs = [n for n in names(expr) if n in scene.inputs]
    params = {n: Ref(n) for n in names(expr) if n in scene.bindings and n not in scene.inputs}
    try:
        operands, _ = bind_roles(hit.entry, inputs)
        values = dict(hit.values) | {k: v for k, v in params.items() if hit.entry.param(k) is not None}
        if hit.entry.dim and "dim" not in values and registry.get(hit.entry.op or "add").param("dim"):
            values["dim"] = -1
        return hit.entry.build(dict(operands), values)
    except (IRError, SpecQuestion):
        return None


def _computes_a_part(scene: Scene, hit: Hit, formula: Formula) -> bool:
    """Tell whether a proper part of the formula computes the named op (`linear + GELU: y = gelu(x @ W^T + b)`)."""
    for part in walk(formula.expr):
        if part is formula.expr or not isinstance(part, Node):
            continue
        named = _named(scene, hit, part)
        if named is not None and agree(named, part, scene.types)[0]:
            return True
    return False


def _definition(scene: Scene, hit: Hit, formula: Formula) -> tuple[Expr, str] | None:
    """Check that a name and the formula beside it compute the same; return the canonical IR and a note."""
    named = _named(scene, hit, formula.expr)
    if named is None:
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
    # A name said in a later step of one-tensor operations is not its operand: that step takes the running result
    # (`conv, followed by layer norm and SiLU to the input x`: x is the convolution's input).
    named_in = [[] if steps_before and all(len(h.entry.roles) == 1 for h in step_operands(step)[0])
                and not step_operands(step)[1] else step_operands(step)[2]
                for steps_before, step in enumerate(steps)]
    # A later step's operation names its operand by a role (`add bias` takes the input named bias): reserved too.
    hinted = [{n for hit in step_operands(step)[0] for role in hit.entry.roles[1:]
               for n in role_matches(hit.entry, role, scene.inputs)} for step in steps]
    for index, step in enumerate(steps):
        hits, formulas, mentioned, numbers, _ = step_operands(step)
        later = {n for names_of_step in named_in[index + 1:] + hinted[index + 1:] for n in names_of_step}
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
        if result is None and [n for n in rest if n not in later]:
            rest = [n for n in rest if n not in later]  # `relu first, then add bias`: bias waits for its step
        available = mentioned + rest if result is None else list(mentioned)
        if result is None and mentioned and _one_tensor(hit.entry):
            available = mentioned[:1]  # `softmax to the input ..., then multiply by another tensor`: said here
        if hit.entry.operand_count == 2 and numbers and _number_right_after(step, hit):
            subject = result if result is not None else Ref(_subject_of(scene, mentioned, consumed))
            operand: Expr = numbers[0]
            result = hit.entry.build(two_operands(hit.entry, subject, operand), dict(hit.values))
            numbers_used.add(next(i.start for i in step if i.kind == "number" and i.start > hit.start))
        elif result is not None and hit.entry.operand_count > 1 and not available:
            available = [n for n in scene.inputs if n not in consumed]
            result, _, more = apply_entry(scene, hit, available, result, consumed, reserved=later)
            notes += more
        else:
            result, _, more = apply_entry(scene, hit, available, result, consumed, reserved=later)
            notes += more
        used.append(hit)
    assert result is not None
    name = "_".join(dict.fromkeys(h.entry.name for h in used)) if used else derived_name(result)
    return Composition(result, name, notes, used, numbers_used)


def _one_tensor(entry: Entry) -> bool:
    return len(entry.roles) == 1 and not entry.roles[0].many


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


__all__ = ["Composition", "Const", "Scene", "compose"]
