"""Find catalogue operators named in the text, and the parameter values written next to them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent.catalogue import Catalogue, Entry, alias_words
from agent.reader.bindings import Binding
from agent.reader.errors import SpecQuestion
from agent.reader.lexer import Token
from agent.reader.text import Ledger

_TRANSPARENT = {"-", "_", "^", "'", "·", "²", "(", ")"}
_WORDY = ("word", "cjk", "number", "conj")
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"


_NEGATED = re.compile(r"\bnon[\s-]?$", re.I)


@dataclass
class Hit:
    """A catalogue operator named in the text, with the parameters found near it."""

    entry: Entry
    start: int
    end: int
    text: str
    values: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _parts(token: Token) -> list[str]:
    if token.kind == "cjk" and len(token.text) > 1 and token.extra.get("filler"):
        return []  # `卷积核` (a kernel tensor) is one word: it does not name `卷积`
    if token.kind == "number":
        return [token.text.rstrip("0").rstrip(".") if "." in token.text else token.text]
    if token.kind == "conj" and token.text.lower() not in ("and", "or"):
        return []
    return list(alias_words(token.text))


def find_hits(tokens: list[Token], catalogue: Catalogue, text: str) -> list[Hit]:
    """Return the operators named in the tokens: longest aliases first, left to right, never overlapping."""
    words: list[tuple[str, int]] = []  # (word, token index); a break is ("", -1)
    for index, token in enumerate(tokens):
        if token.kind == "word" and "_" in token.text.strip("_") and alias_words(token.text) not in catalogue.by_alias:
            words.append(("", -1))  # `running_mean`, `log_q`: one name, not `running mean` or `log`
            continue
        if token.kind in _WORDY:
            parts = _parts(token)
            words.extend((p, index) for p in parts)
            if not parts:
                words.append(("", -1))
        elif not (token.kind == "punct" and token.text in _TRANSPARENT):
            words.append(("", -1))
    hits: list[Hit] = []
    i = 0
    longest = catalogue.longest_alias
    while i < len(words):
        if not words[i][0]:
            i += 1
            continue
        for n in range(min(longest, len(words) - i), 0, -1):
            chunk = words[i:i + n]
            if any(not w for w, _ in chunk):
                continue
            entry = catalogue.by_alias.get(tuple(w for w, _ in chunk))
            if entry is None:
                continue
            first, last = tokens[chunk[0][1]], tokens[chunk[-1][1]]
            if _NEGATED.search(text[max(0, first.start - 5):first.start]):
                continue  # `non-linear`, `nonlinearity`: not the operation named
            hits.append(Hit(entry, first.start, last.end, text[first.start:last.end]))
            i += n
            break
        else:
            i += 1
    return hits


def take_variant(hit: Hit, catalogue: Catalogue, ledger: Ledger, bindings: dict[str, Binding]) -> None:
    """Name the variant of the hit's entry whose own parameter the text sets (`softmax ... temperature 0.7`).

    Without this the value is left over, and the accounting pass can only ask what it is for.
    """
    whole = (0, len(ledger.text))
    for variant in catalogue.variants.get(hit.entry.name, ()):
        own = [p for p in variant.params if hit.entry.param(p.name) is None and p.kind in ("scalar", "int")]
        for param in own:
            names = {param.name.lower(), *(s.lower() for s in param.say)}
            if any(b.name.lower() in names for b in bindings.values()) \
                    or _say_value(ledger, param.say or (param.name,), *whole) is not None:
                hit.entry = variant
                return


def read_values(hit: Hit, window: tuple[int, int], ledger: Ledger, bindings: dict[str, Binding],
                ranges: list[Token]) -> None:
    """Fill hit.values from flags, `name=value` bindings, `say-word value` phrases and ranges near the hit."""
    lo, hi = window
    whole = (0, len(ledger.text))
    for param in hit.entry.params:
        if param.kind == "bool":
            said = _say_bool(ledger, param.say or (param.name,), *whole)
            if said is not None:
                hit.values[param.name] = said[0]
                ledger.claim(*said[1], f"{hit.entry.name} {param.name}")
                continue
        pairs = sorted(((p, v) for v, phrases in param.flags for p in phrases), key=lambda pv: -len(pv[0]))
        for phrase, value in pairs:
            span = _find_phrase(ledger, (phrase,), lo, hi) or _find_phrase(ledger, (phrase,), *whole)
            if span is not None:
                hit.values[param.name] = value
                _claim_outside(ledger, span, hit, param.name)
                break
        if param.name in hit.values:
            continue
        names = {param.name.lower(), *(s.lower() for s in param.say)}
        bound = next((b for b in bindings.values() if b.name.lower() in names), None)
        if bound is not None and len(bound.values) == 1:
            hit.values[param.name] = _typed(bound.values[0], param.kind)
            continue
        if param.kind == "str":
            before = re.search(r"(\w+)[\s-]*$", ledger.masked()[max(0, hit.start - 20):hit.start])
            choices = [str(v) for v, _ in param.flags]
            if before and before.group(1).lower() in choices and param.name == "reduction":
                hit.values[param.name] = before.group(1).lower()  # `mean cross-entropy`, `summed MSE`
                ledger.claim(hit.start - len(before.group(0)), hit.start - len(before.group(0)) + len(before.group(1)),
                             f"{hit.entry.name} {param.name}")
                continue
            choice = _say_choice(ledger, param.say or (param.name,), [str(v) for v, _ in param.flags], *whole)
            if choice is not None:
                hit.values[param.name] = choice[0]
                ledger.claim(*choice[1], f"{hit.entry.name} {param.name}")
            elif param.name == "reduction":
                _ask_if_reduction_unread(ledger, hit, [str(v) for v, _ in param.flags])
            continue
        found = _say_value(ledger, param.say or (param.name,), lo, hi) or _say_value(ledger, param.say or (param.name,),
                                                                                      *whole)
        if found is not None:
            value, span = found
            hit.values[param.name] = _typed(value, param.kind)
            _claim_outside(ledger, span, hit, param.name)
    if hit.entry.range is not None:
        low_name, high_name = hit.entry.range
        token = next((t for t in ranges if lo <= t.start < hi and not t.extra.get("used")), None)
        if token is not None and low_name not in hit.values and high_name not in hit.values:
            low, high = token.value
            hit.values[low_name], hit.values[high_name] = min(low, high), max(low, high)
            token.extra["used"] = True


def _ask_if_reduction_unread(ledger: Ledger, hit: Hit, choices: list[str]) -> None:
    """Ask when the text sets a loss's reduction in words no flag reads: the default mean would misread it."""
    # Only words that set the reduction (`reduction: ...`, `归约方式...`, `不...归约`), not ones that describe
    # how to compute it (`accumulate the reduction in fp32`, `沿类别维做归约`).
    setting = r"(?<![\w])reduction\s*(?:[:=]|(?:same|like|as)(?![\w]))|归约(?:方式|模式)|归约\s*[:=为]|不\S{0,3}归约"
    said = re.search(setting, ledger.masked(), re.I)
    if said is None:
        return
    clauses = [m.end() for m in re.finditer(r"[,，;；。\n()（）]|\.\s", ledger.text)]
    start = max([c for c in clauses if c <= said.start()], default=0)
    end = min([c - 1 for c in clauses if c > said.end()], default=len(ledger.text))
    words = " ".join(ledger.text[start:end].split())
    raise SpecQuestion(f"{hit.text}: which reduction does '{words}' ask for? ({', '.join(choices)})",
                       example="reduction='none' (one loss per element or row), 'sum' or 'mean'")


