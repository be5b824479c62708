"""Assemble a validated OpSpec from requirements text, without an LLM."""

from __future__ import annotations

import re

from pydantic import ValidationError

from agent.expr import FormulaError, names, parse_formula
from agent.parsing import fields as fl
from agent.parsing import formula as fm
from agent.parsing import phrases as ph
from agent.parsing import shapes as sh
from agent.parsing.support import Seen, blank, derived_name, identifier, line_spans, validation_message
from agent.parsing.taskbook import task_headings, task_title
from agent.spec import OpSpec, ScalarSpec, SpecError, TensorSpec, Tolerance

_PER_CHANNEL = re.compile(r"per[\s_-]*channel|channel[\s_-]*wise|逐通道|按通道|每个通道|每通道|通道维", re.I)
_INDEXED = re.compile(r"\b([A-Za-z_]\w*)\s*\[\s*(?:c|ch|chan|channel|channels)\s*\]", re.A | re.I)
_BULLET = re.compile(
    r"^\s*(?:[-*•+]|\d+[.)])?\s*(?P<name>[A-Za-z_]\w*)\s*(?::|\(|\s-\s|,)(?P<rest>.*)$", re.A
)


def parse_requirements(text: str) -> OpSpec:
    """Read an elementwise operator request (English or Chinese) into a validated OpSpec."""
    if not text or not text.strip():
        raise SpecError("the requirements text is empty; describe an elementwise operator, e.g. "
                        f"'ReLU on a float32 tensor x of shape [1024, 1024]'. {ph.SUPPORTED}")
    norm = fl.normalize(text)
    headings = task_headings(norm)
    if len(headings) > 1:
        titles = ", ".join(t or "?" for _, _, t in headings)
        raise SpecError(f"the text holds {len(headings)} tasks ({titles}); split it with split_tasks first")
    fields = fl.field_lines(norm)
    semantic, bullets, output_name = _sections(norm, fields)
    sh.check_dtypes(semantic + "\n" + "\n".join(rest for _, rest in bullets))
    seen = Seen(candidates=_candidates(semantic))
    binds, bind_spans = sh.bindings(semantic + "\n" + "\n".join(rest for _, rest in bullets))
    tolerances, tol_spans = fl.tolerance_spans(norm)
    masks = bind_spans + tol_spans + [(s, e) for s, e, _ in fl.speedup_spans(norm) + fl.rounds_spans(norm)]
    masked = blank(semantic, [(s, e) for s, e in masks if e <= len(semantic)])
    hits = ph.find_ops(masked)
    if any(h.fn in ("clamp", "hardtanh") for h in hits):
        found_range = ph.clamp_range(masked)
        if found_range:
            masked = blank(masked, [found_range[2:]])
            hits = ph.find_ops(masked, found_range[:2])
    seen.op = ", ".join(dict.fromkeys(h.fn for h in hits))
    decls = [sh.bullet_decl(n, rest, binds) for n, rest in bullets]
    free, loose = sh.associate(sh.tokenize(masked, binds), sh.STOP_WORDS | ph.OP_WORDS)
    info, unnamed, clash = _merge(decls + free, output_name, seen)
    seen.dtypes = list(dict.fromkeys([t for d in decls + free for t in d.dtypes] + loose))
    declared = "|".join(re.escape(n) for n, d in info.items() if d.shapes)
    unnamed_text = re.sub(rf"(?<![\w.])(?:{declared})(?!\w)", " ", semantic) if declared else semantic
    bad = ph.unsupported_op(unnamed_text)
    if bad:
        seen.op = bad
        raise SpecError(f"{bad} is not an elementwise operator; {ph.SUPPORTED}. {seen}")
    if clash:
        raise SpecError(f"{clash}. {seen}")

    found = fm.explicit(masked, output_name)
    scalars = {k: v[0] for k, v in binds.items() if len(v) == 1}
    formula, lhs = (found[0], found[1]) if found else ("", None)
    if found is None and info:
        implicit = fm.implicit(blank(masked, sh.shape_spans(masked, binds)), set(info) | set(scalars))
        if implicit:
            formula = re.sub(r"\s+", " ", implicit[0])
            _check_leftovers(masked, implicit, seen)
    if not formula:
        inputs = [n for n in info if info[n].shapes or info[n].unbound]
        if not inputs and len(unnamed) == 1:
            default = seen.candidates[0] if len(seen.candidates) == 1 else "x"
            info[default] = sh.Decl([default], unnamed[0].shapes, unnamed[0].dtypes, unnamed[0].unbound)
            inputs = [default]
        if not inputs:
            raise SpecError(f"no input shape was found; give each input a shape such as 'x [1024, 1024]' "
                            f"or '形状 [1024, 1024]'. {seen}")
        formula, name = ph.phrase_formula(hits, inputs, str(seen))
        return _assemble(norm, fields, info, inputs, formula, [], name, lhs, output_name, loose, tolerances,
                         masked, seen)
    seen.op = f"formula {formula!r}"
    try:
        used = names(parse_formula(formula))
    except FormulaError as exc:
        raise SpecError(f"cannot use the formula {formula!r}: {exc}. {ph.SUPPORTED}. {seen}") from exc
    missing = [n for n in used if n not in info and n not in scalars]
    if len(missing) == 1 and len(unnamed) == 1:
        info[missing[0]] = sh.Decl([missing[0]], unnamed[0].shapes, unnamed[0].dtypes, unnamed[0].unbound)
        missing = []
    if missing:
        raise SpecError(f"the formula {formula!r} uses {', '.join(missing)}, which has no shape or "
                        f"value; give it one, e.g. '{missing[0]} [1024, 1024]' or "
                        f"'{missing[0]} = 0.5'. {seen}")
    inputs = [n for n in used if n in info] + [n for n in info if n not in used and info[n].shapes]
    params = [ScalarSpec(name=n, value=scalars[n]) for n in used if n not in info]
    return _assemble(norm, fields, info, inputs, formula, params, "", lhs, output_name, loose, tolerances,
                     masked, seen)


