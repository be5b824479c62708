"""Find everything a spec text says, in a fixed order, each pass claiming what it read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.catalogue import Catalogue
from agent.ir.expr import names
from agent.reader import fields as fl
from agent.reader import taskbook
from agent.reader.bindings import Binding, find_bindings, inline_bindings
from agent.reader.declarations import Decl, associate, preceding_names, same_as
from agent.reader.dims import DimPhrase, find_dims, find_keepdim
from agent.reader.formulas import Formula, find_formulas, formula_view, unknown_calls
from agent.reader.lexer import Token, find_ranges, find_shapes, tokenize
from agent.reader.phrases import Hit, find_hits, read_values, take_variant
from agent.reader.text import Ledger
from agent.reader.vocabulary import CJK_FILLERS, SENTENCE_END, dtype_of

_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)])?\s*(?P<name>[A-Za-z_]\w*)\s*(?::|\(|\s-\s|,)(?P<rest>.*)$", re.A)
_CUE_CHANNEL = re.compile(r"per[\s_-]*channel|channel[\s_-]*wise|逐通道|按通道|每个通道|每通道|each\s+channel", re.I)
_CUE_ROW = re.compile(r"per[\s_-]*row|row[\s_-]*wise|each\s+row|every\s+row|每一?行|逐行|按行|its\s+own\s+factor", re.I)
# Reasons people give that name operations they do not ask for.
_ASIDES = re.compile(r"\b(?:to\s+avoid|avoiding|against|for)\s+(?:a\s+)?division\s+by\s+zero\b"
                     r"|\bfor\s+numerical\s+stability\b|"
                     r"\bto\s+avoid\s+overflow\b|避免除零|防止除零|防止溢出|数值稳定(?:性)?|"
                     r"\bvalues?\s+in\s+[\[(][^\])\n]{1,30}[\])]|取值范围\s*[\[(][^\])\n]{1,30}[\])]|"
                     r"\(\s*(?:all|each|every|elements?|entries)?\s*(?:>|>=|≥)\s*0\s*\)"
                     r"|\b(?:all|elements?|entries)\s*(?:>|>=|≥)\s*0\b|"
                     r"[(（]\s*为正\s*[)）]|\bstrictly\s+positive\b|\bnon-?negative\b|"
                     r"\b(?:are|is|of|as|with)\s+0\s*/\s*1\b|\b0\s*/\s*1\s+(?:floats?|labels?|targets?|values?)\b|"
                     r"\b(?:labels?|targets?)\s+(?:in|are|of)\s*\{\s*0\s*,\s*1\s*\}|取值\s*(?:为)?\s*0\s*(?:/|或)\s*1|"
                     r"\blog[\s-]?(?:概率|probabilit(?:y|ies)|probs?|space|domain)\b|log\s*概率", re.I)
_HEAD_DIM = re.compile(r"\b(?:and\s+|with\s+)?(?P<sym>[A-Za-z_]\w{0,8})\s+(?:is\s+|=\s*|being\s+)?(?:the\s+)?"
                       r"(?:head|per-head)[\s_-]*(?:dim(?:ension)?|size)\b"
                       r"|(?P<sym2>[A-Za-z_]\w{0,8})\s*(?:为|是)\s*头维度", re.I)
_FUSED = re.compile(r"\bfused\b|\bfusion\b|\bfuse\b|融合", re.I)
_DTYPE_WORD = r"(?:torch\.)?(?:float32|fp32|f32|float16|fp16|f16|half|bfloat16|bf16|float)"
_OUT_DTYPE = re.compile(
    rf"(?:\b(?:output|result|out|y)s?\b[^.;\n]{{0,25}}?\b(?:in|as|to|into|is|stored\s+in|written\s+in|kept\s+in|cast\s+to)"
    rf"\s+(?:a\s+)?(?P<a>{_DTYPE_WORD})\b|\b(?:cast|convert(?:ed)?|downcast|upcast)\s+(?:it\s+|the\s+result\s+|x\s+)?"
    rf"(?:from\s+{_DTYPE_WORD}\s+)?(?:to|into)\s+(?P<b>{_DTYPE_WORD})\b|(?:->|→)\s*(?P<c>{_DTYPE_WORD})\b|"
    rf"(?:输出|结果)[^,.;，。\n]{{0,8}}?(?:转成|转为|转换为|为|用|是|保持为?|存为)\s*(?P<d>{_DTYPE_WORD})|"
    rf"(?:转成|转为|转换为|转换成|转换到)\s*(?P<e>{_DTYPE_WORD}))", re.I)


@dataclass
class Found:
    """What the passes found, with the ledger of what they read."""

    ledger: Ledger
    fields: list[fl.FieldLine]
    tokens: list[Token] = field(default_factory=list)
    dims: list[DimPhrase] = field(default_factory=list)
    keepdim: bool | None = None
    bindings: dict[str, Binding] = field(default_factory=dict)
    ranges: list[Token] = field(default_factory=list)
    shapes: list[Token] = field(default_factory=list)
    formulas: list[Formula] = field(default_factory=list)
    decls: list[Decl] = field(default_factory=list)
    loose_dtypes: list[str] = field(default_factory=list)
    same_dtype: dict[str, str] = field(default_factory=dict)
    same_shape: dict[str, str] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)
    label: Hit | None = None
    label_text: str = ""
    output: str | None = None
    output_dtype: str | None = None
    head_dim: str | None = None
    unknown: list[str] = field(default_factory=list)
    cue: str | None = None
    fused: bool = False
    index_hints: dict[str, tuple[str, ...]] = field(default_factory=dict)


def scan_text(norm: str, catalogue: Catalogue) -> Found:
    """Run every pass over the normalized text."""
    ledger = Ledger(norm)
    fields = fl.field_lines(norm)
    found = Found(ledger, fields)
    _claim_header(found, norm)
    out_dtype = _OUT_DTYPE.search(ledger.masked())
    if out_dtype:
        word = next(g for g in out_dtype.groupdict().values() if g)
        found.output_dtype = dtype_of(word)
        ledger.claim(out_dtype.start(), out_dtype.end(), "output dtype")
    found.dims = find_dims(ledger)
    found.keepdim = find_keepdim(ledger)
    found.bindings = find_bindings(ledger, _loose_names(catalogue))
    head = _HEAD_DIM.search(ledger.masked())
    if head and head.group("sym") not in found.bindings:
        found.head_dim = head.group("sym")  # `d the head dimension`: bound to the query's last size later
        ledger.claim(head.start(), head.end(), "head dim")
    found.ranges = find_ranges(ledger)
    written = find_shapes(ledger)
    found.shapes = [t for t in written if t.kind == "shape"]
    inline_bindings(found.shapes, found.bindings)
    found.index_hints = {_name_before(norm, t.start): t.value for t in written if t.kind == "index"}
    view = formula_view(ledger, found.dims)
    found.formulas = find_formulas(ledger, view, catalogue, set(found.bindings))
    found.unknown = unknown_calls(ledger.masked())
    cjk_words = CJK_FILLERS | {a for e in catalogue.entries for a in e.aliases if not a.isascii()}
    found.tokens = tokenize(ledger.masked(), found.shapes + found.ranges, cjk_words, frozenset(CJK_FILLERS))
    hits = find_hits(found.tokens, catalogue, norm)
    for token in found.tokens:
        if any(h.start <= token.start < h.end for h in hits):
            token.extra["hit"] = True
    found.tokens = sorted(found.tokens + _formula_names(found.formulas), key=lambda t: t.start)
    found.decls, found.loose_dtypes = _declarations(found, catalogue)
    _release_phrase_words(found.decls, hits, _parameter_words(norm, found.bindings, catalogue))
    found.same_dtype, found.same_shape = same_as(norm)
    names = {n for d in found.decls for n in d.names} | set(found.bindings)
    declared_at = {p for d in found.decls for p in d.positions}
    found.hits = [h for h in hits if h.text not in names and not any(h.start <= p < h.end for p in declared_at)]
    for hit in found.hits:
        take_variant(hit, catalogue, ledger, found.bindings)
    for hit in sorted(found.hits, key=lambda h: -len(h.entry.params)):
        if ledger.free(hit.start, hit.end):
            read_values(hit, _sentence(norm, hit.start, hit.end), ledger, found.bindings, found.ranges)
    found.hits = [h for h in found.hits if ledger.free(h.start, h.end)]  # a word another op's parameter took
    for hit in found.hits:
        ledger.claim(hit.start, hit.end, f"op {hit.entry.name}")
    found.cue = "channel" if _CUE_CHANNEL.search(norm) or any(v == ("c",) for v in found.index_hints.values()) \
        else "row" if _CUE_ROW.search(norm) \
        or any(v in (("i",), ("r",), ("row",)) for v in found.index_hints.values()) \
        else None
    found.fused = bool(_FUSED.search(norm))
    return found


def _name_before(text: str, position: int) -> str:
    m = re.search(r"([A-Za-z_]\w*)\s*$", text[:position])
    return m.group(1) if m else ""


def _formula_names(formulas: list[Formula]) -> list[Token]:
    """Return a word token for each input name written in a formula, so a shape right after it binds to it."""
    tokens = []
    for index, f in enumerate(formulas, start=1):
        for name in names(f.expr):
            for m in re.finditer(rf"(?<![\w.]){re.escape(name)}(?![\w(])", f.text):
                start = f.start + m.start()
                tokens.append(Token("word", name, start, start + len(name), name.lower(), {"formula": index}))
    return tokens


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
    before = [m.end() for m in SENTENCE_END.finditer(text, 0, start) if not _decimal_point(text, m.start())]
    after = [m.start() for m in SENTENCE_END.finditer(text, end) if not _decimal_point(text, m.start())]
    return (before[-1] if before else 0), (after[0] if after else len(text))


def _decimal_point(text: str, i: int) -> bool:
    return text[i] == "." and i + 1 < len(text) and not text[i + 1].isspace()


def _loose_names(catalogue: Catalogue) -> set[str]:
    words = {"dim", "axis", "eps", "epsilon"}
    for entry in catalogue.entries:
        for param in entry.params:
            words.update(s.lower() for s in param.say if re.fullmatch(r"[A-Za-z_]\w*", s))
    in_aliases = {w for entry in catalogue.entries for a in entry.aliases for w in a.lower().split()}
    return words - in_aliases - {"min", "max", "p", "order", "group", "groups", "high", "low", "lower", "upper"}


def _claim_key(ledger: Ledger, lines: list[str], offsets: list[int], f: fl.FieldLine) -> None:
    """Claim a field's key (`输入：`, `Description:`) and leave its value to the other finders."""
    key_end = lines[f.line].find(f.key) + len(f.key)
    colon = lines[f.line].find(":", key_end)
    ledger.claim(offsets[f.line], offsets[f.line] + (colon + 1 if colon >= 0 else key_end), "field key")


