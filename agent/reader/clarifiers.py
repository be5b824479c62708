"""Clarifiers people add to a spec: they settle a choice the op has, and are never unknowns to ask about.

`divide by N, not N-1` is the biased variance; `divided by N-1` the unbiased one; `accumulating in fp32` is about
the accumulator, not an input's dtype. Each is replaced (the text's length kept) by the word the reader knows, or
blanked with a note on the reading.
"""

from __future__ import annotations

import re

_FLOAT = r"(?:fp32|float32|f32|fp16|float16|bf16|bfloat16|tf32)"
_ACCUMULATE = re.compile(
    rf"\b(?:accumulat(?:e|es|ed|ing|ion|or)|accum)\s+(?:(?:in|with|as|at|into|using)\s+)?(?:an?\s+)?{_FLOAT}"
    rf"(?:\s+accumulators?)?\b|\b(?:with\s+|using\s+)?(?:an?\s+)?{_FLOAT}\s+(?:accumulat\w*|accum)\b"
    r"|(?:累加|累计)\s*(?:用|使用|为|在)?\s*(?:fp32|float32)|(?:fp32|float32)\s*(?:累加|累计)", re.I)
_BY = r"(?:divid(?:e|es|ed|ing)|normali[sz](?:e|es|ed|ing))\s+(?:it\s+|the\s+sum\s+)?by"
_BIASED = re.compile(rf"\b{_BY}\s+N\b(?:\s*,?\s*(?:and\s+|but\s+)?not\s+(?:by\s+)?N\s*-\s*1\b)?"
                     r"|\bnot\s+(?:by\s+)?N\s*-\s*1\b", re.I)
_UNBIASED = re.compile(rf"\b{_BY}\s+N\s*-\s*1\b(?:\s*,?\s*(?:and\s+|but\s+)?not\s+(?:by\s+)?N\b)?", re.I)


# A loss's reduction said as where it averages: `Cross-entropy loss (mean over the batch)`.
_LOSS = re.compile(r"\bloss\b|\bcross[- ]?entropy\b|\bnll\b|\bmse\b|\bhuber\b|\bl1\b", re.I)
_OVER_BATCH = re.compile(r"\b(?P<how>mean|averaged?|averaging|sum|summed|summing)\s+(?:it\s+)?(?:over|across)\s+"
                         r"(?:the\s+|a\s+)?(?:batch|samples|examples|rows|tokens|elements)\b", re.I)


def read_clarifiers(text: str) -> tuple[str, list[str]]:
    """Return the text with each clarifier replaced by what it says (length kept), and the notes for the reading."""
    notes: list[str] = []
    chars = list(text)
    if _LOSS.search(text):
        for m in _OVER_BATCH.finditer(text):
            mode = "sum" if m.group("how").lower().startswith("sum") else "mean"
            notes.append(f"{m.group(0).strip()!r} read as the loss's reduction={mode!r}")
            _put(chars, m.start(), m.end(), f"reduction {mode}")
    for pattern, word in ((_UNBIASED, "unbiased"), (_BIASED, "biased")):
        for m in pattern.finditer("".join(chars)):
            notes.append(f"{m.group(0).strip()!r} read as the {word} estimate (correction={int(word == 'unbiased')})")
            _put(chars, m.start(), m.end(), word)
    for m in _ACCUMULATE.finditer("".join(chars)):
        notes.append(f"{m.group(0).strip()!r} is about the accumulator, not an input dtype: products and reductions "
                     "of half inputs accumulate in float32 in the generated kernel")
        _put(chars, m.start(), m.end(), "")
    return "".join(chars), notes


def _put(chars: list[str], start: int, end: int, word: str) -> None:
    """Write word over chars[start:end], padding with spaces (newlines kept)."""
    for i in range(start, end):
        k = i - start
        if chars[i] != "\n":
            chars[i] = word[k] if k < len(word) else " "


_NAMED_INLINE = re.compile(r"\[([^\[\]\n]*=[^\[\]\n]*)\]")


def dims_by_name(text: str) -> dict[str, int]:
    """Return the dims a shape names inline (`[bs=8, seq=2048]`) by place.

    `[8, 2048] (bs, seq)` and `(N, C) = (32, 96)` reach here in that form: `shape_names` rewrote them when
    the text was normalized (and left as written those whose names and sizes do not pair).
    """
    named: dict[str, int] = {}
    for m in _NAMED_INLINE.finditer(text):
        for k, part in enumerate(m.group(1).split(",")):
            label = re.match(r"\s*([A-Za-z_]\w*)\s*=", part)
            if label:
                named.setdefault(label.group(1), k)
    return named


def axes_by_name(text: str) -> tuple[str, list[str]]:
    """Write `over seq` as `over dim 1` where a shape names its dim seq; return the text and the notes."""
    named = dims_by_name(text)
    if not named:
        return text, []
    notes: list[str] = []

    def axis(m: re.Match[str]) -> str:
        # `over H and W`, `over seq, hidden`: every name of the list is an axis, not the first alone
        words = [w for w in re.finditer(r"[A-Za-z_]\w*", m.group("names")) if w.group(0) != "and"]
        taken = []
        for word in words:
            if word.group(0) not in named or word.group(0) in taken:
                break
            taken.append(word.group(0))
        if not taken:
            return m.group(0)
        cut = m.start("names") - m.start() + words[len(taken) - 1].end()
        said, rest = m.group(0)[:cut], m.group(0)[cut:] if len(taken) < len(words) else ""
        dims = [named[n] for n in taken]
        notes.append(f"{said.strip()!r}: " + ", ".join(f"{n} is dim {d}" for n, d in zip(taken, dims, strict=True))
                     + " of the shape that names it")
        axes = f"dim {dims[0]}" if len(dims) == 1 else "dims (" + ", ".join(str(d) for d in dims) + ")"
        return f"{m.group('how')} {axes}{rest}"

    name = r"[A-Za-z_]\w*"
    pattern = re.compile(rf"\b(?P<how>over|along|across)\s+(?:the\s+)?(?P<names>{name}(?:\s*(?:,|\band\b|&)\s*{name})*)"
                         r"(?:\s+(?:dims?|axis|axes|dimensions?))?\b(?!\s*[=\[(])")
    return pattern.sub(axis, text), notes
