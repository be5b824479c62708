"""Element subscripts in formulas (`out_i = input_i - alpha * other_i`, `x_{ij}`) name the tensors themselves."""

from __future__ import annotations

import re

_SUBSCRIPTED = re.compile(r"(?<![\w.])(?P<base>[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*?)"
                          r"_(?:\{[ijkmn, ]{1,6}\}|[ijk]{1,3})(?![\w{])")


def drop_element_subscripts(text: str) -> str:
    """Write `input_i` as `input` where the text names `input` on its own too; the length is kept (padded)."""
    bases = set(re.findall(r"(?<![\w.])([A-Za-z][A-Za-z0-9_]*)(?![\w])", text))

    def plain(m: re.Match[str]) -> str:
        base = m.group("base")
        return base + " " * (len(m.group(0)) - len(base)) if base in bases else m.group(0)

    return _SUBSCRIPTED.sub(plain, text)