def _claim_header(found: Found, norm: str) -> None:
    """Claim task-book header lines, the name/type/output fields, and speedup, rounds and tolerance phrases."""
    ledger, lines = found.ledger, norm.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for f in found.fields:
        span = (offsets[f.line], offsets[f.line] + len(lines[f.line]))
        if f.kind in fl.HEADER_KINDS or f.kind in ("ignore", "type"):
            ledger.claim(offsets[f.line], offsets[f.line + 1 + len(f.body)] - 1, f.kind)
        elif f.kind == "name":
            found.label_text = f.value
            ledger.claim(*span, "name field")
        elif f.kind == "output":
            first = re.match(r"\s*([A-Za-z_]\w*)", f.value, re.A)
            found.output = first.group(1) if first and first.group(1).lower() not in ("torch", "tensor") else None
            dtype = re.search(r"\((?:torch\.)?(float32|fp32|float16|fp16|bfloat16|bf16)\)|\b(?:dtype|in)\s+(?:torch\.)?"
                              r"(float32|fp32|float16|fp16|bfloat16|bf16)\b", f.value, re.I)
            if dtype and not re.search(r"same|相同|同\s*\w", f.value, re.I):
                found.output_dtype = dtype_of(dtype.group(1) or dtype.group(2))
            if re.match(r"\s*[A-Za-z_]\w*\s*=\s*\S", f.value, re.A):  # `输出：out = relu(a + b)`: the formula is there
                _claim_key(ledger, lines, offsets, f)
            else:
                ledger.claim(offsets[f.line], offsets[f.line + 1 + len(f.body)] - 1, "output field")
        elif f.kind in ("description", "inputs"):
            _claim_key(ledger, lines, offsets, f)
    task_title = taskbook.task_title(norm)
    for i, line in enumerate(lines):
        heading = re.match(r"^\s*#{1,6}\s*(.*)$", line)
        if heading:
            ledger.claim(offsets[i], offsets[i] + len(line), "heading")
    if task_title:
        found.label_text = found.label_text or task_title
    for start, end, _ in fl.speedup_spans(norm) + fl.rounds_spans(norm):
        ledger.claim(start, end, "target")
    _, tolerance_spans = fl.tolerance_spans(norm)
    for start, end in tolerance_spans:
        ledger.claim(start, end, "tolerance")
    for m in re.finditer(r"(?<![\w.])[1-9]-?D\b|\bN-?D\b|\b(?:NCHW|NHWC|NCL|NLC)\b", norm):
        ledger.claim(m.start(), m.end(), "layout")
    for m in _ASIDES.finditer(norm):
        ledger.claim(m.start(), m.end(), "aside")
    for m in re.finditer(r"(?:on|for|at|targeting|目标设备|设备|在)\s*(?:an?\s+)?(?:NVIDIA\s+)?"
                         r"(?:H100|H200|H800|A100|A800|V100|L40S?|RTX\s*\d+|GPU|CUDA|Ascend(?:\s*910B?)?|NPU|CPU)"
                         r"(?:\s*(?:GPU|NPU))?", norm, re.I):
        ledger.claim(m.start(), m.end(), "device")