def _sections(norm: str, fields: list[fl.FieldLine]) -> tuple[str, list[tuple[str, str]], str | None]:
    """Return the text that describes the operator, the `name: ...` input lines, and the output name."""
    skip = {i for i, line in enumerate(norm.split("\n")) if re.match(r"^\s*#\s", line)}
    bullets: list[tuple[str, str]] = []
    output_name: str | None = None
    for f in fields:
        if f.kind in fl.HEADER_KINDS or f.kind in ("ignore", "output"):
            skip.update(range(f.line, f.line + 1 + len(f.body)))
        if f.kind == "output":
            first = re.match(r"\s*([A-Za-z_]\w*)", f.value, re.A)
            output_name = first.group(1) if first and first.group(1).lower() not in sh.STOP_WORDS else None
        if f.kind == "inputs":
            for k, line in enumerate(f.body, start=f.line + 1):
                match = _BULLET.match(line)
                if match and match.group("name").lower() not in sh.STOP_WORDS:
                    bullets.append((match.group("name"), match.group("rest")))
                    skip.add(k)
    return blank(norm, line_spans(norm, skip)), bullets, output_name


def _candidates(semantic: str) -> list[str]:
    """List words that look like input names (short, lower-case or with _ or digits), for messages."""
    banned = sh.STOP_WORDS | ph.OP_WORDS | sh.FILLERS | {"a", "an", "and", "or"}
    words = re.findall(r"(?<![\w.])[A-Za-z_]\w*", semantic, re.A)
    plausible = [w for w in words if w.lower() not in banned and not sh.dtype_name(w)
                 and (len(w) <= 4 or re.search(r"[_\d]", w)) and not w[0].isupper()]
    return list(dict.fromkeys(plausible))[:6]


def _merge(
    decls: list[sh.Decl], output_name: str | None, seen: Seen
) -> tuple[dict[str, sh.Decl], list[sh.Decl], str]:
    """Combine declarations by input name; return them, the unnamed ones, and any clash found."""
    info: dict[str, sh.Decl] = {}
    clash = ""
    for d in decls:
        for n in d.names:
            if n == output_name:
                continue
            if n in info and d.shapes and info[n].shapes and info[n].shapes != d.shapes:
                clash = clash or f"input {n} is given two different shapes: {info[n].shapes} and {d.shapes}"
            if n not in info or not info[n].shapes:
                info[n] = sh.Decl([n], d.shapes, d.dtypes or (info[n].dtypes if n in info else []), d.unbound,
                                  d.dtype_from, d.shape_from)
    for d in info.values():
        if not d.shapes and d.shape_from in info:
            d.shapes = info[d.shape_from].shapes
    seen.inputs = {n: d.shapes for n, d in info.items() if d.shapes}
    return info, [d for d in decls if not d.names], clash


