"""The text as the accounting pass sees it: words with their places, formulas, and what a question quotes."""

from __future__ import annotations

import re
from dataclasses import dataclass

NUMBER = r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"
# Words before a phrase that say it is not wanted ("not N-1", "without bias", "instead of gelu").
NEGATIONS = {"not", "no", "without", "instead", "rather", "except", "non", "never", "nor"}


@dataclass(frozen=True)
class Unaccounted:
    """Words of the text the reading does not reflect, and why that matters."""

    quote: str
    reason: str

    def render(self) -> str:
        """Return the line a question shows."""
        return f"{self.quote!r}: {self.reason}"


@dataclass(frozen=True)
class Word:
    """A word of the text with its place."""

    text: str
    start: int
    end: int


def text_words(text: str) -> list[Word]:
    """Split text into lower-case words with their places ('-' and '_' split words, as in the lexicon)."""
    return [Word(m.group(0).lower(), m.start(), m.end())
            for m in re.finditer(r"[A-Za-z][A-Za-z0-9]*|[0-9]+[A-Za-z]+[0-9]*", text)]


def formula_spans(text: str) -> list[tuple[int, int]]:
    """Return the stretches written as formulas or calls: the reader parses them exactly, so their words count."""
    spans = []
    for m in re.finditer(r"`[^`\n]+`", text):
        spans.append((m.start(), m.end()))
    for m in re.finditer(r"[A-Za-z_][\w.]*\s*\(", text):  # a call and its argument list
        depth, end = 0, m.end() - 1
        for end in range(m.end() - 1, min(len(text), m.end() + 400)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        spans.append((m.start(), end + 1))
    # The right side of `name = expression` with an operator in it (`out = x * sigmoid(1.702 * x)`).
    for m in re.finditer(r"(?<![=<>!])=(?!=)([^\n;,]*?[-+*/^@|][^\n;]*?)(?=$|\n|;|\.\s|,\s+[A-Za-z]+\s*[\[:(])", text):
        spans.append((m.start(1), m.end(1)))
    return spans


def inside(position: int, spans: list[tuple[int, int]]) -> bool:
    """Tell whether a position lies in one of the spans."""
    return any(s <= position < e for s, e in spans)


def negated(words: list[Word], index: int) -> bool:
    """Tell whether one of the two words before a phrase negates it."""
    return any(w.text in NEGATIONS for w in words[max(0, index - 2):index])
