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
from agent.ir.types import FLOAT_DTYPES, IRError, ScalarType, TensorType, ValueType
from agent.reader.compose import Composition, Scene, compose, dedupe
from agent.reader.errors import SpecQuestion
from agent.reader.inputs import InputInfo, merge, resolve_shapes
from agent.reader.lexer import tokenize
from agent.reader.phrases import Hit, find_hits, read_values
from agent.reader.roles import align_vectors, keep_reduced_dims
from agent.reader.scan import Found
from agent.reader.text import Ledger
from agent.reader.vocabulary import CJK_FILLERS, FILLERS, OUTPUT_NAMES
from agent.reading import InputReading, Reading
from agent.spec import OpSpec, ScalarSpec, TensorSpec, too_large

_CHANNEL_NORMS = {"batch_norm", "instance_norm", "group_norm"}
_INTEGER_USES = {"cross_entropy": 1, "nll_loss": 1, "gather": 1, "index_select": 1, "embedding": 0}


def assemble(found: Found, norm: str, catalogue: Catalogue) -> OpSpec:
    """Build the OpSpec and its Reading from everything the passes found."""
    notes: list[str] = _check_definitions(found)
    output = found.output or next((f.lhs for f in found.formulas if f.lhs), None)
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
    _name_unnamed(found, norm, infos, unnamed, refs, params, output)
    for name, source in found.same_shape.items():
        if name in infos:
            infos[name].shape_from = source
    order = _mention_order(infos, found)
    bullets = [n for d in found.decls if d.notes == ["bullet"] for n in d.names if n in infos]
    if bullets and set(bullets) == set(order):
        order = list(dict.fromkeys(bullets))  # a task book's input list is the signature
    ordered = [infos[n] for n in order]
    shapes = resolve_shapes(ordered, found.bindings)
    dtypes = _dtypes(found, ordered)
    types = _types(shapes, dtypes, params)
    label = _label(found, catalogue)
    found.hits = dedupe(found.hits, Scene(norm, found.tokens, order, found.bindings, found.formulas, found.hits,
                                          found.dims, found.keepdim, found.fused, types, label))
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
    scene = Scene(norm, found.tokens, order, found.bindings, found.formulas, found.hits, found.dims, found.keepdim,
                  found.fused, types, label, found.output_dtype, found.unknown)
    composition = compose(scene)
    expr, notes = composition.expr, notes + list(composition.notes)
    expr, aligned = align_vectors(expr, types, cue)
    notes += aligned
    _check_used(found, composition, order, expr, label)
    order = _signature_order(expr, order)
    dtypes = _integer_dtypes(expr, dtypes, found)
    expr, cast_note = _output_dtype(expr, found, shapes, dtypes, params)
    notes += cast_note + _default_scale(expr, shapes)
    expr = _drop_default_scale(expr, shapes)
    out_types = _infer_cases(expr, shapes, dtypes, params)
    name = _op_name(found, composition)
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
        variable = names(formula.expr)[0] if names(formula.expr) else "t"
        sample = torch.linspace(-4.0, 4.0, 97, dtype=torch.float64)
        try:
            error = float(evaluate(formula.expr, {variable: sample}).abs().max())
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


def _name_unnamed(found: Found, norm: str, infos: dict[str, InputInfo], unnamed: list, refs: list[str],
                  params: dict[str, float], output: str | None) -> None:
    """Give a shape written without a name to the one name the formula or the text leaves without a shape."""
    missing = [n for n in refs if n not in infos and n not in params and n != output]
    if len(unnamed) == 1 and unnamed[0].shared and missing:
        for name in missing:  # `out = x + residual, both [16, 2048, 1024]`
            infos[name] = InputInfo(name, list(unnamed[0].shapes), list(unnamed[0].dtypes), position=unnamed[0].start)
        return
    if unnamed and len(missing) == len(unnamed) == 1:
        infos[missing[0]] = InputInfo(missing[0], list(unnamed[0].shapes), list(unnamed[0].dtypes),
                                      position=unnamed[0].start)
        return
    if missing:
        first = missing[0]
        raise SpecQuestion(f"the formula uses {', '.join(missing)}, which has no shape or value; what is it?",
                           understood=_said(infos), example=f"'{first} [1024, 1024]' or '{first} = 0.5'")
    if not unnamed:
        if not infos:
            raise SpecQuestion("no input shape was found; what shape does each input have?",
                               understood=_ops_said(found), example="'x [1024, 1024]' or '形状 [1024, 1024]'")
        return
    if len(unnamed) == 1 and not infos:
        subject = _subject(norm, found)
        infos[subject] = InputInfo(subject, list(unnamed[0].shapes), list(unnamed[0].dtypes), position=unnamed[0].start)
        return
    shown = ", ".join(str([list(s.dims) for s in d.shapes]) for d in unnamed)
    raise SpecQuestion(f"the text gives the shape {shown} without saying which input it belongs to; whose shape is it?",
                       understood=_said(infos), example="'y [1024, 1024]'")


