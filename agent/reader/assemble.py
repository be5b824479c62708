"""Assemble the reading: inputs with shape cases and dtypes, the composed operator, its checks, the OpSpec."""

from __future__ import annotations

import itertools
import re

from agent.catalogue import Catalogue, alias_words
from agent.ir.evaluate import fold_scalars
from agent.ir.expr import Const, Expr, Node, Ref, names, walk
from agent.ir.family import family_of
from agent.ir.infer import infer
from agent.ir.printer import to_statements, to_text
from agent.ir.types import IRError, ScalarType, TensorType, ValueType
from agent.reader.compose import compose
from agent.reader.dedupe import collapse_restated_chain, dedupe
from agent.reader.errors import SpecQuestion
from agent.reader.inputs import InputInfo, merge, resolve_shapes
from agent.reader.lexer import tokenize
from agent.reader.phrases import Hit, find_hits, read_values
from agent.reader.roles import align_vectors, keep_reduced_dims
from agent.reader.scan import Found
from agent.reader.scene import Composition, Scene
from agent.reader.signature import (
    first_case_types,
    input_dtypes,
    integer_dtypes,
    mention_order,
    name_unnamed,
    signature_order,
)
from agent.reader.text import Ledger
from agent.reader.vocabulary import CJK_FILLERS, FILLERS, OUTPUT_NAMES
from agent.reading import InputReading, Reading
from agent.spec import OpSpec, ScalarSpec, TensorSpec, safe_name, too_large

_CHANNEL_NORMS = {"batch_norm", "instance_norm", "group_norm"}
def assemble(found: Found, norm: str, catalogue: Catalogue) -> OpSpec:
    """Build the OpSpec and its Reading from everything the passes found."""
    notes: list[str] = _check_definitions(found)
    listed = {n for d in found.decls if d.notes == ["bullet"] for n in d.names}
    for f in found.formulas:
        if f.lhs and f.lhs in listed and f.lhs != found.output:
            f.constraint = True  # `A = L * L.T` of an input A: what the input is, not what the operator computes
    output = found.output or next((f.lhs for f in found.formulas if f.lhs and not f.constraint), None)
    infos, unnamed = merge(found.decls, output)
    refs = list(dict.fromkeys(n for f in found.formulas for n in names(f.expr)))
    params = {n: found.bindings[n].values[0] for n in refs
              if n not in infos and n in found.bindings and len(found.bindings[n].values) == 1}
    if found.head_dim and found.head_dim in refs and found.head_dim not in infos:
        query = next((i for i in infos.values() if i.shapes and len(i.shapes[0].dims) >= 3
                      and isinstance(i.shapes[0].dims[-1], int)), None)
        if query is not None:
            params[found.head_dim] = float(query.shapes[0].dims[-1])  # type: ignore[arg-type]
    for name, source in found.same_shape.items():
        if name not in infos and name in refs and source in infos and name not in params:
            # `residual same shape as x`: declared by its likeness alone, dtype included unless said otherwise
            infos[name] = InputInfo(name=name, dtype_from=found.same_dtype.get(name, source),
                                    position=norm.rfind(name))  # where its likeness is said
    name_unnamed(found, norm, infos, unnamed, refs, params, output)
    for name, source in found.same_shape.items():
        if name in infos:
            infos[name].shape_from = source
    order = mention_order(infos, found)
    bullets = [n for d in found.decls if d.notes == ["bullet"] for n in d.names if n in infos]
    if bullets and set(bullets) == set(order):
        order = list(dict.fromkeys(bullets))  # a task book's input list is the signature
    ordered = [infos[n] for n in order]
    shapes = resolve_shapes(ordered, found.bindings)
    dtypes = input_dtypes(found, ordered)
    types = first_case_types(shapes, dtypes, params)
    label = _label(found, catalogue)
    scene = Scene(norm, found.tokens, order, found.bindings, found.formulas, found.hits, found.dims, found.keepdim,
                  found.fused, types, label, found.output_dtype, found.unknown)
    found.hits = scene.hits = dedupe(found.hits, scene)
    mentioned = found.hits + ([label] if label else [])
    cue = found.cue or ("channel" if any(h.entry.name in _CHANNEL_NORMS for h in mentioned)
                        else None)
    for formula in found.formulas:
        folded = fold_scalars(formula.expr, params)
        if folded != formula.expr:
            notes.append(f"scalar parts of {formula.text!r} computed from their values")
        expr_in = _axis_from_text(_times_as_matmul(folded, types, found), found, notes)
        expr_in, aligned_in = align_vectors(expr_in, types, cue)
        formula.expr, kept = keep_reduced_dims(expr_in, types)
        notes += aligned_in + kept
    composition = compose(scene)
    expr, restated = collapse_restated_chain(composition.expr, norm)
    notes = notes + list(composition.notes) + restated
    expr, aligned = align_vectors(expr, types, cue)
    notes += aligned
    _check_used(found, composition, order, expr, label)
    order = signature_order(expr, order)
    dtypes = integer_dtypes(expr, dtypes, found, shapes)
    expr, cast_note = _output_dtype(expr, found, shapes, dtypes, params)
    notes += cast_note + _default_scale(expr, shapes)
    expr = _drop_default_scale(expr, shapes)
    out_types = _infer_cases(expr, shapes, dtypes, params)
    name = safe_name(_op_name(found, composition))
    named = name != composition.name
    out_name = output if output and output not in infos and output.isidentifier() else "out"
    used_params = {n: v for n, v in params.items() if n in names(expr)}
    _claim_words(found, order, list(used_params), out_name)
    reading = Reading(
        source="text", op=name, named=named, family=family_of(expr), ir=to_text(expr),
        pytorch="\n".join(to_statements(expr, out_name)),
        inputs=[InputReading(name=n, dtypes=dtypes[n], shapes=shapes[n]) for n in order],
        params=used_params, output=out_name, output_shapes=[list(t.shape) for t in out_types],
        output_dtype=out_types[0].dtype, notes=notes,
        ignored=found.ledger.unused_pieces(FILLERS | CJK_FILLERS | {w.lower() for w in OUTPUT_NAMES}),
    )
    return OpSpec(
        name=name, category=reading.family, formula=to_text(expr),  # type: ignore[arg-type]
        inputs=[TensorSpec(name=n, shapes=shapes[n], dtypes=dtypes[n]) for n in order],  # type: ignore[arg-type]
        params=[ScalarSpec(name=n, value=v) for n, v in used_params.items()], output=out_name, reading=reading,
    )


