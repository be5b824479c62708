"""Forms of prose written elsewhere (API docs, benchmark descriptions) rewritten into the forms the reader reads.

Each rewrite keeps the meaning: an acronym for its spelled-out name, "b minus a" for "subtract a from b", plain
names and products for LaTeX markup. `text.normalize` applies them before anything is read.
"""

from __future__ import annotations

import re

_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|operatorname|mathbf|textbf)\s*\{+([^{}]*)\}+")
_LATEX_PRODUCT = re.compile(r"\\(?:times|cdot)(?![A-Za-z])")
_LATEX_FUNCTION = re.compile(
    r"\\(ln|log|exp|sin|cos|tan|sinh|cosh|tanh|arcsin|arccos|arctan|Gamma|erf|max|min)(?![A-Za-z])")


_BRACED = r"\{((?:[^{}]|\{[^{}]*\})*)\}"  # one level of braces inside (`input_{i}`)
_LATEX_FRAC = re.compile(rf"\\d?frac\s*{_BRACED}\s*{_BRACED}")
_LATEX_SQRT = re.compile(rf"\\sqrt\s*{_BRACED}")
_LATEX_INVERSE = re.compile(r"\\?(sin|cos|tan|sinh|cosh|tanh)\s*\^\s*\{\s*-\s*1\s*\}")


def plain_latex(text: str) -> str:
    """Write `\\text{out}_i = \\text{x}_i \\times 2` as `out_i = x_i * 2`: LaTeX markup around names and products.

    A product sign must not read as the word "times" (a multiplication step of its own) or a name hide in braces.
    """
    text = _LATEX_TEXT.sub(r"\1", text)
    text = _LATEX_PRODUCT.sub("*", text)
    for _ in range(4):  # `\frac{1}{\sqrt{x}}`: the innermost first
        text, count = _LATEX_FRAC.subn(r"((\1) / (\2))", text)
        text, more = _LATEX_SQRT.subn(r"sqrt(\1)", text)
        if not count + more:
            break
    # `\sin^{-1}(x)`, `sin^{-1}(x)`: the inverse function, not the sine to the power -1
    text = _LATEX_INVERSE.sub(lambda m: "a" + m.group(1), text)
    # Function commands (`\ln \Gamma(x)`, `\exp(x)`) are the function's name: read like one written plainly.
    return _LATEX_FUNCTION.sub(r"\1", text)


# An operand as API prose names it: "other", 'other', "the tensor or number other", "the multiplier alpha".
_OPERAND = (r"(?:the\s+)?(?:(?:input\s+)?tensors?\s+(?:or\s+(?:a\s+)?number\s+)?|multiplier\s+|number\s+|scalar\s+)?"
            r"['\"]?([A-Za-z_]\w*|\d+(?:\.\d+)?)['\"]?")
# "Adds other, scaled by alpha, to input" and "Subtracts other, scaled by alpha, from input" (torch.add's docs).
_SCALED_OPERAND = re.compile(rf"\b(add|subtract)(?:s|ed|ing)?\s+{_OPERAND},?\s+(?:scaled|multiplied)\s+by\s+"
                             rf"{_OPERAND},?\s+(?:to|from)\s+{_OPERAND}", re.I)
_SUBTRACT_FROM = re.compile(rf"\bsubtract(?:s|ed|ing)?\s+{_OPERAND}\s+from\s+{_OPERAND}", re.I)
_SUBTRACTED_FROM = re.compile(rf"\b([A-Za-z_]\w*|\d+(?:\.\d+)?)\s+(?:is\s+)?subtracted\s+from\s+{_OPERAND}", re.I)
_SUBTRACT_FROM_ZH = re.compile(r"从\s*([A-Za-z_]\w*)\s*中?\s*减去\s*([A-Za-z_]\w*|\d+(?:\.\d+)?)")


def put_subtraction_in_order(text: str) -> str:
    """Write "subtract a from b" as "b minus a" (and "adds a, scaled by s, to b" as "b + s * a").

    Operands are otherwise taken in the order the text names them, which would read b - a as a - b.
    """
    text = _SCALED_OPERAND.sub(lambda m: f"{m.group(4)} {'+' if m.group(1).lower() == 'add' else '-'} "
                                         f"{m.group(3)} * {m.group(2)}", text)
    text = _SUBTRACT_FROM.sub(lambda m: _difference(m.group(2), m.group(1)), text)
    text = _SUBTRACTED_FROM.sub(lambda m: _difference(m.group(2), m.group(1)), text)
    return _SUBTRACT_FROM_ZH.sub(lambda m: f"{m.group(1)} 减去 {m.group(2)}", text)


def _difference(minuend: str, subtrahend: str) -> str:
    # A number taken away is a formula ("x - 1"); between two names the word keeps the sentence's other steps.
    return f"{minuend} - {subtrahend}" if subtrahend[0].isdigit() else f"{minuend} minus {subtrahend}"


_ACRONYM = re.compile(r"\(\s*([A-Za-z]{2,8})\s*\)")
_SPELLED_WORD = re.compile(r"[A-Za-z]+")


def collapse_spelled_out_acronyms(text: str) -> str:
    """Replace "Gaussian Error Linear Units (GELU)" by "GELU": a name spelled out and then abbreviated is one name.

    Without this the words inside the long form are read on their own ("Linear" as a linear layer). The long form
    is collapsed only when the initials of the words just before the parenthesis are the acronym's capitals
    (ReLU: R, L, U from "Rectified Linear Unit"), so an ordinary parenthesis is left alone.
    """
    pieces: list[str] = []
    last = 0
    for match in _ACRONYM.finditer(text):
        acronym = match.group(1)
        capitals = [c for c in acronym if c.isupper()]
        if len(capitals) < 2 or acronym[0].islower():
            continue
        words = list(_SPELLED_WORD.finditer(text, last, match.start()))[-len(capitals):]
        if len(words) < len(capitals) or re.search(r"[^\sA-Za-z-]", text[words[0].start():match.start()]):
            continue
        if [w.group()[0].upper() for w in words] != capitals:
            continue
        pieces.append(text[last:words[0].start()] + acronym)
        last = match.end()
    return "".join(pieces) + text[last:]