def _parameter_words(norm: str, bindings: dict[str, Binding], catalogue: Catalogue) -> set[int]:
    """Find where a word starts a parameter's name with the binding after it ("label" of "label smoothing 0.1")."""
    said = {w.lower() for e in catalogue.entries for p in e.params for w in p.say if " " in w}
    found = set()
    for binding in bindings.values():
        before = re.search(r"([A-Za-z_]\w*)\s+$", norm[:binding.start])
        if before and f"{before.group(1)} {binding.name}".lower() in said:
            found.add(before.start(1))
    return found


def _release_phrase_words(decls: list[Decl], hits: list[Hit], parameter_words: set[int]) -> None:
    """Give back a word that a list of names took to the phrase it belongs to ("bce with logits, x [16, 40]")."""
    phrases = [h for h in hits if " " in h.text.strip()]
    for decl in decls:
        if len(decl.names) < 2 or len(decl.positions) != len(decl.names):
            continue
        # The last name sits next to the shape: it is a name whatever a phrase says; earlier ones may be words of
        # a phrase that ends before it ("scale and shift [64]" is a list of names, not the op of that name).
        last = decl.positions[-1]
        apart = [h for h in phrases if not h.start <= last < h.end]
        taken = [at in parameter_words or any(h.start <= at < h.end for h in apart) for at in decl.positions]
        keep = [i for i in range(len(decl.names)) if i == len(decl.names) - 1 or not taken[i]]
        decl.names = [decl.names[i] for i in keep]
        decl.positions = [decl.positions[i] for i in keep]