def _check_definitions(found: Found) -> list[str]:
    """Check each `f(t) = formula` against the catalogue's f; drop them from the formulas (they are helpers)."""
    import torch

    from agent.ir.evaluate import evaluate

    notes = []
    for formula in [f for f in found.formulas if f.definition]:
        defined = re.search(r"\((\w+)", formula.definition)
        variable = defined.group(1) if defined else names(formula.expr)[0] if names(formula.expr) else "t"
        sample = torch.linspace(-4.0, 4.0, 97, dtype=torch.float64)
        # Parameters both sides name (a negative slope) get one arbitrary value: they agree for every value.
        env: dict[str, object] = {n: 0.37 for n in names(formula.expr)} | {variable: sample}
        try:
            error = float(evaluate(formula.expr, env).abs().max())
        except (RuntimeError, TypeError, ValueError):
            error = float("inf")
        text = found.ledger.text[formula.lhs_start or formula.start:formula.end]
        if error > 1e-9:
            raise SpecQuestion(f"the text defines {text!r}, but the catalogue's {formula.definition} computes "
                               f"something else (they differ by up to {error:.3g}); which one is meant?",
                               example=f"write the whole operator as one formula without {formula.definition}")
        notes.append(f"{text!r} agrees with the catalogue's {formula.definition}")
    found.formulas = [f for f in found.formulas if not f.definition]
    return notes


def _axis_from_text(expr: Expr, found: Found, notes: list[str]) -> Expr:
    """Give a formula's reductions without an axis the one axis the text names (`沿最后一维 ... mean(x^2)`)."""
    from agent.ir import registry
    from agent.ir.expr import transform
    from agent.reader.dims import ALL

    phrases = [d for d in found.dims if d.dims != ALL and d.kind not in ("order", "channel")]
    if len({str(d.dims) for d in phrases}) != 1:
        return expr
    axis = phrases[0].dims

    def fix(e: Expr) -> Expr:
        if isinstance(e, Node) and e.op in ("sum", "mean", "amax", "amin", "var", "std", "vector_norm", "logsumexp") \
                and e.attr("dim") is None and registry.get(e.op).param("dim") is not None:
            notes.append(f"{e.op} in the formula has no axis: read over the dim the text names ({axis})")
            return Node(e.op, e.args, e.attrs + (("dim", axis),))
        return e

    return transform(expr, fix)