def _claim_outside(ledger: Ledger, span: tuple[int, int], hit: Hit, what: str) -> None:
    """Claim a parameter's words, never the op's own name (`L2 norm` sets ord=2 and names the op)."""
    start, end = span
    if start < hit.end and hit.start < end:
        if start < hit.start:
            ledger.claim(start, hit.start, f"{hit.entry.name} {what}")
        if end > hit.end:
            ledger.claim(hit.end, end, f"{hit.entry.name} {what}")
        return
    ledger.claim(start, end, f"{hit.entry.name} {what}")


def _typed(value: float, kind: str) -> Any:
    if kind in ("int", "dim", "ints"):
        return int(value)
    if kind == "bool":
        return bool(value)
    return value


def _phrase_pattern(phrase: str) -> str:
    words = [re.escape(w) for w in re.split(r"[\s_-]+", phrase.strip()) if w]
    return r"[\s_-]*".join(words)


def _find_phrase(ledger: Ledger, phrases: tuple[str, ...], lo: int, hi: int) -> tuple[int, int] | None:
    masked = ledger.masked()
    for phrase in sorted(phrases, key=len, reverse=True):
        pattern = _phrase_pattern(phrase)
        if phrase.isascii() and phrase[:1].isalnum():
            pattern = rf"(?<![\w]){pattern}"
        if phrase.isascii() and phrase[-1:].isalnum():
            pattern = rf"{pattern}(?![\w])"
        for m in re.finditer(pattern, masked[lo:hi], re.I):
            return lo + m.start(), lo + m.end()
    return None


