"""Shapes whose dims are named apart from their sizes, written as the inline form `[N=32, C=96]` the reader reads.

`q [2, 8, 128, 64] fp16 (batch, heads, seq, head_dim)` and `x (N, C, H, W) = (32, 96, 56, 56)` name each axis; in
the inline form the names become axes a later phrase can use ("softmax over seq", "sum over C"). The names and the
sizes must pair one to one; anything else is left as written, and the reading asks about it.
"""

from __future__ import annotations

import re

from agent.reader.vocabulary import dtype_of

_SIZE = r"\d+[kK]?"
_NAME = r"[A-Za-z_]\w*"
_SIZES = rf"\s*{_SIZE}(?:\s*,\s*{_SIZE})+\s*"
_NAMES = rf"\s*{_NAME}(?:\s*,\s*{_NAME})+\s*"
# `[2, 8, 128, 64] fp16 (batch, heads, seq, head_dim)`: sizes, at most a dtype, then the names in parentheses
_SIZES_THEN_NAMES = re.compile(rf"\[(?P<sizes>{_SIZES})\](?P<between>\s*(?:(?P<dtype>[\w.]+)\s*)?)"
                               rf"\((?P<names>{_NAMES})\)")
# `(N, C, H, W) = (32, 96, 56, 56)` or with brackets
_NAMES_EQUAL_SIZES = re.compile(rf"[(\[](?P<names>{_NAMES})[)\]]\s*=\s*[(\[](?P<sizes>{_SIZES})[)\]]")


def name_shape_dims(text: str) -> str:
    """Write shapes with separately named dims as `[name=size, ...]`."""
    text = _NAMES_EQUAL_SIZES.sub(lambda m: _inline(m.group("names"), m.group("sizes")) or m.group(0), text)

    def after_sizes(m: re.Match[str]) -> str:
        if m.group("dtype") and dtype_of(m.group("dtype")) is None:
            return m.group(0)  # `[2, 8] of (a, b)`: a word between is not a dtype; no pairing is assumed
        inline = _inline(m.group("names"), m.group("sizes"))
        return inline + m.group("between").rstrip() if inline else m.group(0)

    return _SIZES_THEN_NAMES.sub(after_sizes, text)


def _inline(names: str, sizes: str) -> str | None:
    """Pair names with sizes as `[a=1, b=2]`, or None when they do not pair one to one or a name repeats."""
    named = [n.strip() for n in names.split(",")]
    sized = [s.strip() for s in sizes.split(",")]
    if len(named) != len(sized) or len(set(named)) != len(named):
        return None
    return "[" + ", ".join(f"{n}={s}" for n, s in zip(named, sized, strict=True)) + "]"