def _times_as_matmul(expr: Expr, types: dict[str, ValueType], found: Found) -> Expr:
    """Read `A × B` as a matrix product when the text names one and the elementwise product cannot apply."""
    if not any(h.entry.family == "matmul" for h in found.hits):
        return expr
    from agent.ir.expr import transform

    def fix(e: Expr) -> Expr:
        if not (isinstance(e, Node) and e.op == "mul"):
            return e
        try:
            infer(e, types)
            return e
        except IRError:
            pass
        product = Node("matmul", e.args)
        try:
            infer(product, types)
        except IRError:
            return e
        return product

    return transform(expr, fix)


def _label(found: Found, catalogue: Catalogue) -> Hit | None:
    """Read the operator a name field, heading or `NAME:` prefix names (`gelu_tanh`, `偏置加法：x ...`)."""
    text = found.label_text.strip()
    if not text:
        return _prefix_label(found)
    ledger = Ledger(text)
    tokens = tokenize(text, [], CJK_FILLERS | {a for e in catalogue.entries for a in e.aliases if not a.isascii()},
                      frozenset(CJK_FILLERS))
    hits = find_hits(tokens, catalogue, text)
    if len(hits) != 1:
        return None
    read_values(hits[0], (0, len(text)), ledger, {}, [])
    return hits[0]


def _prefix_label(found: Found) -> Hit | None:
    """Take the one operator named before a leading `:` as a label, when the rest says how to compute it."""
    m = re.match(r"\s*([^:\n]{1,60}?)\s*:", found.ledger.text)
    if not m or not re.search(r"[A-Za-z\u3400-\u9fff]", m.group(1)):
        return None
    before = [h for h in found.hits if h.end <= m.end()]
    after = [h for h in found.hits if h.start >= m.end()]
    assignment = [f for f in found.formulas if f.start >= m.end() and f.lhs and not f.constraint]
    if len(before) > 1 and not after and len(assignment) == 1:
        # `Linear layer followed by ReLU: out = relu(x @ w + b)`: the words name the formula that follows; the
        # formula is the operator (whether the words agree with it is the accounting pass's to check)
        found.hits = [h for h in found.hits if h not in before]
        return None
    if len(before) != 1 or not (after or any(f.start >= m.end() and not f.constraint for f in found.formulas)):
        return None
    found.hits = [h for h in found.hits if h is not before[0]]
    return before[0]


def _check_used(found: Found, composition: Composition, order: list[str], expr: Expr, label: Hit | None) -> None:
    """Refuse a reading that leaves a declared input or a named operation unused."""
    unused = [n for n in order if n not in names(expr)]
    if unused:
        raise SpecQuestion(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} given a shape but the operation "
                           f"({to_text(expr)}) never uses {'it' if len(unused) == 1 else 'them'}; how does it enter?",
                           example=f"a formula such as 'out = {to_text(expr)} + {unused[0]}'")
    numbers = [t for t in found.tokens if t.kind == "number" and not found.ledger.is_used(t.start)
               and t.start not in composition.used_numbers]
    if numbers:
        shown = ", ".join(dict.fromkeys(t.text for t in numbers))
        raise SpecQuestion(f"the reading ({to_text(expr)}) does not use the number{'s' if len(numbers) > 1 else ''} "
                           f"{shown} written in the spec; what is it for?",
                           example="'clamp x to [-1, 1]', 'negative slope 0.2', 'eps = 1e-5' or a formula")
    left = [h for h in found.hits if h not in composition.used_hits and h is not label]
    if left:
        listed = ", ".join(dict.fromkeys(h.text for h in left))
        raise SpecQuestion(f"the text also names {listed}, which the reading ({to_text(expr)}) does not apply; where "
                           "does it go?", example=f"'first ..., then {left[0].text}' or a formula")


