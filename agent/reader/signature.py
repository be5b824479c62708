"""The operator's signature: its inputs named, ordered as the text gives them, with their dtypes and types."""

from __future__ import annotations

import re

from agent.ir.expr import Expr, Node, Ref, substitute, walk
from agent.ir.types import FLOAT_DTYPES, ScalarType, TensorType, ValueType
from agent.reader.errors import SpecQuestion
from agent.reader.inputs import InputInfo
from agent.reader.scan import Found
from agent.reader.vocabulary import DECLARATION_LINE

_INTEGER_USES = {"cross_entropy": 1, "nll_loss": 1, "gather": 1, "index_select": 1, "embedding": 0}


def name_unnamed(found: Found, norm: str, infos: dict[str, InputInfo], unnamed: list, refs: list[str],
                  params: dict[str, float], output: str | None) -> None:
    """Give a shape written without a name to the one name the formula or the text leaves without a shape."""
    if infos and all(i.shapes and not any(s.symbols for s in i.shapes) for i in infos.values()) \
            and DECLARATION_LINE.search(norm):
        # an `Inputs:` line gives every input its sizes: a shape of symbols elsewhere (`(minibatch, in_channels, iH,
        # iW)`) documents the layout, it declares nothing
        unnamed = [d for d in unnamed if not all(s.symbols for s in d.shapes)]
    missing = [n for n in refs if n not in infos and n not in params and n != output]
    if len(unnamed) == 1 and unnamed[0].shared and missing:
        for name in missing:  # `out = x + residual, both [16, 2048, 1024]`
            infos[name] = InputInfo(name, list(unnamed[0].shapes), list(unnamed[0].dtypes), position=unnamed[0].start)
        return
    if unnamed and len(missing) == len(unnamed) == 1:
        infos[missing[0]] = InputInfo(missing[0], list(unnamed[0].shapes), list(unnamed[0].dtypes),
                                      position=unnamed[0].start)
        return
    unused = [n for n in infos if n not in refs]
    if len(missing) == 1 and len(unused) == 1 and not unnamed:
        # `Math: y = sigmoid(x)` over a signature `f(input)`: the formula's one free tensor is the one input it
        # does not name
        mapping: dict[str, Expr] = {missing[0]: Ref(unused[0])}
        for formula in found.formulas:
            formula.expr = substitute(formula.expr, mapping)
        refs[refs.index(missing[0])] = unused[0]
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
    if infos and all(i.shapes for i in infos.values()) and DECLARATION_LINE.search(norm):
        return  # every input has its shape from an `Inputs:` line: a stray shape elsewhere is an example's
    shown = ", ".join(str([list(s.dims) for s in d.shapes]) for d in unnamed)
    raise SpecQuestion(f"the text gives the shape {shown} without saying which input it belongs to; whose shape is it?",
                       understood=_said(infos), example="'y [1024, 1024]'")


# `exp on x`, `对 x 做`, `对 float16 张量 x 做` (a dtype and a noun before the name); ASCII names only (`对x做`).
_SUBJECT = re.compile(r"(?:\bon|\bof|\bto|\bfor|对|把|将)\s*(?:(?:a|an|the)\s+)?(?:[A-Za-z_][\w.]*\s*"
                      r"(?:tensors?|matrix|vector|张量|矩阵|向量)\s*)?(?P<name>[A-Za-z_]\w{0,15})\b", re.I | re.A)


def _subject(norm: str, found: Found) -> str:
    """Return the single input named after `on/of/to/对` (`exp on x, a 128x256 matrix`), else `x`."""
    masked = found.ledger.masked()
    candidates = [m.group("name") for m in _SUBJECT.finditer(masked)]
    from agent.reader.vocabulary import NOT_NAMES, dtype_of

    plausible = [c for c in dict.fromkeys(candidates)
                 if c.lower() not in NOT_NAMES and len(c) <= 8 and dtype_of(c) is None]
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


def mention_order(infos: dict[str, InputInfo], found: Found) -> list[str]:
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


def signature_order(expr: Expr, order: list[str]) -> list[str]:
    """Order the inputs of one normalization as its PyTorch signature does: the data, then weight and bias."""
    from agent.ir import registry

    root = expr.args[0] if isinstance(expr, Node) and expr.op == "cast" else expr
    if not isinstance(root, Node) or registry.get(root.op).family != "norm":
        return order
    direct = [a.name for a in root.args if isinstance(a, Ref)]
    if sorted(direct) != sorted(order):
        return order
    return direct


def input_dtypes(found: Found, ordered: list[InputInfo]) -> dict[str, list[str]]:
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


def first_case_types(shapes: dict[str, list[list[int]]], dtypes: dict[str, list[str]],
           params: dict[str, float]) -> dict[str, ValueType]:
    types: dict[str, ValueType] = {n: TensorType(dtypes[n][0], tuple(shapes[n][0])) for n in shapes}
    types.update({n: ScalarType(v) for n, v in params.items()})
    return types


def integer_dtypes(expr: Expr, dtypes: dict[str, list[str]], found: Found,
                   shapes: dict[str, list[list[int]]]) -> dict[str, list[str]]:
    """Give class targets and indices int64 and where-conditions bool, unless the text gave their dtype."""
    stated = {n for d in found.decls for n in d.names if d.dtypes}
    result = dict(dtypes)
    for e in walk(expr):
        if isinstance(e, Node) and e.op in _INTEGER_USES and len(e.args) > _INTEGER_USES[e.op]:
            index = e.args[_INTEGER_USES[e.op]]
            data = e.args[0]
            if e.op == "cross_entropy" and isinstance(index, Ref) and isinstance(data, Ref) \
                    and shapes.get(index.name) == shapes.get(data.name) is not None:
                continue  # a target shaped like the logits holds class probabilities
            if isinstance(index, Ref) and index.name in result and (
                    index.name not in stated or any(d in FLOAT_DTYPES for d in result[index.name])):
                result[index.name] = ["int64"]
        if isinstance(e, Node) and e.op == "where" and isinstance(e.args[0], Ref) and e.args[0].name in result:
            if e.args[0].name not in stated:
                result[e.args[0].name] = ["bool"]
    return result
