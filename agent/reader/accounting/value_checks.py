"""Values and quantities the text sets (`temperature=0.7`, `with label smoothing`) must be applied by the reading."""

from __future__ import annotations

import re

from agent.ir import registry
from agent.reader.accounting.ir_view import IRView, registered
from agent.reader.accounting.lexicon import JOB_FIELDS, QUANTITIES, parameter_names
from agent.reader.accounting.words import NUMBER, Unaccounted, formula_spans, inside, negated, text_words
from agent.reading import Reading


def assignment_checks(text: str, reading: Reading, facts: IRView) -> list[Unaccounted]:
    """Every `name = value` (or `name: value`, `name value`, `with name value`) the text sets must be applied."""
    known = parameter_names()
    missing: list[Unaccounted] = []
    # A signature's defaults (`def f(x, negative_slope=0.2) -> Tensor`) are values the reading must apply too.
    spans = [(s, e) for s, e in formula_spans(text) if not _signature_at(text, s, e)]
    pattern = (rf"(?<![\w.])([A-Za-z][A-Za-z_]*(?:[ _][a-z]+)?)\s*(?:=|:|\bof\b|\bis\b|\bas\b)?\s*(?<![\w.])"
               rf"({NUMBER}|True|False|true|false)(?![\w.%x×*/\]\[])")
    for m in re.finditer(pattern, text):
        raw, value_text = m.group(1), m.group(2)
        name = raw.lower().replace(" ", "_")
        if " " in raw and name not in known and name not in QUANTITY_NAMES:  # "with beta=1.5": the last word
            raw = raw.split()[-1]
            name = raw.lower()
        annotated = re.search(r"([A-Za-z_]\w*)\s*:\s*$", text[:m.start(1)])
        if annotated and name in _TYPE_WORDS:  # `padding: int = 0`: the annotation's name is the parameter's
            raw, name = annotated.group(1), annotated.group(1).lower()
        explicit = "=" in text[m.end(1):m.start(2)] or ":" in text[m.end(1):m.start(2)]
        if not explicit and name not in known and name not in QUANTITY_NAMES:
            continue  # "x 1024" or "relu 6": only a known parameter word takes a value without `=`
        if re.match(r"\s*(?:optimi[sz]ation\s+)?(?:rounds?|iterations?|times|steps|x\b)", text[m.end():]):
            continue  # "max 3 rounds" sets the job's rounds
        if name in JOB_FIELDS or name in {"default", "defaults", "shape", "size", "dims", "rank", "version"} \
                or inside(m.start(), spans) or _in_brackets(text, m.start()):
            continue
        if name in facts.names or raw in facts.names or _conditional(text, m.start(1) + m.group(1).rfind(raw)):
            continue
        value = _value(value_text)
        if _applied(name, value, reading, facts):
            continue
        quote = text[m.start(1) + m.group(1).rfind(raw):m.end(2)]
        missing.append(Unaccounted(quote.strip(), f"sets {name}, which no part of the reading takes"))
    return missing


_TYPE_WORDS = {"int", "float", "str", "bool", "number", "scalar", "tensor"}
QUANTITY_NAMES = {n for names in QUANTITIES.values() for n in names} | {"_".join(k.split()) for k in QUANTITIES}


def _conditional(text: str, position: int) -> bool:
    """Tell whether a setting is the condition of an API sentence ("If keepdim is True, ..."), not a value set."""
    before = text[max(0, position - 40):position]
    return bool(re.search(r"(?:^|[.;\n])\s*(?:If|When|Unless)\s+:?(?:attr:)?`?$", before, re.I))


def _signature_at(text: str, start: int, end: int) -> bool:
    return bool(re.search(r"\bdef\s+$", text[max(0, start - 8):start]) or re.match(r"\s*->", text[end:end + 6]))


def _in_brackets(text: str, position: int) -> bool:
    """Tell whether a position is inside [...] or (...) holding sizes (`[bs=8, seq=2048]`)."""
    opened = max(text.rfind("[", 0, position), text.rfind("(", 0, position))
    closed = max(text.rfind("]", 0, position), text.rfind(")", 0, position))
    return opened > closed


def _value(text: str) -> object:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    number = float(text)
    return int(number) if number.is_integer() and not re.search(r"[.eE]", text) else number


def _applied(name: str, value: object, reading: Reading, facts: IRView) -> bool:
    canonical = _canonical(name)
    if isinstance(value, bool) or canonical & {"dim", "axis", "keepdim", "correction", "unbiased"}:
        rank = max((len(s) for i in reading.inputs for s in i.shapes), default=0)
        for key in canonical:
            if facts.attr_is(key, value) or (isinstance(value, int) and not isinstance(value, bool) and rank
                                             and facts.attr_is(key, value - rank if value >= 0 else value + rank)):
                return True
        if isinstance(value, bool):
            return not value and not (canonical & {"keepdim", "causal", "is_causal", "unbiased"})
        return False
    assert isinstance(value, (int, float))
    if any(facts.attr_is(key, value) for key in canonical):
        return True
    return facts.has_number(float(value)) or (value != 0 and facts.has_number(1.0 / float(value))
                                              and "temperature" in canonical)


def _canonical(name: str) -> set[str]:
    """Return the attribute names a spelling may stand for (`axis` for dim, `slope` for negative_slope)."""
    names = {name}
    for op in registry.all_ops():
        for p in op.attributes:
            if name in p.aliases:
                names.add(p.name)
    from agent.catalogue import load_catalogue

    for entry in load_catalogue().entries:
        for param in entry.params:
            if name in {"_".join(s.lower().split()) for s in param.say} | {param.name}:
                names.add(param.name)
    return names


def quantity_checks(text: str, facts: IRView) -> list[Unaccounted]:
    """A quantity the text mentions (a temperature, label smoothing) must be in the reading, valued or not."""
    words = text_words(text)
    missing = []
    for phrase, keys in QUANTITIES.items():
        parts = phrase.replace("_", " ").split()
        for i in range(len(words)):
            if [w.text for w in words[i:i + len(parts)]] != parts or negated(words, i):
                continue
            taken = any(k in facts.names or k in facts.attrs for k in keys) or any(
                k in {p.name for op in facts.ops if registered(op) for p in registry.get(op).attributes}
                for k in keys) or (phrase == "temperature" and _scaled(facts))
            if not taken:
                quote = text[words[i].start:words[i + len(parts) - 1].end]
                missing.append(Unaccounted(quote, "is a quantity the reading does not use; give its value or a "
                                                  "formula that uses it"))
            break
    return missing


def _scaled(facts: IRView) -> bool:
    """Tell whether the reading divides or multiplies by a scalar other than one (a temperature's place)."""
    scalars = [n for n in facts.numbers if abs(abs(n) - 1.0) > 1e-12]
    return bool(facts.own_ops & {"div", "mul"}) and bool(scalars or facts.names - facts.tensor_names)
