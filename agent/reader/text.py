"""Normalize spec text and keep track of which characters a reading has used."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FULLWIDTH = str.maketrans({
    "：": ":", "，": ",", "（": "(", "）": ")", "；": ";", "［": "[", "］": "]", "【": "[", "】": "]",
    "＝": "=", "≥": ">=", "≤": "<=", "＞": ">", "＜": "<", "｛": "{", "｝": "}", "／": "/", "＋": "+",
    "－": "-", "＊": "*", "　": " ", "“": '"', "”": '"', "‘": "'", "’": "'", "＿": "_", "−": "-",
    "–": "-", "—": "-", "⩾": ">=", "⩽": "<=", "\t": " ", "、": "、", "！": "!", "？": "?", "～": "~",
    "\u00a0": " ", "\u200b": "", "\ufeff": "",
})
_CJK = re.compile(r"[\u3400-\u9fff]")


def normalize(text: str) -> str:
    """Turn full-width punctuation into ASCII, unify line ends, and end Chinese sentences with '. '."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_FULLWIDTH)
    text = text.replace("。", ". ")
    # `w/ weight+bias`, `w/o bias`: shorthand for with / without, not a name followed by a division.
    text = re.sub(r"(?<![\w./])w/o(?![\w/])", "without", text, flags=re.I)
    text = re.sub(r"(?<![\w./])w/(?=\s*[A-Za-z\u3400-\u9fff])", "with ", text, flags=re.I)
    text = collapse_spelled_out_acronyms(text)
    text = put_subtraction_in_order(text)
    text = plain_latex(text)
    # LaTeX's function commands (`\ln \Gamma(x)`, `\exp(x)`) are the function's name: read like one written plainly.
    text = _LATEX_FUNCTION.sub(r"\1", text)
    # Backquoted code in prose (`x`, ``F.gelu``) reads like the code inside.
    return re.sub(r"`{1,2}([^`\n]*)`{1,2}", r" \1 ", text)


_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|operatorname|mathbf|textbf)\s*\{+([^{}]*)\}+")
_LATEX_PRODUCT = re.compile(r"\\(?:times|cdot)(?![A-Za-z])")


def plain_latex(text: str) -> str:
    """Write `\\text{out}_i = \\text{x}_i \\times 2` as `out_i = x_i * 2`: LaTeX markup around names and products.

    A product sign must not read as the word "times" (a multiplication step of its own) or a name hide in braces.
    """
    text = _LATEX_TEXT.sub(r"\1", text)
    return _LATEX_PRODUCT.sub("*", text)


_LATEX_FUNCTION = re.compile(
    r"\\(ln|log|exp|sin|cos|tan|sinh|cosh|tanh|arcsin|arccos|arctan|Gamma|erf|max|min)(?![A-Za-z])")
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

    The operand named first is the one taken away.

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


def is_cjk(char: str) -> bool:
    """Tell whether a character is a CJK ideograph."""
    return bool(_CJK.match(char))


@dataclass
class Ledger:
    """Which spans of the text each part of the reading used, to list what was left unused."""

    text: str
    used: list[tuple[int, int, str]] = field(default_factory=list)

    def claim(self, start: int, end: int, why: str) -> None:
        """Mark text[start:end] as read, for a reason shown in debugging."""
        if end > start:
            self.used.append((start, end, why))

    def is_used(self, position: int) -> bool:
        """Tell whether a character was read."""
        return any(s <= position < e for s, e, _ in self.used)

    def free(self, start: int, end: int) -> bool:
        """Tell whether no character of the span was read yet."""
        return not any(s < end and start < e for s, e, _ in self.used)

    def masked(self) -> str:
        """Return the text with every used character replaced by a space (newlines kept)."""
        chars = list(self.text)
        for start, end, _ in self.used:
            for i in range(start, min(end, len(chars))):
                if chars[i] != "\n":
                    chars[i] = " "
        return "".join(chars)

    def unused_pieces(self, filler: set[str]) -> list[str]:
        """Return the unused stretches that hold more than filler words and punctuation."""
        pieces = []
        for piece in re.split(r"[\n.;,!?]+", self.masked()):
            words = re.findall(r"[A-Za-z_][\w.]*|\d+(?:\.\d+)?|[\u3400-\u9fff]+", piece)
            meaningful = [w for w in words if w.lower() not in filler and not _all_filler_cjk(w, filler)]
            if meaningful:
                pieces.append(" ".join(piece.split()))
        return pieces


def _all_filler_cjk(word: str, filler: set[str]) -> bool:
    """Tell whether a CJK run is made only of filler words (longest match)."""
    if not _CJK.match(word):
        return False
    i = 0
    while i < len(word):
        for size in range(min(6, len(word) - i), 0, -1):
            if word[i:i + size] in filler:
                i += size
                break
        else:
            return False
    return True
