"""Normalize spec text and keep track of which characters a reading has used."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.reader.module_spellings import functional_modules
from agent.reader.prose_forms import collapse_spelled_out_acronyms, plain_latex, put_subtraction_in_order
from agent.reader.shape_names import name_shape_dims

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
    text = functional_modules(name_shape_dims(text))
    text = plain_latex(put_subtraction_in_order(collapse_spelled_out_acronyms(text)))
    # Backquoted code in prose (`x`, ``F.gelu``) reads like the code inside.
    return re.sub(r"`{1,2}([^`\n]*)`{1,2}", r" \1 ", text)


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
