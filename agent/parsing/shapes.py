"""Find shapes and dtypes in text and the input names they belong to."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from agent.spec import SUPPORTED_DTYPES, SpecError

DTYPE_WORDS: dict[str, str] = {
    "float32": "float32", "fp32": "float32", "f32": "float32", "float": "float32",
    "float16": "float16", "fp16": "float16", "f16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
}
_DTYPE_ALTERNATIVES = "|".join(sorted(DTYPE_WORDS, key=len, reverse=True))
DTYPE_PATTERN = rf"(?<![\w.])(?:torch\.)?(?:{_DTYPE_ALTERNATIVES})(?!\w)"
_UNSUPPORTED_DTYPE = re.compile(
    r"(?<![\w.])(?:torch\.(?:double|long|int|short|bool|uint8|int\d+|float64|complex\d+)"
    r"|float64|fp64|f64|int4|int8|int16|int32|int64|uint8|uint16|uint32|uint64|fp8|float8\w*|e4m3\w*"
    r"|e5m2\w*|complex64|complex128|tf32|double[\s-]precision)(?!\w)",
    re.I | re.A,
)
_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_BIND = re.compile(
    rf"(?<![\w.])(?P<name>[A-Za-z_]\w*)\s*(?P<conn>=|:|\bin\b|∈|取值为|取值|取|为|\bis\b|\bof\b)\s*"
    rf"(?P<value>\{{[^{{}}]*\}}|\[[^\[\]]*\]|{_NUMBER}(?:\s*(?:/|\bor\b|或|、)\s*{_NUMBER})*)",
    re.A,
)
_TOKEN = re.compile(
    r"(?P<bracket>\[\s*\w+(?:\s*,\s*\w+)*\s*,?\s*\])"
    r"|(?P<paren>\(\s*\w+(?:\s*,\s*\w+)*\s*,?\s*\))"
    r"|(?P<times>(?<![\w.])\d+(?:\s*[x×X]\s*\d+)+(?![\w.]))"
    r"|(?P<word>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
    r"|(?P<number>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?[A-Za-z]*)"
    r"|(?P<filler>形状为|形状是|形状|尺寸为|尺寸|大小为|大小|维度|数据类型为|数据类型|类型为|类型|张量|均为|都是|都为|"
    r"分别为|为|是|的)"
    r"|(?P<conj>以及|和|与|及|或|、|&|/)"
    r"|(?P<comma>,)|(?P<colon>:)|(?P<sep>[;\n]|\.(?=\s|$))|(?P<space>\s+)|(?P<other>.)",
    re.A,
)
FILLERS = {
    "of", "shape", "shapes", "shaped", "with", "tensor", "tensors", "torch.tensor", "input", "inputs", "the",
    "is", "are", "has", "have", "size", "sized", "sizes", "dims", "dim", "dimension", "dimensions", "nchw",
    "nhwc", "nd", "dtype", "dtypes", "type", "both", "each", "all", "layout", "contiguous", "as",
    "respectively", "data",
}
_CONJ_WORDS = {"and", "or"}
STOP_WORDS = {
    "on", "to", "for", "over", "in", "at", "by", "from", "into", "onto", "then", "apply", "applies",
    "applied",
    "compute", "computes", "computed", "calculate", "fused", "fuse", "fusion", "op", "operator", "kernel",
    "elementwise", "element", "wise", "pointwise", "activation", "function", "out", "output", "result",
    "returns", "where", "which", "that", "this", "these", "it", "its", "use", "using", "along", "across",
    "per", "channel", "channels", "last", "first", "same", "between", "value", "values", "do", "does",
    "approximation", "approx", "slope", "negative", "let", "given", "write", "make", "take", "takes",
    "broadcast", "broadcasting", "followed", "after", "before", "plus", "minus", "times", "x_",
    "task", "name", "gpu", "cuda", "npu", "cpu", "ascend", "nvidia", "triton", "torch", "pytorch", "f",
}


def dtype_name(word: str) -> str | None:
    """Return the canonical dtype for a dtype word (fp16 -> float16), or None."""
    return DTYPE_WORDS.get(word.lower().removeprefix("torch."))


def check_dtypes(text: str) -> None:
    """Raise SpecError when the text asks for a dtype outside SUPPORTED_DTYPES."""
    match = _UNSUPPORTED_DTYPE.search(text)
    if match:
        raise SpecError(
            f"dtype {match.group(0)!r} is not supported; the generator handles {', '.join(SUPPORTED_DTYPES)} "
            "(also written fp32/f32/float, fp16/half, bf16)"
        )


def bindings(text: str) -> tuple[dict[str, list[float]], list[tuple[int, int]]]:
    """Read `batch 取 8 / 32`, `tokens in {2048, 8192}`, `alpha = 0.5` into values, with list spans."""
    found: dict[str, list[float]] = {}
    spans: list[tuple[int, int]] = []
    for m in _BIND.finditer(text):
        value = m["value"]
        if value.startswith("[") and m["conn"] not in ("in", "∈", "取", "取值", "取值为"):
            continue
        numbers = [float(v) for v in re.findall(_NUMBER, value)]
        if not numbers or m["name"] in found:
            continue
        found[m["name"]] = numbers
        if len(numbers) > 1 or value[0] in "[{":
            spans.append((m.start("value"), m.end("value")))
    return found, spans


@dataclass
class Token:
    """One piece of text: a shape, dtype, word, joiner or separator."""

    kind: str
    text: str
    start: int
    shapes: list[list[int]] = field(default_factory=list)
    unbound: list[str] = field(default_factory=list)


@dataclass
class Decl:
    """Names that share the shapes and dtypes written next to them."""

    names: list[str]
    shapes: list[list[int]]
    dtypes: list[str]
    unbound: list[str] = field(default_factory=list)
    dtype_from: str | None = None
    shape_from: str | None = None


def _shape_token(kind: str, raw: str, start: int, text: str, binds: dict[str, list[float]]) -> Token:
    """Classify a bracket, tuple or AxB group as a shape (expanding symbols) or as other text."""
    items = [i for i in re.split(r"\s*[,x×X]\s*" if kind == "times" else r"\s*,\s*", raw.strip("[]() ")) if i]
    ints = [i for i in items if i.isdigit()]
    symbols = [i for i in items if not i.isdigit()]
    glued = start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_")
    if any(s[0].isdigit() for s in symbols) or any(int(i) <= 0 for i in ints):
        return Token("other", raw, start)
    if kind == "paren" and (glued or not ints or (len(items) < 2 and not raw.rstrip(") ").endswith(","))):
        return Token("other", raw, start)
    unbound = [s for s in symbols if s not in binds]
    if kind == "bracket" and not ints and (glued or (len(items) == 1 and unbound)):
        return Token("index", raw, start)
    if unbound:
        return Token("shape", raw, start, unbound=unbound)
    choices = [[int(v) for v in binds[i]] if i in binds else [int(i)] for i in items]
    if any(v <= 0 for c in choices for v in c):
        return Token("other", raw, start)
    return Token("shape", raw, start, shapes=[list(p) for p in itertools.product(*choices)])


def tokenize(text: str, binds: dict[str, list[float]]) -> list[Token]:
    """Split text into tokens, recognising shapes, dtypes, names and joiners."""
    tokens: list[Token] = []
    for m in _TOKEN.finditer(text):
        kind, raw = m.lastgroup or "other", m.group(0)
        if kind == "space":
            continue
        if kind in ("bracket", "paren", "times"):
            tokens.append(_shape_token(kind, raw, m.start(), text, binds))
        elif kind == "word":
            low = raw.lower()
            if dtype_name(raw):
                kind = "dtype"
            elif low in _CONJ_WORDS:
                kind = "conj"
            elif low in FILLERS:
                kind = "filler"
            tokens.append(Token(kind, raw, m.start()))
        else:
            tokens.append(Token("filler" if kind == "colon" else kind, raw, m.start()))
    return tokens


_ARTICLES = {"a", "an"}
_SHARED = {"both", "each", "all", "均为", "都是", "都为", "分别为"}
_OF_SHAPE = {"of", "shape", ":", "with", "形状", "形状为"}


def _is_name(token: Token, banned: set[str], after: Token | None = None) -> bool:
    """Tell whether token names an input; `a`/`an` only count when a shape or `of shape` follows."""
    if token.kind != "word" or "." in token.text or token.text.lower() in banned:
        return False
    if token.text.lower() in _ARTICLES:
        joined = after is not None and after.kind in ("shape", "conj", "comma")
        return joined or (after is not None and after.text.lower() in _OF_SHAPE)
    return True


def _walk_back(tokens: list[Token], i: int, banned: set[str]) -> tuple[list[str], list[int]]:
    """Collect the names (joined by and/和/,) and dtype indices written before tokens[i]."""
    names: list[str] = []
    dtypes: list[int] = []
    j = i - 1
    shared = False
    while j >= 0 and (tokens[j].kind in ("filler", "dtype") or (shared and tokens[j].kind == "comma")):
        dtypes += [j] if tokens[j].kind == "dtype" else []
        shared = shared or tokens[j].text.lower() in _SHARED
        j -= 1
    crossed = False
    while j >= 0 and _is_name(tokens[j], banned, tokens[j + 1]):
        names.insert(0, tokens[j].text)
        joiner = tokens[j - 1] if j >= 1 else None
        if joiner and (joiner.kind == "conj" or (joiner.kind == "comma" and crossed)) and j >= 2 \
                and _is_name(tokens[j - 2], banned, joiner) and tokens[j - 2].text not in names:
            crossed = crossed or joiner.kind == "conj"
            j -= 2
            continue
        j -= 1
        break
    if names:
        while j >= 0 and tokens[j].kind in ("filler", "dtype"):
            dtypes += [j] if tokens[j].kind == "dtype" else []
            j -= 1
    return names, dtypes


def _walk_forward(
    tokens: list[Token], k: int, banned: set[str], want_names: bool
) -> tuple[list[str], list[int]]:
    """Collect dtypes (joined by / or) and, when asked, names written after tokens[k - 1]."""
    names: list[str] = []
    dtypes: list[int] = []
    while k < len(tokens):
        tok = tokens[k]
        if tok.kind == "dtype":
            dtypes.append(k)
        elif tok.kind == "conj" and (dtypes or names):
            pass
        elif tok.kind == "filler":
            pass
        elif want_names and _is_name(tok, banned, tokens[k + 1] if k + 1 < len(tokens) else None) \
                and (not names or tokens[k - 1].kind == "conj"):
            names.append(tok.text)
        else:
            break
        k += 1
    return names, dtypes


def associate(tokens: list[Token], banned: set[str]) -> tuple[list[Decl], list[str]]:
    """Attach each shape group to the names and dtypes around it; return the declarations and loose dtypes."""
    decls: list[Decl] = []
    used: set[int] = set()
    i = 0
    while i < len(tokens):
        if tokens[i].kind != "shape":
            i += 1
            continue
        group = [tokens[i]]
        k = i + 1
        while k + 1 < len(tokens) and tokens[k].kind in ("conj", "comma") and tokens[k + 1].kind == "shape":
            group.append(tokens[k + 1])
            k += 2
        names, before = _walk_back(tokens, i, banned)
        after_names, after = _walk_forward(tokens, k, banned, want_names=not names)
        used.update(before + after)
        dtypes = [dtype_name(tokens[j].text) or "" for j in sorted(before + after)]
        decls.append(Decl(
            names=list(dict.fromkeys(names or after_names)),
            shapes=[s for t in group for s in t.shapes],
            dtypes=list(dict.fromkeys(dtypes)),
            unbound=[u for t in group for u in t.unbound],
        ))
        i = k
    loose = [dtype_name(t.text) or "" for j, t in enumerate(tokens) if t.kind == "dtype" and j not in used]
    return decls, list(dict.fromkeys(loose))


_SAME_DTYPE = re.compile(
    r"(?:数据类型|dtype|类型)\s*(?:与|同|和|跟)\s*(\w+)\s*(?:相同|一致)|same\s+(?:dtype|data\s*type|type)\s+as\s+(\w+)"
    r"|(?:dtype|data\s*type)\s*(?::|=|is)?\s*(?:the\s+)?same\s+as\s+(\w+)",
    re.I | re.A,
)
_SAME_SHAPE = re.compile(
    r"形状\s*(?:与|同|和|跟)\s*(\w+)\s*(?:相同|一致)|same\s+shape\s+as\s+(\w+)|shape\s*(?::|=|is)?\s*(?:the\s+)?"
    r"same\s+as\s+(\w+)",
    re.I | re.A,
)


def bullet_decl(name: str, rest: str, binds: dict[str, list[float]]) -> Decl:
    """Read one `name: ...` input line: every shape and dtype on it belongs to name."""
    _, spans = bindings(rest)
    chars = list(rest)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    tokens = tokenize("".join(chars), binds)
    same_dtype = _SAME_DTYPE.search(rest)
    same_shape = _SAME_SHAPE.search(rest)
    dtypes = [dtype_name(t.text) or "" for t in tokens if t.kind == "dtype"]
    return Decl(
        names=[name],
        shapes=[s for t in tokens if t.kind == "shape" for s in t.shapes],
        dtypes=list(dict.fromkeys(dtypes)),
        unbound=[u for t in tokens if t.kind == "shape" for u in t.unbound],
        dtype_from=next((g for g in same_dtype.groups() if g), None) if same_dtype else None,
        shape_from=next((g for g in same_shape.groups() if g), None) if same_shape else None,
    )


def shape_spans(text: str, binds: dict[str, list[float]]) -> list[tuple[int, int]]:
    """List the spans of shapes and dtype words, to hide them when scanning for a formula."""
    spans = [(t.start, t.start + len(t.text)) for t in tokenize(text, binds) if t.kind in ("shape", "dtype")]
    return spans
