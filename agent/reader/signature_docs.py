"""Argument docs of a signature (`other (Tensor or Number): The tensor to multiply with input.`) describe inputs.

They say what each argument is, not what the operator does: their words must not become steps of the reading.
Only the shapes and dtypes they give are kept for the declarations; every other character is blanked, so the
text keeps its length and the positions every later pass records.
"""

from __future__ import annotations

import re

from agent.reader.vocabulary import DTYPE_WORDS

# `name (Tensor, optional):` or `name (int or list or torch.Size):`: an argument's header in a signature's docs.
_HEADER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(([^()\n:]{1,80})\)\s*:")
_TYPE = re.compile(r"\b(?:tensor|tensors|bool|boolean|int|integer|float|str|string|number|scalar|list|tuple|dtype|"
                   r"optional|callable|sequence|torch\.size|size)\b", re.I)
_SIGNATURE = re.compile(r"\bdef\s+\w+\s*\(|\b(?:Args|Arguments|Parameters|Wrapper Entry Information)\s*:", re.I)
_KEEP = re.compile(r"\[[^\[\]\n]*\]|\([^()\n]*\d[^()\n]*\)|\b(?:" + "|".join(
    sorted((re.escape(w) for w in DTYPE_WORDS if " " not in w), key=len, reverse=True)) + r")\b", re.I)
# Where an argument's description ends: the next header, a new field of the task (`Math:`), or a blank line.
_END = re.compile(r"\n\s*\n|\b(?:Math|Functional Description|Inputs|Outputs|Parameters|Example|Shape)\s*:", re.I)


# `Args:` blocks of docstrings: `    inplace: can do the operation in-place. Default: False`, one argument a line.
_ARGS_BLOCK = re.compile(r"(?m)^[ \t]*(?:Args|Arguments|Keyword args|Keyword arguments)\s*:\s*\n((?:[ \t]+\S.*\n?)+)")
_ARG_LINE = re.compile(r"(?m)^[ \t]+(?:[-*][ \t]+)?\**([A-Za-z_]\w*)\**\s*(?:\([^()\n]*\))?\s*:")


def blank_argument_docs(text: str) -> str:
    """Return the text with the descriptions of a signature's arguments blanked, their shapes and dtypes kept."""
    if not _SIGNATURE.search(text):
        return text
    chars = list(text)
    headers = [m for m in _HEADER.finditer(text) if _TYPE.search(m.group(2))]
    for k, header in enumerate(headers):
        stop = headers[k + 1].start() if k + 1 < len(headers) else len(text)
        end = _END.search(text, header.end(), stop)
        stop = end.start() if end else stop
        # An argument that is no tensor (`inplace (bool, optional)`) is no input: its name goes too.
        start = header.end() if re.search(r"\btensors?\b", header.group(2), re.I) else header.start()
        _blank(text, chars, start, stop)
    for block in _ARGS_BLOCK.finditer(text):
        for line in _ARG_LINE.finditer(text, block.start(1), block.end(1)):
            stop = text.find("\n", line.end())
            _blank(text, chars, line.start(), stop if stop >= 0 else len(text))
    return "".join(chars)


def _blank(text: str, chars: list[str], start: int, stop: int) -> None:
    kept = [(m.start(), m.end()) for m in _KEEP.finditer(text, start, stop)]
    for i in range(start, stop):
        if chars[i] != "\n" and not any(s <= i < e for s, e in kept):
            chars[i] = " "


# API prose that lists what a function can do ("Supports broadcasting ...", "The function supports two modes for
# GELU: exact and approximate using 'tanh'") names options, not steps: the reader leaves it out (the accounting
# pass still reads it, so an option the reading does not reflect is asked about).
_CAPABILITY = re.compile(r"(?:(?<=^)|(?<=[.:;\n]))[ \t]*(?:(?:The|This)\s+(?:function|operation|operator|method)\s+|"
                         r"It\s+)?(?:also\s+)?supports?\b[^.\n]*", re.I)


def blank_capability_notes(text: str) -> str:
    """Return the text with its "supports ..." sentences blanked (the length is kept)."""
    return _CAPABILITY.sub(lambda m: " " * len(m.group(0)), text)