def _subject(norm: str, found: Found) -> str:
    """Return the single input named after `on/of/to/对` (`exp on x, a 128x256 matrix`), else `x`."""
    masked = found.ledger.masked()
    candidates = re.findall(r"(?:\bon|\bof|\bto|\bfor|对|把|将)\s+([A-Za-z_]\w{0,15})\b", masked)
    from agent.reader.vocabulary import NOT_NAMES

    plausible = [c for c in dict.fromkeys(candidates) if c.lower() not in NOT_NAMES and len(c) <= 8]
    return plausible[0] if len(plausible) == 1 else "x"


def _said(infos: dict[str, InputInfo]) -> str:
    shown = [f"{n} {' or '.join(str(list(s.dims)) for s in i.shapes) or 'without a shape'}" for n, i in infos.items()]
    return "inputs: " + (", ".join(shown) or "none")


def _ops_said(found: Found) -> str:
    """Say what was understood when no input has a shape: the op, the names and dtypes the text mentions."""
    ops = ", ".join(dict.fromkeys(h.entry.name for h in found.hits)) or "none recognised"
    formulas = "; ".join(f.text for f in found.formulas)
    from agent.catalogue import load_catalogue
    from agent.reader.declarations import is_name

    catalogue = load_catalogue()
    mentioned = list(dict.fromkeys(t.text for k, t in enumerate(found.tokens)
                                   if t.kind == "word" and is_name(found.tokens, k, catalogue, set())))
    dtypes = list(dict.fromkeys(t.value for t in found.tokens if t.kind == "dtype"))
    return (f"op: {ops}" + (f"; formula: {formulas}" if formulas else "")
            + (f"; names: {', '.join(mentioned[:6])}" if mentioned else "")
            + (f"; dtypes: {', '.join(dtypes)}" if dtypes else ""))


def _mention_order(infos: dict[str, InputInfo], found: Found) -> list[str]:
    """Order inputs as the text first names them (not counting words of an operator's name, like bias-add)."""
    plain: list[int] = []
    depth = 0
    # A title before a leading `:` (`bias+gelu+residual: out = …`) names the operator, not the signature.
    title = re.match(r"\s*[^:\n]{1,60}?:(?=\s*[A-Za-z_]\w*\s*=)", found.ledger.text)
    for token in found.tokens:  # mentions inside parentheses (`linear（带 bias）`) describe, they do not list
        depth += (token.text == "(") - (token.text == ")") if token.kind == "punct" else 0
        in_title = title is not None and token.start < title.end()
        if token.kind == "word" and depth <= 0 and not token.extra.get("hit") and not in_title:
            plain.append(token.start)

    def first(name: str) -> int:
        words = [t.start for t in found.tokens if t.kind == "word" and t.text == name and t.start in plain]
        return min([infos[name].position, *words])

    return sorted(infos, key=first)


def _signature_order(expr: Expr, order: list[str]) -> list[str]:
    """Order the inputs of one normalization as its PyTorch signature does: the data, then weight and bias."""
    from agent.ir import registry

    root = expr.args[0] if isinstance(expr, Node) and expr.op == "cast" else expr
    if not isinstance(root, Node) or registry.get(root.op).family != "norm":
        return order
    direct = [a.name for a in root.args if isinstance(a, Ref)]
    if sorted(direct) != sorted(order):
        return order
    return direct


def _dtypes(found: Found, ordered: list[InputInfo]) -> dict[str, list[str]]:
    """Give each input its own dtypes, else those of `same dtype as`, the text's loose dtypes, or another input's."""
    own = {i.name: [d for d in i.dtypes] for i in ordered}
    loose = [d for d in found.loose_dtypes if d in FLOAT_DTYPES]
    first_float = next((d for d in own.values() if d and all(x in FLOAT_DTYPES for x in d)), None)
    result: dict[str, list[str]] = {}
    for info in ordered:
        source = found.same_dtype.get(info.name)
        result[info.name] = own[info.name] or (own.get(source, []) if source else []) or loose or first_float or [
            "float32"]
    counts = {len(v) for v in result.values() if len(v) > 1}
    if len(counts) > 1:
        raise SpecQuestion("inputs list different numbers of dtypes; dtype case k takes the k-th dtype of each",
                           example="'x and y float16 / bfloat16'")
    return result


def _types(shapes: dict[str, list[list[int]]], dtypes: dict[str, list[str]],
           params: dict[str, float]) -> dict[str, ValueType]:
    types: dict[str, ValueType] = {n: TensorType(dtypes[n][0], tuple(shapes[n][0])) for n in shapes}
    types.update({n: ScalarType(v) for n, v in params.items()})
    return types


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


def _integer_dtypes(expr: Expr, dtypes: dict[str, list[str]], found: Found) -> dict[str, list[str]]:
    """Give class targets and indices int64 and where-conditions bool, unless the text gave their dtype."""
    stated = {n for d in found.decls for n in d.names if d.dtypes}
    result = dict(dtypes)
    for e in walk(expr):
        if isinstance(e, Node) and e.op in _INTEGER_USES and len(e.args) > _INTEGER_USES[e.op]:
            index = e.args[_INTEGER_USES[e.op]]
            if isinstance(index, Ref) and index.name in result and (
                    index.name not in stated or any(d in FLOAT_DTYPES for d in result[index.name])):
                result[index.name] = ["int64"]
        if isinstance(e, Node) and e.op == "where" and isinstance(e.args[0], Ref) and e.args[0].name in result:
            if e.args[0].name not in stated:
                result[e.args[0].name] = ["bool"]
    return result


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