def _infer_cases(expr: Expr, shapes: dict[str, list[list[int]]], dtypes: dict[str, list[str]],
                 params: dict[str, float]) -> list[TensorType]:
    """Infer the output for every shape case (with the first dtype case) and check every dtype case once."""
    shape_count = max(len(s) for s in shapes.values())
    dtype_count = max(len(d) for d in dtypes.values())
    outputs: list[TensorType] = []
    for k, j in itertools.product(range(shape_count), range(dtype_count)):
        types: dict[str, ValueType] = {
            n: TensorType(dtypes[n][min(j, len(dtypes[n]) - 1)], tuple(shapes[n][min(k, len(shapes[n]) - 1)]))
            for n in shapes}
        types.update({n: ScalarType(v) for n, v in params.items()})
        try:
            found = infer(expr, types)
        except IRError as exc:
            shown = ", ".join(f"{n} {list(t.shape)}" for n, t in types.items() if isinstance(t, TensorType))
            if "broadcast" in str(exc).lower() or "must match the size" in str(exc).lower():
                raise SpecQuestion(f"the shapes cannot broadcast in {to_text(expr)}: {shown}; which shapes are meant?",
                                   understood=shown,
                                   example="'x [64, 128], bias [128]' (sizes match from the right)") from None
            raise SpecQuestion(f"the operation does not apply to the given shapes: {exc}", understood=shown,
                               example="shapes that fit the operation, e.g. 'x [64, 128], bias [128]'") from None
        if not isinstance(found, TensorType):
            raise SpecQuestion("the operation gives a number, not a tensor")
        problem = too_large(found.shape)
        if problem:
            raise SpecQuestion(f"the output would be {list(found.shape)}: {problem}; are these the shapes you meant?")
        if j == 0:
            outputs.append(found)
    return outputs


def _output_dtype(expr: Expr, found: Found, shapes: dict[str, list[list[int]]], dtypes: dict[str, list[str]],
                  params: dict[str, float]) -> tuple[Expr, list[str]]:
    """Cast the result when the text asks for the output in another dtype (`output in bf16`, `-> fp16`)."""
    wanted = found.output_dtype
    if wanted is None or any(isinstance(e, Node) and e.op == "cast" for e in walk(expr)):
        return expr, []
    current = _infer_cases(expr, shapes, dtypes, params)[0].dtype
    if current == wanted:
        return expr, []
    from agent.ir import registry
    from agent.ir.bind import DType, bind

    cast = bind(registry.get("cast"), [expr, DType(wanted)], {}, "output dtype")
    return cast, [f"the result is cast from {current} to {wanted}, as the text asks for the output"]


def _default_scales(expr: Expr, shapes: dict[str, list[list[int]]]) -> list[Node]:
    """Return the attention nodes whose scale is 1/sqrt(head dim) in every case: PyTorch's default."""
    found = []
    for e in walk(expr):
        if not (isinstance(e, Node) and e.op == "scaled_dot_product_attention"):
            continue
        scale, query = e.attr("scale"), e.args[0]
        if isinstance(scale, Const) and isinstance(scale.value, float) and isinstance(query, Ref):
            dims = {s[-1] for s in shapes.get(query.name, [])}
            if dims and all(abs(scale.value - d ** -0.5) < 1e-9 for d in dims):
                found.append(e)
    return found


def _default_scale(expr: Expr, shapes: dict[str, list[list[int]]]) -> list[str]:
    return ["the attention scale given is 1/sqrt(head dim), which is PyTorch's default"] if _default_scales(
        expr, shapes) else []


def _drop_default_scale(expr: Expr, shapes: dict[str, list[list[int]]]) -> Expr:
    from agent.ir.expr import transform

    targets = _default_scales(expr, shapes)
    return transform(expr, lambda e: Node(e.op, e.args, tuple(kv for kv in e.attrs if kv[0] != "scale"))
                     if e in targets else e)


def _op_name(found: Found, composition: Composition) -> str:
    raw = found.label_text.strip()
    if raw and re.fullmatch(r"[A-Za-z_][\w]*", raw.split()[0]) and "_" in raw.split()[0]:
        return raw.split()[0].lower()
    words = alias_words(raw)
    if raw and composition.used_hits and raw.split()[0].lower() == composition.used_hits[0].entry.name:
        return composition.used_hits[0].entry.name
    if raw and len(words) <= 3 and all(w.isascii() and w.isalnum() for w in words) and words and \
            not words[0][0].isdigit():
        return "_".join(words)
    return composition.name


def _claim_words(found: Found, inputs: list[str], params: list[str], output: str) -> None:
    """Mark input, parameter and output names and dtypes as read, so only unused text is listed."""
    known = {*inputs, *params, output}
    for token in found.tokens:
        if token.kind == "word" and token.text in known or token.kind in ("dtype", "conj"):
            found.ledger.claim(token.start, token.end, "name")