def _check_leftovers(masked: str, implicit: tuple[str, int, int], seen: Seen) -> None:
    """Raise when the formula's own line also names an operation the formula does not apply."""
    start = masked.rfind("\n", 0, implicit[1]) + 1
    end = masked.find("\n", implicit[2])
    line = masked[start: end if end >= 0 else len(masked)]
    line = re.sub(r"^\s*[^:\n]{0,30}:", "", line) if ":" in line[: implicit[1] - start] else line
    line = line.replace(implicit[0], " ")
    applied = fm.functions(parse_formula(implicit[0]))
    extra = [h.fn for h in ph.find_ops(line) if h.kind == "unary" and h.fn not in applied]
    if extra:
        raise SpecError(f"the text gives the formula {implicit[0]!r} but also names {', '.join(extra)}; "
                        f"write the whole formula, e.g. 'out = {extra[0]}({implicit[0]})'. {seen}")


def _resolve(info: dict[str, sh.Decl], inputs: list[str], loose: list[str], seen: Seen) -> None:
    """Fill shapes and dtypes given as `same as x`, loose dtype words, or the first input's dtypes."""
    for n in inputs:
        d = info[n]
        if not d.shapes and d.shape_from in info:
            d.shapes = info[d.shape_from].shapes
        if d.unbound and not d.shapes:
            raise SpecError(f"the shape of {n} uses {', '.join(d.unbound)} without a value; write e.g. "
                            f"'{d.unbound[0]} = 8' or '{d.unbound[0]} 取 8 / 32'. {seen}")
        if not d.shapes:
            raise SpecError(f"input {n} has no shape; give one such as '{n} [1024, 1024]'. {seen}")
    first = next((info[n].dtypes for n in inputs if info[n].dtypes), None)
    for n in inputs:
        d = info[n]
        if not d.dtypes:
            source = info.get(d.dtype_from or "")
            d.dtypes = (source.dtypes if source and source.dtypes else None) or loose or first or ["float32"]


def _per_channel(info: dict[str, sh.Decl], inputs: list[str], masked: str) -> dict[str, int]:
    """Return align=1 for 1-D inputs that are per-channel ([C]) over an NCHW-style input."""
    indexed = {m.group(1) for m in _INDEXED.finditer(masked)}
    wording = bool(_PER_CHANNEL.search(masked))
    main = max(inputs, key=lambda n: len(info[n].shapes[0]))
    result: dict[str, int] = {}
    for n in inputs:
        shapes, big = info[n].shapes, info[main].shapes
        if n == main or not (wording or n in indexed) or any(len(s) != 1 for s in shapes):
            continue
        cases = range(max(len(shapes), len(big)))
        pairs = [(shapes[min(i, len(shapes) - 1)], big[min(i, len(big) - 1)]) for i in cases]
        if all(len(b) >= 3 and s[0] == b[1] for s, b in pairs):
            result[n] = 1
    return result


def _assemble(
    norm: str, fields: list[fl.FieldLine], info: dict[str, sh.Decl], inputs: list[str], formula: str,
    params: list[ScalarSpec], name: str, lhs: str | None, output_name: str | None, loose: list[str],
    tolerances: dict[str, Tolerance], masked: str, seen: Seen,
) -> OpSpec:
    """Resolve names, dtypes and header facts, then build and validate the OpSpec."""
    _resolve(info, inputs, loose, seen)
    align = _per_channel(info, inputs, masked)
    field_name = next((identifier(f.value) for f in fields if f.kind == "name" and identifier(f.value)), None)
    title = task_title(norm)
    label = re.match(r"\s*([A-Za-z][\w-]{0,30})\s*:", norm, re.A)
    label_name = identifier(label.group(1)) if label and ph.find_ops(label.group(1)) else None
    name = field_name or (identifier(title) if title else None) or label_name or name
    name = name or derived_name(formula, inputs)
    output = output_name or (lhs if lhs and lhs.isascii() and lhs not in inputs else None) or "out"
    description = next((f.value for f in fields if f.kind == "description" and f.value), "")
    if not description:
        description = next((ln.strip(" #-*") for ln in norm.split("\n") if ln.strip(" #-*")), "")[:300]
    speedup = fl.find_speedup(norm, fields)
    rounds = fl.find_rounds(norm)
    extra: dict[str, object] = {}
    if speedup is not None:
        extra["target_speedup"] = speedup
    if rounds is not None:
        extra["max_rounds"] = rounds
    if tolerances:
        extra["tolerances"] = tolerances
    try:
        return OpSpec(
            name=name, description=description, formula=formula,
            inputs=[TensorSpec(name=n, shapes=info[n].shapes, dtypes=info[n].dtypes, align=align.get(n))
                    for n in inputs],
            params=params, output=output, device=fl.find_device(norm, fields), **extra,
        )
    except ValidationError as exc:
        raise SpecError(f"the request contradicts itself: {validation_message(exc)}. {seen}") from None
