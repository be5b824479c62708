"""Operations, special functions and modifiers the text names must show in the reading's ops."""

from __future__ import annotations

import re

from agent.reader.accounting.ir_view import IRView
from agent.reader.accounting.lexicon import Phrase, phrases
from agent.reader.accounting.words import Unaccounted, Word, formula_spans, inside, negated, text_words


def phrase_checks(text: str, facts: IRView) -> list[Unaccounted]:
    """Every operation, special function and modifier the text names must show in the reading's ops."""
    words = text_words(text)
    spans = formula_spans(text) + _name_spans(text, facts)
    lexicon = phrases()
    by_first: dict[str, list[Phrase]] = {}
    for phrase in lexicon:
        by_first.setdefault(phrase.words[0], []).append(phrase)
    missing: list[Unaccounted] = []
    i = 0
    while i < len(words):
        candidates = by_first.get(words[i].text, []) + by_first.get(_stem(words[i].text), [])
        match = next((p for p in candidates if _matches(text, words, i, p)), None)
        if match is None:
            i += 1
            continue
        stretch = text[words[i].start:words[i + len(match.words) - 1].end]
        ops = match.ops | ({"add"} if match.words == ("sum",) and _sum_of_two(text, words[i].end) else set())
        if not inside(words[i].start, spans) and not negated(words, i) and not facts.has_any(ops) \
                and not any(expansion and expansion <= facts.ops for expansion in match.expansions) \
                and not _names_an_input(stretch, facts) and not _about_the_job(words, i + len(match.words)) \
                and not _the_verb_to_mean(text, words, i):
            missing.append(Unaccounted(stretch, _phrase_reason(match)))
        i += len(match.words)
    return missing


def _name_spans(text: str, facts: IRView) -> list[tuple[int, int]]:
    """Return where the text writes an input's or parameter's name: `running_mean` names no mean."""
    return [(m.start(), m.end()) for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", text) if m.group(0) in facts.names]


def _sum_of_two(text: str, end: int) -> bool:
    """Tell whether `sum` is followed by two operands ("the sum of a and b"): an addition, not a reduction."""
    return bool(re.match(r"\s+of\s+(?:the\s+)?[A-Za-z_]\w*\s+(?:and|plus|with)\s+[A-Za-z_]\w*", text[end:]))


def _matches(text: str, words: list[Word], i: int, phrase: Phrase) -> bool:
    key = phrase.words
    if i + len(key) > len(words):
        return False
    for k, part in enumerate(key):
        word = words[i + k]
        # Specials match whole words only ("logits" is not "logit"); the words of a phrase are joined by spaces
        # or hyphens, not by '/' or ',' ("scale/shift" is two names).
        if word.text != part and (phrase.kind == "special" or _stem(word.text) != part):
            return False
        if k and not re.fullmatch(r"[\s\-_']*", text[words[i + k - 1].end:word.start]):
            return False
    return True


JOB_WORDS = {"round", "rounds", "iteration", "iterations", "optimization", "optimisation", "speedup", "times",
             "tries", "attempts", "steps"}


def _about_the_job(words: list[Word], after: int) -> bool:
    """Tell whether a word is about the job, not the op ("max 3 rounds", "Maximum optimization rounds")."""
    return any(w.text in JOB_WORDS for w in words[after:after + 3])


# "where * means any number of dimensions", "which means the output ...": the verb, not the average.
_VERB_BEFORE = {"which", "this", "that", "it", "i", "where", "what", "also", "here", "simply"}
_VERB_AFTER = {"any", "that", "the", "a", "an", "all", "every", "each", "it", "we", "one", "no", "to", "for"}


def _the_verb_to_mean(text: str, words: list[Word], i: int) -> bool:
    """Tell whether 'means' / 'mean' at words[i] is the verb to mean, not the mean of values."""
    if words[i].text not in {"means", "meaning"}:
        return False
    before = words[i - 1].text if i else ""
    after = words[i + 1].text if i + 1 < len(words) else ""
    symbol_before = text[:words[i].start].rstrip()[-1:] in {"*", ")", "]", "'", '"'}
    return before in _VERB_BEFORE or after in _VERB_AFTER or symbol_before


# Plurals that are a noun of their own, not the op done several times: "the logits" are scores, not logit().
_OWN_NOUNS = {"logits"}


def _stem(word: str) -> str:
    """Drop a plural or third-person 's' ('exponentials', 'sums'), never from short words ('abs', 'bias')."""
    if word in _OWN_NOUNS:
        return word
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def _names_an_input(stretch: str, facts: IRView) -> bool:
    return stretch.replace(" ", "_").lower() in {n.lower() for n in facts.names}


def _phrase_reason(phrase: Phrase) -> str:
    wanted = ", ".join(sorted(phrase.ops)[:4])
    if phrase.kind == "special":
        return f"names a function ({wanted}) that the reading does not compute and the catalogue does not know"
    if phrase.kind == "modifier":
        return f"changes the operation, but the reading has none of {wanted}"
    return f"names an operation ({wanted}) that the reading does not compute"
