"""Bind input names to the shapes and dtypes written next to them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.catalogue import Catalogue
from agent.reader.lexer import Shape, Token
from agent.reader.vocabulary import CJK_FILLERS, FILLERS, NAMES_TOO, NOT_NAMES

_ARTICLES = {"a", "an"}
_NOUNS = {"matrix", "matrices", "tensor", "tensors", "array", "arrays", "vector", "vectors", "input", "inputs",
          "张量", "矩阵", "向量", "数组"}
_SHARED = {"both", "each", "all", "均为", "都是", "都为", "分别为", "均", "都", "两者", "二者"}
_SAME_DTYPE = re.compile(
    r"same\s+(?:shape\s*(?:/|and|&|,)\s*)?(?:dtype|data\s*type|type)(?:\s*(?:/|and|&|,)\s*shape)?\s+as\s+([A-Za-z_]\w*)|"
    r"(?:数据类型|dtype|类型)\s*(?:与|同|和|跟)\s*([A-Za-z_]\w*)\s*(?:相同|一致)|same\s+(?:dtype|data\s*type|type)\s+as\s+"
    r"([A-Za-z_]\w*)|(?:dtype|data\s*type)\s*(?::|=|is)?\s*(?:the\s+)?same\s+as\s+([A-Za-z_]\w*)", re.I)
_SAME_SHAPE = re.compile(
    r"same\s+(?:dtype\s*(?:/|and|&|,)\s*)?shape(?:\s*(?:/|and|&|,)\s*(?:dtype|type))?\s+as\s+([A-Za-z_]\w*)|"
    r"形状(?:和数据类型|与数据类型)?\s*(?:与|同|和|跟)\s*([A-Za-z_]\w*)\s*(?:相同|一致)|same\s+shape\s+as\s+([A-Za-z_]\w*)|shape\s*(?::|=|is)?\s*"
    r"(?:the\s+)?same\s+as\s+([A-Za-z_]\w*)"
    r"|(?:与|同|和|跟)\s*([A-Za-z_]\w*)\s*(?:形状)?\s*(?:相同|一致)(?:的)?形状", re.I)


@dataclass
class Decl:
    """Names that share the shapes and dtypes written next to them."""

    names: list[str]
    shapes: list[Shape]
    dtypes: list[str]
    start: int
    dtype_from: str | None = None
    shape_from: str | None = None
    shared: bool = False  # `both [..]`, `均为 [..]`: the shape of every name the text lists with it
    positions: list[int] = field(default_factory=list)  # where the names are written
    notes: list[str] = field(default_factory=list)


def is_filler(token: Token) -> bool:
    """Tell whether a token carries no meaning of its own around a declaration."""
    if token.kind == "word":
        return token.text.lower() in FILLERS and token.text.lower() not in _ARTICLES and not token.extra.get("hit")
    if token.kind == "cjk":
        return token.text in CJK_FILLERS
    return token.kind == "punct" and token.text in (":", "-", "=", "(", ")", "'", '"')


def is_name(tokens: list[Token], i: int, catalogue: Catalogue, extra_banned: set[str]) -> bool:
    """Tell whether tokens[i] names an input: an identifier that is no filler, operator, dtype or article."""
    token = tokens[i]
    if token.kind != "word" or "." in token.text:
        return False
    low = token.text.lower()
    shaped = _shaped_next(tokens, i)
    if low in NAMES_TOO and shaped:
        return True
    if token.extra.get("hit") and not shaped and low not in NAMES_TOO:
        return False  # a word of an operator's name (`cross entropy, logits [..]`)
    if low in _ARTICLES:
        return token.text == "A" and not _sentence_start(tokens, i) or _article_is_name(tokens, i)
    if low in NAMES_TOO and not token.extra.get("filler-only"):
        return low not in extra_banned
    if low in NOT_NAMES or low in extra_banned or (low,) in catalogue.by_alias and not shaped:
        return False
    return not (token.text[0].isupper() and len(token.text) > 3 and not _shaped_next(tokens, i))


def _shaped_next(tokens: list[Token], i: int) -> bool:
    """Tell whether a shape follows the token, after at most `:`, dtypes and fillers (`scale 形状 [32]`)."""
    j = i + 1
    while j < len(tokens) and j <= i + 4 and (tokens[j].text in (":", "=") or tokens[j].kind == "dtype" or
                                              tokens[j].kind in ("word", "cjk") and tokens[j].text.lower() in (
                                                  "shape", "of", "形状", "形状为", "的形状为", "is", "are", "with",
                                                  "sized", "是", "为", "的")):
        j += 1
    return j < len(tokens) and tokens[j].kind == "shape"


def _sentence_start(tokens: list[Token], i: int) -> bool:
    return i == 0 or tokens[i - 1].kind == "sep" or tokens[i - 1].text == ":"


def _article_is_name(tokens: list[Token], i: int) -> bool:
    """`a [128, 64] and b [64, 32]` names a; `x, a 128x256 float32 matrix` is an article."""
    j = i + 1
    while j < len(tokens) and tokens[j].text in (":", "="):
        j += 1
    if tokens[i].extra.get("formula"):
        return True
    if j >= len(tokens) or tokens[j].kind != "shape":
        return j < len(tokens) and (tokens[j].kind == "conj" or tokens[j].text == ",")  # `a and b`, `a, b, c`
    k = j + 1
    while k < len(tokens) and (tokens[k].kind == "dtype" or is_filler(tokens[k]) and tokens[k].text not in _NOUNS):
        k += 1
    return not (k < len(tokens) and tokens[k].text.lower() in _NOUNS)


def associate(tokens: list[Token], catalogue: Catalogue, banned: set[str]) -> tuple[list[Decl], list[str]]:
    """Attach each shape (or list of shapes) to the names and dtypes around it; return the loose dtypes too."""
    decls: list[Decl] = []
    used: set[int] = set()
    direct = {tokens[j].text for j in range(len(tokens)) if tokens[j].kind == "word" and _shaped_next(tokens, j)}
    banned = banned | set()
    i = 0
    while i < len(tokens):
        if tokens[i].kind != "shape":
            i += 1
            continue
        group = [i]
        k = i + 1
        while k + 1 < len(tokens) and (tokens[k].kind == "conj" or tokens[k].text in (",", "或")) \
                and tokens[k + 1].kind == "shape":
            group.append(k + 1)
            k += 2
        names, before = _walk_back(tokens, i, catalogue, banned, direct)
        after_names, after = _walk_forward(tokens, k, catalogue, banned, want_names=not names)
        used.update(before + after + group)
        dtypes = [tokens[j].value for j in sorted(before + after)]
        shared = any(tokens[j].text.lower() in _SHARED for j in range(_clause_start(tokens, i), i))
        if shared and names and tokens[_index_of(tokens, names[0], i)].extra.get("formula"):
            formula = tokens[_index_of(tokens, names[0], i)].extra["formula"]
            names = list(dict.fromkeys(t.text for t in tokens if t.extra.get("formula") == formula))
        chosen = list(dict.fromkeys(names or after_names))
        positions = [_nearest(tokens, name, i) for name in chosen]
        decls.append(Decl(chosen, [tokens[j].value for j in group], list(dict.fromkeys(dtypes)), tokens[i].start,
                          shared=shared, positions=positions))
        i = k
    loose = [t.value for j, t in enumerate(tokens) if t.kind == "dtype" and j not in used]
    return decls, list(dict.fromkeys(loose))


def _nearest(tokens: list[Token], name: str, i: int) -> int:
    """Return where the name closest to the shape at i is written (before it, else after it)."""
    before = [t.start for t in tokens[:i] if t.kind == "word" and t.text == name]
    after = [t.start for t in tokens[i:] if t.kind == "word" and t.text == name]
    return before[-1] if before else after[0] if after else -1


def _listable(name: str) -> bool:
    """Tell whether a word joined only by a comma is a name in a list (`a, b, c [..]`), not prose (`traffic, x`)."""
    return len(name) <= 4 or bool(re.search(r"[_\d]", name)) or name.lower() in NAMES_TOO


def _clause_start(tokens: list[Token], i: int) -> int:
    """Return where the clause holding tokens[i] starts (after the last separator, at most 8 tokens back)."""
    j = i - 1
    while j >= max(0, i - 8) and tokens[j].kind != "sep" and tokens[j].kind != "shape":
        j -= 1
    return j + 1


def _short_name(token: Token) -> bool:
    """Tell whether a token is a one- or two-letter name in a list such as `q k v [..]` or `a b c all [..]`."""
    low = token.text.lower()
    return token.kind == "word" and len(token.text) <= 2 and (low not in NOT_NAMES or low == "a") and \
        not token.extra.get("hit") and not token.extra.get("formula")


# Plural role words written before a name in a list: `the keys k and values v [..]`.
_ROLE_WORDS = {"queries", "query", "keys", "key", "values", "weights", "biases", "inputs", "tensors"}
_INLINE_SAME_SHAPE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*(?:is\s+|has\s+|with\s+|of\s+)?(?:the\s+)?"
                                r"same\s+shape\s+as\s+([A-Za-z_]\w*)", re.I)
_COPULAS = {"是", "为", "is", "are", ":"}


def _copula_before(tokens: list[Token], j: int, catalogue: Catalogue, banned: set[str]) -> int | None:
    """Return the index of NAME in `NAME is <a few descriptive words> [shape]`, if the words end at j."""
    for k in range(j, max(-1, j - 4), -1):
        token = tokens[k]
        if token.kind in ("sep", "shape") or token.text in (",", ";"):
            return None
        before = tokens[k - 1] if k >= 1 else None
        if token.text == ":" and k + 1 == j and is_name(tokens, j, catalogue, banned):
            return None  # `then add bias: x [64, 64]`: a label, then a name with its own shape
        if token.text.lower() in _COPULAS and before is not None and (
                is_name(tokens, k - 1, catalogue, banned)
                or before.kind == "word" and before.text.lower() in NAMES_TOO):
            return k - 1
    return None


def preceding_names(tokens: list[Token], before: int, catalogue: Catalogue) -> list[str]:
    """Return the nearest list of two or more names before a position (`pred 与 target ... 两者均为 [..]`)."""
    for j in range(len(tokens) - 1, -1, -1):
        if tokens[j].start >= before or tokens[j].kind != "word" or not is_name(tokens, j, catalogue, set()):
            continue
        names = [tokens[j].text]
        k = j
        while k >= 2 and tokens[k - 1].kind == "conj" and is_name(tokens, k - 2, catalogue, set()):
            names.insert(0, tokens[k - 2].text)
            k -= 2
        if len(names) >= 2:
            return names
    return []


def _index_of(tokens: list[Token], name: str, before: int) -> int:
    return max(j for j in range(before) if tokens[j].text == name)


def _walk_back(tokens: list[Token], i: int, catalogue: Catalogue, banned: set[str],
               direct: set[str]) -> tuple[list[str], list[int]]:
    """Collect the names (joined by and/和/,) and dtype tokens written before tokens[i]."""
    names: list[str] = []
    dtypes: list[int] = []
    j = i - 1
    crossed_comma = False
    while j >= 0:
        token = tokens[j]
        if token.kind == "word" and token.text.lower() in NAMES_TOO and _shaped_next(tokens, j):
            break  # `input [256, 10]`, `target [256]`: a filler word used as a name
        if token.kind == "dtype" or is_filler(token) or token.kind == "word" and token.text.lower() in _SHARED:
            dtypes += [j] if token.kind == "dtype" else []
            j -= 1
            continue
        if token.kind == "cjk" and token.text in _SHARED:
            j -= 1
            continue
        if token.kind == "word" and token.text.lower() in _ARTICLES and not is_name(tokens, j, catalogue, banned):
            j -= 1
            continue
        if token.text == "," and not crossed_comma and j >= 1:
            crossed_comma = True  # `x 为 float16，形状 [..]`, `x, a 128x256 matrix`, `a and b, both [..]`
            j -= 1
            continue
        copula = _copula_before(tokens, j, catalogue, banned)
        if copula is not None:
            return [tokens[copula].text], dtypes  # `input 是 log 概率 [128, 512]`: NAME is <a description> [shape]
        break
    if j < 0 or not is_name(tokens, j, catalogue, banned):
        return [], [] if crossed_comma else dtypes
    names.insert(0, tokens[j].text)
    # A list `a, b and c [..]` (or `q k v [..]`) joins names that have no shape of their own elsewhere.
    while j >= 1:
        if tokens[j].extra.get("formula"):
            break  # a name inside a formula is bound only by a shape written right after it
        k = j  # skip role words and articles: `weight w and bias b`, `an input x and a target y`
        while k >= 2 and k >= j - 2 and tokens[k - 1].kind == "word" and (
                tokens[k - 1].text.lower() in NAMES_TOO | _ROLE_WORDS and not _short_name(tokens[k - 1])
                or tokens[k - 1].text.lower() in _ARTICLES and tokens[k - 2].kind == "conj"):
            k -= 1
        joiner = tokens[k - 1] if k >= 1 else None
        if k >= 2 and joiner is not None and (joiner.kind == "conj" or joiner.text == ",") \
                and is_name(tokens, k - 2, catalogue, banned) and tokens[k - 2].text not in names \
                and tokens[k - 2].text not in direct and not tokens[k - 2].extra.get("formula") \
                and (joiner.kind == "conj" or _listable(tokens[k - 2].text)):
            names.insert(0, tokens[k - 2].text)
            j = k - 2
        elif len(tokens[j].text) <= 2 and _short_name(tokens[j - 1]) and tokens[j - 1].text not in names \
                and tokens[j - 1].text not in direct:
            names.insert(0, tokens[j - 1].text)
            j -= 1
        else:
            break
    k = j - 1
    while k >= 0:
        listed = dtypes and k >= 1 and tokens[k - 1].kind == "dtype" and (
            tokens[k].kind == "conj" or tokens[k].text in (",", "、"))  # `float32, float16 and bfloat16 tensors x`
        if tokens[k].kind == "dtype":
            dtypes.append(k)
        elif not (is_filler(tokens[k]) or listed):
            break
        k -= 1
    return names, dtypes


def _walk_forward(tokens: list[Token], k: int, catalogue: Catalogue, banned: set[str],
                  want_names: bool) -> tuple[list[str], list[int]]:
    """Collect dtypes (joined by / or) and, when asked, the name written after the shape (`[..] 的 fp16 张量 x`)."""
    names: list[str] = []
    dtypes: list[int] = []
    while k < len(tokens):
        token = tokens[k]
        if token.kind == "dtype":
            dtypes.append(k)
        elif token.kind == "conj" and dtypes:
            pass
        elif is_filler(token) or token.kind == "cjk" and token.text in _SHARED:
            pass
        elif want_names and not names and is_name(tokens, k, catalogue, banned):
            names.append(token.text)
        elif token.text == "," and dtypes and k + 1 < len(tokens) and tokens[k + 1].kind == "dtype":
            pass
        else:
            break
        k += 1
    return names, dtypes


def same_as(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """Return {input: source} for `same dtype as x` and `形状与 x 相同` on each input's own line."""
    shapes = _same(text, _SAME_SHAPE)
    for m in _INLINE_SAME_SHAPE.finditer(text):  # `…, residual same shape as x`, `mask has the same shape as x`
        owner, source = m.group(1), m.group(2)
        if owner != source and owner.lower() not in FILLERS and owner not in shapes:
            shapes[owner] = source
    owners = [m for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\s*:", text)]
    for previous, current in zip(owners, owners[1:], strict=False):  # `x: fp32 [512, 1024], mask: bool, same shape`
        clause = text[current.end():].split("\n")[0].split(";")[0]
        clause = clause[:next((m.start() for m in owners if m.start() > current.end()), len(text)) - current.end()]
        if re.search(r"\bsame\s+shape\b(?!\s+as)|形状相同|同形状", clause) and current.group(1) not in shapes:
            shapes[current.group(1)] = previous.group(1)
    return _same(text, _SAME_DTYPE), shapes


def _same(text: str, pattern: re.Pattern[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.split("\n"):
        m = pattern.search(line)
        if not m:
            continue
        source = next(g for g in m.groups() if g)
        owner = re.match(r"\s*(?:[-*•+]|\d+[.)])?\s*([A-Za-z_]\w*)\s*(?::|,|\(|\s-\s|：)", line)
        if owner and owner.group(1) != source:
            found[owner.group(1)] = source
    return found
