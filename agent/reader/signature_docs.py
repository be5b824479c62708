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


def blank_parameter_conditions(text: str) -> str:
    """Blank the sentences that say what a non-tensor parameter of the signature does at other values."""
    header = _SIGNATURE_HEADER.search(text)
    if header is None:
        return text
    names = [re.match(r"\s*\**([A-Za-z_]\w*)", part) for part in header.group(1).split(",")]
    flags = {m.group(1) for m in names[1:] if m}  # the first argument is the input
    return _CONDITION.sub(lambda m: " " * len(m.group(0)) if m.group(1) in flags else m.group(0), text)


def api_prose_left_out(text: str) -> str:
    """Blank what API docs say besides the operator: argument docs, "supports ..." notes, other flag values."""
    return blank_parameter_conditions(blank_capability_notes(blank_argument_docs(text)))