def _say_bool(ledger: Ledger, says: tuple[str, ...], lo: int, hi: int) -> tuple[bool, tuple[int, int]] | None:
    """Find `causal=False`, `is_causal: true`, `keepdim = True` in the window."""
    masked = ledger.masked()
    for say in sorted(says, key=len, reverse=True):
        pattern = rf"(?<![\w]){_phrase_pattern(say)}\s*(?:=|:|为)\s*(?P<value>true|false)(?![\w])"
        m = re.search(pattern, masked[lo:hi], re.I)
        if m:
            return m.group("value").lower() == "true", (lo + m.start(), lo + m.end())
    return None


# Chinese words for the values of a choice (`归约方式：求和` is reduction='sum').
_CHOICE_WORDS = {"求和": "sum", "取和": "sum", "求均值": "mean", "取均值": "mean", "求平均": "mean", "平均": "mean",
                 "均值": "mean", "无": "none", "不归约": "none", "逐元素": "none"}


def _say_choice(ledger: Ledger, says: tuple[str, ...], choices: list[str], lo: int,
                hi: int) -> tuple[str, tuple[int, int]] | None:
    """Find `reduction='sum'`, `reduction 取 sum`, `reduction: none`, `归约方式：求和` in the window."""
    masked = ledger.masked()
    words = {c.lower(): c for c in choices if c} | {w: v for w, v in _CHOICE_WORDS.items() if v in choices}
    if not words:  # a parameter of free values (`approximate` with no flags listed): nothing to choose from
        return None
    options = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    for say in sorted(says, key=len, reverse=True):
        bounded = rf"(?<![\w]){_phrase_pattern(say)}" if say.isascii() else _phrase_pattern(say)
        pattern = rf"{bounded}\s*(?:=|:|取|为|是|is|of)?\s*['\"]?(?P<value>{options})['\"]?(?![\w])"
        m = re.search(pattern, masked[lo:hi], re.I)
        if m:
            return words[m.group("value").lower()], (lo + m.start(), lo + m.end())
    return None


def _say_value(ledger: Ledger, says: tuple[str, ...], lo: int, hi: int) -> tuple[float, tuple[int, int]] | None:
    """Find `negative slope 0.2`, `slope=0.2`, `斜率为 0.2`, `eps of 1e-6` in the window."""
    masked = ledger.masked()
    for say in sorted(says, key=len, reverse=True):
        word = _phrase_pattern(say)
        bounded = rf"(?<![\w]){word}" if say.isascii() else word
        pattern = rf"{bounded}\s*(?:=|:|of|is|为|取|设为|是|at|equal\s+to|equals)?\s*(?P<value>{_NUM})(?![\w.])"
        m = re.search(pattern, masked[lo:hi], re.I)
        if m:
            return float(m.group("value")), (lo + m.start(), lo + m.end())
        # `3 次方`, `8 组`, `8 groups`: the number may come first
        m = re.search(rf"(?<![\w.])(?P<value>{_NUM})\s*{word}" + (r"(?![\w])" if say.isascii() else ""), masked[lo:hi],
                      re.I)
        if m:
            return float(m.group("value")), (lo + m.start(), lo + m.end())
    return None