# A sentence on what a flag of the signature changes ("If keepdim is True, the output ... is of size 1. Otherwise,
# dim is squeezed ...") describes the API under other values; its numbers are no constants of the operator.
_SIGNATURE_HEADER = re.compile(r"\b(?:def\s+)?[A-Za-z_][\w.]*\s*\(([^()\n]*)\)\s*(?:->|:)")
_CONDITION = re.compile(r"(?:(?<=^)|(?<=[.;\n]))[ \t]*(?:If|When|Unless)\s+:?(?:attr:)?`?([A-Za-z_]\w*)`?\s+"
                        r"(?:is|are)\s+(?:not\s+)?(?:True|False|None|given|specified|provided|set|a\s+\w+|an\s+\w+)\b[^.\n]*"
                        r"(?:\.\s*Otherwise\b[^.\n]*)?", re.I)


_PARAMETER_SENTENCE = re.compile(r"(?:(?<=^)|(?<=[.;\n]))[ \t]*The\s+[`'\"]?([A-Za-z_]\w*)[`'\"]?\s+"
                                 r"(?:argument|parameter|flag|option|keyword)\b[^.\n]*", re.I)


def blank_parameter_sentences(text: str, flags: set[str] | None = None) -> str:
    """Blank the prose sentences on one argument of the signature ("The dim argument can specify a single dimension,
    ...", "The correction parameter adjusts ..."): argument docs written as prose."""
    flags = _flags(text) if flags is None else flags
    return _PARAMETER_SENTENCE.sub(lambda m: " " * len(m.group(0)) if m.group(1) in flags else m.group(0), text)


# "The input is clamped to [eps, 1 - eps] when eps is not None": the condition comes last.
_TRAILING_CONDITION = re.compile(r"(?:(?<=^)|(?<=[.;\n]))[^.;\n]*?\b(?:when|if|unless)\s+`?([A-Za-z_]\w*)`?\s+"
                                 r"(?:is|are)\s+(?:not\s+)?(?:True|False|None|given|specified|provided|set)\b[^.;\n]*",
                                 re.I)


def _flags(text: str) -> set[str]:
    """Return the non-input arguments the signature names: its header's after the first, else the argument docs'
    that are no tensors (`keepdim (bool): ...`)."""
    header = next((m for m in _SIGNATURE_HEADER.finditer(text)
                   if m.group(0).startswith("def") or m.group(0).rstrip().endswith("->")), None)
    if header is not None:
        names = [re.match(r"\s*\**([A-Za-z_]\w*)", part) for part in header.group(1).split(",")]
        return {m.group(1) for m in names[1:] if m}  # the first argument is the input
    if not _SIGNATURE.search(text):
        return set()
    return {m.group(1) for m in _HEADER.finditer(text)
            if _TYPE.search(m.group(2)) and not re.search(r"\btensors?\b", m.group(2), re.I)}


def blank_parameter_conditions(text: str, flags: set[str] | None = None) -> str:
    """Blank the sentences that say what a non-tensor parameter of the signature does at other values."""
    flags = _flags(text) if flags is None else flags
    for pattern in (_CONDITION, _TRAILING_CONDITION):
        text = pattern.sub(lambda m: " " * len(m.group(0)) if m.group(1) in flags else m.group(0), text)
    return text


# A docstring's usage example (`Example:` then `>>> x = torch.randn(4, 3)` lines and what they print) shows a call
# on made-up sizes; its numbers and names are not the operator's.
_EXAMPLE = re.compile(r"(?m)(?:^[ \t]*Examples?\s*:?[ \t]*\n(?=[ \t]*>>>))?(?:^[ \t]*>>>.*(?:\n(?![ \t]*\n)(?![ \t]*"
                      r"(?:Inputs|Outputs|Parameters|Math|Functional Description|Wrapper Entry Information|other)"
                      r"\s*:).*)*)")


def blank_examples(text: str) -> str:
    """Return the text with its doctest examples blanked (the length and the line breaks kept)."""
    return _EXAMPLE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