_LISTED_ITEM = re.compile(r"(?P<name>[A-Za-z_]\w*)\s+(?:(?P<dtype>[A-Za-z]\w*)\s+)?(?P<shape>\[[\d\s,]*\])")


def _listed_inputs(found: Found, f: fl.FieldLine, tokens: list[Token]) -> list[Decl]:
    """Read a one-line input list, `Inputs: A float32 [2, 2], x float32 [2]`, item by item: each item's first
    word is a name, whatever else it may mean in prose (`A`, `input`)."""
    if f.body:
        return []
    line_start = found.ledger.text.find(f.value)
    if line_start < 0:
        return []
    items = list(_LISTED_ITEM.finditer(f.value))
    rest = _LISTED_ITEM.sub("", f.value)
    if not items or re.sub(r"[\s,;]", "", rest):
        return []
    decls = []
    for m in items:
        dtype = dtype_of(m.group("dtype")) if m.group("dtype") else None
        if m.group("dtype") and dtype is None:
            return []
        at = line_start + m.start("shape")
        shape = next((t.value for t in tokens if t.kind == "shape" and t.start == at), None)
        if shape is None:
            return []
        dtypes = [dtype] if dtype else []
        name_at = line_start + m.start("name")
        decls.append(Decl([m.group("name")], [shape], dtypes, name_at, positions=[name_at], notes=["bullet"]))
    return decls


def _declarations(found: Found, catalogue: Catalogue) -> tuple[list[Decl], list[str]]:
    """Read `name: ...` input bullets of a task book, then the declarations in free text."""
    bullets: list[Decl] = []
    tokens = found.tokens
    for f in found.fields:
        if f.kind != "inputs":
            continue
        listed = _listed_inputs(found, f, tokens)
        if listed:
            bullets += listed
            start, end = listed[0].start, listed[-1].positions[-1] + 1
            line_end = found.ledger.text.find("\n", start)
            end = line_end if line_end >= 0 else len(found.ledger.text)
            tokens = [t for t in tokens if not start <= t.start < end]
            continue
        for line in f.body or [f.value]:
            m = _BULLET.match(line)
            if not m:
                continue
            start = found.ledger.text.find(line)
            inside = [t for t in tokens if start <= t.start < start + len(line)]
            shapes = [t.value for t in inside if t.kind == "shape"]
            dtypes = list(dict.fromkeys(t.value for t in inside if t.kind == "dtype"))
            bullets.append(Decl([m.group("name")], shapes, dtypes, start + m.start("name"), notes=["bullet"]))
            tokens = [t for t in tokens if not start <= t.start < start + len(line)]
    decls, loose = associate(tokens, catalogue, set())
    for decl in decls:
        if decl.shared and not decl.names:
            decl.names = preceding_names(tokens, decl.start, catalogue)  # `pred 与 target ... 两者均为 [..]`
    return bullets + decls, loose
