"""Axes, output shapes and repeated chains the text states must be the reading's."""

from __future__ import annotations

import math
import re

from agent.reader.accounting.ir_view import IRView
from agent.reader.accounting.words import Unaccounted
from agent.reading import Reading


def dim_name_checks(text: str, reading: Reading) -> list[Unaccounted]:
    """Dim names in a shape (`[bs=8, seq=2048]`, `(N, C, H, W) = (...)`) are axes, never inputs: `over seq`."""
    named = named_dims(text)
    if not named:
        return []
    missing = []
    for item in reading.inputs:
        if item.name in named and not re.search(rf"(?<![\w=]){re.escape(item.name)}\s*[\[(:]\s*\d", text):
            missing.append(Unaccounted(item.name, "names a dim of a shape, but the reading takes it as an input"))
    rank = max((len(s) for i in reading.inputs for s in i.shapes), default=0)
    wanted_dims = _ir_dims(reading, rank)
    # `over seq`, and each name of a list: `over H and W`, `over seq, hidden`
    axis_phrase = (r"\b(?:over|along|across|reduc\w* over)\s+(?:the\s+)?([A-Za-z_]\w*(?:\s*(?:,|\band\b|&)\s*"
                   r"[A-Za-z_]\w*)*)(?:\s+(?:dims?|axis|axes|dimensions?))?")
    for m in re.finditer(axis_phrase, text):
        for name in re.findall(r"[A-Za-z_]\w*", m.group(1)):
            if name == "and":
                continue
            if name not in named:
                break
            index = named[name] % rank if rank else named[name]
            if index not in wanted_dims:
                missing.append(Unaccounted(m.group(0), f"names dim {name} (dim {named[name]}), which the reading "
                                                       "does not reduce or normalize over"))
    return missing


def named_dims(text: str) -> dict[str, int]:
    """Return dim names with their place in their shape: `[bs=8, seq=2048]`, `(N, C, H, W) = (...)`, `[..] (a, b)`."""
    found: dict[str, int] = {}
    for m in re.finditer(r"\[([^\[\]]*=[^\[\]]*)\]", text):
        for k, part in enumerate(m.group(1).split(",")):
            named = re.match(r"\s*([A-Za-z_]\w*)\s*=", part)
            if named:
                found.setdefault(named.group(1), k)
    for m in re.finditer(r"\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*\)\s*(?:=|:)\s*\(\s*\d", text):
        for k, dim_name in enumerate(re.split(r"\s*,\s*", m.group(1).strip())):
            found.setdefault(dim_name, k)
    for m in re.finditer(r"\[\s*\d[\d,\s]*\]\s*\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*\)", text):
        for k, dim_name in enumerate(re.split(r"\s*,\s*", m.group(1).strip())):
            found.setdefault(dim_name, k)
    return found


def _ir_dims(reading: Reading, rank: int) -> set[int]:
    dims: set[int] = set()
    for m in re.finditer(r"\b(?:dim|axis)=\(?(-?\d+(?:,\s*-?\d+)*)\)?", reading.ir):
        for part in m.group(1).split(","):
            value = int(part)
            dims.add(value % rank if rank else value)
    return dims


def output_shape_checks(text: str, reading: Reading) -> list[Unaccounted]:
    """An output shape the text states must be the reading's."""
    if not reading.output_shapes:
        return []
    missing = []
    stated = rf"\b(?:output|out|result|returns?|{re.escape(reading.output)})\b(?:\s+(?:shape|is|has|of|tensor|with))*" \
             r"\s*[:=]?\s*\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]"
    for m in re.finditer(stated, text, re.I):
        shape = [int(v) for v in m.group(1).split(",")]
        if shape not in reading.output_shapes:
            missing.append(Unaccounted(m.group(0), f"states an output of shape {shape}, but the reading's output is "
                                                   f"{reading.output_shapes[0]}"))
    return missing


def repeat_checks(text: str, facts: IRView) -> list[Unaccounted]:
    """A chain applied twice over (`sqrt(exp(sqrt(exp(x))))`) is a description that restates its chain."""
    if re.search(r"\b(twice|again|two times|2 times|repeated|repeatedly)\b", text, re.I):
        return []
    missing = []
    for chain in facts.nests:
        for k in range(2, len(chain) // 2 + 1):
            for start in range(len(chain) - 2 * k + 1):
                if chain[start:start + k] == chain[start + k:start + 2 * k]:
                    ops = " then ".join(reversed(chain[start:start + k]))
                    missing.append(Unaccounted(ops, "the reading applies this chain twice; the text may describe it "
                                                    "twice rather than ask for it twice"))
                    return missing
    return missing


def unit_norm_checks(text: str, reading: Reading) -> list[Unaccounted]:
    """'To unit norm' / 'unit length' keeps the input's shape: x / ||x||, not the norm itself."""
    m = re.search(r"\b(?:to\s+)?unit\s+(?:l2\s+|euclidean\s+)?(?:norm|length)\b", text, re.I)
    if not m or not reading.output_shapes or not reading.inputs:
        return []
    largest = max((s for i in reading.inputs for s in i.shapes), key=lambda s: math.prod(s) if s else 0)
    if reading.output_shapes[0] != largest:
        return [Unaccounted(m.group(0), "keeps the input's shape (x divided by its norm), but the reading's output "
                                        f"is {reading.output_shapes[0]}")]
    return []


# `min(input, dim, keepdim=False) -> (Tensor, LongTensor)`: the signature returns several tensors.
_TENSOR_TYPE = r"(?:Tensor|LongTensor|BoolTensor)"
_TUPLE_RETURN = re.compile(rf"->\s*\(\s*{_TENSOR_TYPE}(?:\s*,\s*{_TENSOR_TYPE})+\s*\)")


def output_count_checks(text: str) -> list[Unaccounted]:
    """A signature that returns a tuple of tensors asks for outputs a reading (one result) cannot give."""
    m = _TUPLE_RETURN.search(text)
    if m is None or re.search(r"->\s*Tensor\b", text[:m.start()] + text[m.end():]):
        return []  # "-> Tensor or (Tensor, LongTensor)": one form returns a single tensor
    return [Unaccounted(m.group(0).lstrip("-> "), "returns several tensors, but the reading computes one")]