# A sentence on what the operator is good for ("This ensures that the output values are scaled between 0 and 1",
# "This is useful for introducing non-linearity after ...") gives a purpose, not a step.
_PURPOSE = re.compile(r"(?:(?<=^)|(?<=[.;\n]))[ \t]*(?:This|It|Such|These)\s+(?:(?:combined|fused|composite)\s+)?"
                      r"(?:(?:function|operation|operator|method|approach|step|combination|layer)\s+)?"
                      r"(?:(?:is|are|can\s+be)\s+(?:\w+\s+)?(?:useful|used|designed|intended|helpful|beneficial|common|"
                      r"typical|popular)|ensures?|helps?|allows?|enables?|makes?\s+it|is\s+a\s+common)\b[^.\n]*", re.I)


# ", re-scaling them so that the elements lie in the range [0, 1] and sum to 1", "re-scales the elements so that
# they ...": what the step achieves, said again.
_SO_THAT = re.compile(r"(?:,\s*)?\b[A-Za-z][\w-]*\s+(?:them|it|the\s+\w+)\s+so\s+that\b[^.\n]*", re.I)
# "... computed exactly or approximately depending on the 'approximate' argument": what an option would change.
_DEPENDING = re.compile(r"(?:(?<=^)|(?<=[.;\n]))[^.\n]*\bdepending\s+on\s+(?:the\s+)?(?:value\s+of\s+)?"
                        r"[`'\"]?[A-Za-z_]\w*[`'\"]?\s+(?:argument|parameter|flag|option)\b[^.\n]*", re.I)


def blank_purpose(text: str) -> str:
    """Return the text with its sentences on what the operator is for, or what an option would change, blanked
    (the length is kept)."""
    for pattern in (_PURPOSE, _SO_THAT, _DEPENDING):
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return text


_HEADER_START = re.compile(r"\b(?:def\s+)?[A-Za-z_][\w.]*\s*\(")


def blank_annotations(text: str) -> str:
    """Blank the type annotations of a signature (`stride: Union[int, Tuple[int, int]] = 1` reads `stride = 1`):
    the types say what an argument may be, the default is what it is."""
    chars = list(text)
    for m in _HEADER_START.finditer(text):
        close = _closing(text, m.end() - 1)
        if close is None or not re.match(r"\s*->", text[close + 1:close + 8]):
            continue
        for start, end in _parts(text, m.end(), close):
            part = text[start:end]
            colon = re.match(r"\s*\**[A-Za-z_]\w*\s*(:)", part)
            if colon is None:
                continue
            equals = _top_level(part, "=", colon.end())
            stop = start + (equals if equals is not None else len(part))
            for i in range(start + colon.start(1), stop):
                if chars[i] != "\n":
                    chars[i] = " "
    return "".join(chars)


def _closing(text: str, opening: int) -> int | None:
    depth = 0
    for i in range(opening, min(len(text), opening + 2000)):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return None


def _top_level(part: str, ch: str, start: int) -> int | None:
    depth = 0
    for i in range(start, len(part)):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(part[i], 0)
        if depth == 0 and part[i] == ch:
            return i
    return None


def _parts(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    parts, depth, begin = [], 0, start
    for i in range(start, stop):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(text[i], 0)
        if depth == 0 and text[i] == ",":
            parts.append((begin, i))
            begin = i + 1
    parts.append((begin, stop))
    return parts


def signature_defaults(text: str) -> dict[str, str]:
    """Return the defaults a signature states (`def f(input, dim=None, keepdim=False) -> Tensor`: dim -> "None")."""
    found: dict[str, str] = {}
    for m in _HEADER_START.finditer(text):
        close = _closing(text, m.end() - 1)
        if close is None or not re.match(r"\s*->", text[close + 1:close + 8]):
            continue
        for start, end in _parts(text, m.end(), close):
            part = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*(.+?)\s*$", text[start:end], re.S)
            if part:
                found.setdefault(part.group(1), part.group(2))
    return found


def api_prose_left_out(text: str) -> str:
    """Blank what API docs say besides the operator: argument docs, "supports ..." notes, other flag values,
    usage examples, purpose sentences and a signature's type annotations."""
    flags = _flags(text)
    return blank_parameter_sentences(blank_parameter_conditions(blank_capability_notes(blank_argument_docs(
        blank_examples(blank_annotations(blank_purpose(text))))), flags), flags)

