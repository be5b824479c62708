"""Read task-book fields and header facts: device, target speedup, rounds, tolerances."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.reader.vocabulary import DTYPE_PATTERN, dtype_name
from agent.spec import DEFAULT_TOLERANCES, MAX_ROUNDS, SUPPORTED_DTYPES, SpecError, Tolerance

_FULLWIDTH = str.maketrans({
    "：": ":", "，": ",", "（": "(", "）": ")", "；": ";", "［": "[", "］": "]", "【": "[", "】": "]",
    "＝": "=", "≥": ">=", "≤": "<=", "＞": ">", "＜": "<", "｛": "{", "｝": "}", "／": "/", "＋": "+",
    "－": "-", "＊": "*", "　": " ", "“": '"', "”": '"', "‘": "'", "’": "'", "＿": "_", "−": "-",
    "–": "-", "—": "-", "⩾": ">=", "\t": " ", "`": " ",
})

FIELD_KEYS: dict[str, tuple[str, ...]] = {
    "name": ("算子名称", "算子名", "名称", "operator name", "op name", "kernel name", "name", "task",
             "operator", "op", "task name"),
    "type": ("算子类型", "类型", "operator type", "op type", "type", "category", "kind"),
    "description": ("功能描述", "描述", "功能", "说明", "计算公式", "公式", "description", "function",
                    "semantics", "formula", "computation", "definition"),
    "inputs": ("输入参数", "输入", "输入张量", "inputs", "input", "input tensors", "arguments", "args"),
    "output": ("输出参数", "输出", "输出张量", "outputs", "output", "returns", "return"),
    "device": ("测评设备", "目标设备", "设备", "硬件", "target device", "device", "hardware", "platform"),
    "perf": ("性能要求", "性能目标", "目标加速比", "加速比", "performance", "target speedup", "speedup",
             "performance target", "performance requirement"),
    "rounds": ("自动优化最大迭代轮次", "最大迭代轮次", "迭代轮次", "最大轮次", "maximum optimization rounds",
               "max optimization rounds", "max rounds", "maximum rounds", "rounds"),
    "accuracy": ("精度要求", "精度", "正确性", "accuracy", "tolerance", "tolerances", "precision",
                 "correctness"),
    "shared": ("统一要求", "通用要求", "公共要求", "总体要求", "shared requirements", "general requirements",
               "common requirements", "requirements"),
    "ignore": ("应用场景", "场景", "约束", "约束条件", "备注", "use case", "use cases", "application",
               "applications", "constraints", "constraint", "notes", "note", "references", "baseline",
               "基准"),
}
_KEY_KIND = {alias: kind for kind, aliases in FIELD_KEYS.items() for alias in aliases}
HEADER_KINDS = ("device", "perf", "rounds", "accuracy", "shared")
_FIELD_LINE = re.compile(
    r"^(?P<indent>\s*)(?P<bullet>(?:[-*•+]|\d+[.)])\s+)?(?:\*\*)?(?P<key>[^:\n*#\[\]()=]{1,40}?)"
    r"(?:\*\*)?\s*:\s*(?:\*\*)?(?P<value>.*)$"
)
_NUM = r"(\d+(?:\.\d+)?)"


def normalize(text: str) -> str:
    """Turn full-width punctuation into ASCII and unify line endings."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_FULLWIDTH)
    return text.replace("。", ". ")


@dataclass
class FieldLine:
    """One `key: value` line of a task book, with the lines that continue it."""

    kind: str
    key: str
    value: str
    line: int
    body: list[str] = field(default_factory=list)


def field_lines(text: str) -> list[FieldLine]:
    """Find the known `key: value` lines, each with its more-indented or bulleted continuation."""
    lines = text.split("\n")
    result: list[FieldLine] = []
    i = 0
    while i < len(lines):
        match = _FIELD_LINE.match(lines[i])
        kind = _KEY_KIND.get(re.sub(r"\s+", " ", match["key"].strip().lower())) if match else None
        if match is None or kind is None:
            i += 1
            continue
        found = FieldLine(kind, match["key"].strip(), match["value"].strip(), i)
        indent, bulleted = len(match["indent"]), bool(match["bullet"])
        j = i + 1
        while j < len(lines) and lines[j].strip():
            sub = _FIELD_LINE.match(lines[j])
            deeper = len(lines[j]) - len(lines[j].lstrip()) > indent
            starts_bullet = bool(re.match(r"\s*[-*•+]\s", lines[j]))
            sub_is_field = sub is not None and re.sub(r"\s+", " ", sub["key"].strip().lower()) in _KEY_KIND
            if not (deeper or (not bulleted and starts_bullet)) or (sub_is_field and not deeper):
                break
            found.body.append(lines[j])
            j += 1
        result.append(found)
        i = j
    return result


def find_device(text: str, fields: list[FieldLine]) -> str:
    """Return the device named first ("cuda", "npu", "cpu"), preferring a device field, else "auto"."""
    pattern = re.compile(
        r"(?P<cuda>\b(?:cuda|nvidia|gpu|h100|h200|h800|a100|a800|v100|l40s?|rtx)\b|英伟达)"
        r"|(?P<npu>昇腾|\bascend\b|\bnpu\b|\b910b?\b|\batlas\b|华为)|(?P<cpu>\bcpu\b)",
        re.I | re.A,
    )
    for source in [f.value for f in fields if f.kind == "device"] + [text]:
        match = pattern.search(source)
        if match and match.lastgroup:
            return match.lastgroup
    return "auto"


_CMP = r"(?:>=|=>|>|=|:|至少|不低于|不小于|大于等于|大于|达到|为|of|at\s+least|above|is)?\s*"
_SPEEDUP = (
    re.compile(rf"(?:speed\s*-?\s*up|加速比)\s*(?:target|目标)?\s*{_CMP}{_CMP}{_NUM}\s*(?:x|×|倍)?", re.I),
    re.compile(rf"{_NUM}\s*(?:x|×|倍)\s*(?:faster|speed\s*-?\s*up|加速|提速|更快)", re.I),
    re.compile(rf"(?:speed\s*-?\s*up|加速比)[^\n\d]{{0,40}}?(?:>=|>|至少|不低于)\s*{_NUM}", re.I),
    re.compile(rf"目标\s*(?:>=|>|=|:|至少|不低于)\s*{_NUM}"),
)


def _spans(patterns: tuple[re.Pattern[str], ...], text: str) -> list[tuple[int, int, float]]:
    """List (start, end, value) for every match of the patterns, the first pattern winning overlaps."""
    found: list[tuple[int, int, float]] = []
    for pattern in patterns:
        for m in pattern.finditer(text):
            if not any(s <= m.start() < e for s, e, _ in found):
                found.append((m.start(), m.end(), float(m.group(1))))
    return sorted(found)


def speedup_spans(text: str) -> list[tuple[int, int, float]]:
    """List (start, end, value) for every target-speedup statement in text."""
    return _spans(_SPEEDUP, text)


def find_speedup(text: str, fields: list[FieldLine]) -> float | None:
    """Return the target speedup; a performance field wins, then the last statement in the text."""
    for f in reversed([f for f in fields if f.kind == "perf"]):
        spans = speedup_spans(f"speedup {f.value}")
        if spans:
            return spans[-1][2]
        plain = re.search(rf"(?:>=|>|=)?\s*{_NUM}", f.value)
        if plain:
            return float(plain.group(1))
    spans = speedup_spans(text)
    return spans[-1][2] if spans else None


_ROUNDS = (
    re.compile(rf"(?:最大)?(?:迭代|优化)?(?:轮次|轮数|次数)\s*数?\s*(?:上限)?\s*(?::|=|为|是)?\s*{_NUM}"),
    re.compile(
        rf"max(?:imum|\.)?\s*(?:number\s+of\s+)?(?:optimi[sz]ation\s+|tuning\s+|refinement\s+)?"
        rf"(?:rounds|iterations)\s*(?::|=|of|is)?\s*{_NUM}", re.I),
    re.compile(rf"(?:up\s+to|at\s+most|no\s+more\s+than|max(?:imum)?)\s+{_NUM}\s+(?:optimi[sz]ation\s+|tuning\s+)?"
               rf"(?:rounds|iterations)", re.I),
    re.compile(rf"{_NUM}\s+(?:optimi[sz]ation\s+|tuning\s+)?rounds\s+(?:max(?:imum)?|at\s+most)", re.I),
    re.compile(rf"\brounds\s*(?::|=)\s*{_NUM}", re.I),
    re.compile(rf"(?:最多|至多|不超过)\s*(?:优化|迭代|调优)?\s*{_NUM}\s*轮"),
)


def rounds_spans(text: str) -> list[tuple[int, int, float]]:
    """List (start, end, value) for every optimization-rounds statement in text."""
    return _spans(_ROUNDS, text)


def find_rounds(text: str) -> int | None:
    """Return the maximum optimization rounds, capped at MAX_ROUNDS; the last statement wins."""
    spans = rounds_spans(text)
    if not spans:
        return None
    value = spans[-1][2]
    if value != int(value) or value < 1:
        raise SpecError(f"the maximum number of optimization rounds must be a whole number >= 1, "
                        f"got {value:g}")
    return min(int(value), MAX_ROUNDS)


_TOL = re.compile(
    rf"(?P<dtype>{DTYPE_PATTERN})|(?P<key>rtol|atol|tol(?:erance)?|容差|误差)\s*(?:=|:|of|为|<=|<)?\s*"
    r"(?P<value>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(?P<stop>[;\n]|\.\s)",
    re.I | re.A,
)


def tolerance_spans(text: str) -> tuple[dict[str, Tolerance], list[tuple[int, int]]]:
    """Read `fp16 rtol=1e-2, atol=1e-2; fp32 ...` into tolerances by dtype, with the spans read."""
    result: dict[str, Tolerance] = {}
    spans: list[tuple[int, int]] = []
    dtypes: list[str] = []
    values: dict[str, float] = {}
    marks = {"dtype_start": -1, "dtype_end": -1, "tol_start": -1, "tol_end": -1}

    def flush() -> None:
        if values:
            for dtype in dtypes or list(SUPPORTED_DTYPES):
                default = DEFAULT_TOLERANCES[dtype]
                rtol = values.get("rtol", values.get("tol", default.rtol))
                atol = values.get("atol", values.get("tol", default.atol))
                try:
                    result[dtype] = Tolerance(rtol=rtol, atol=atol)
                except ValueError as exc:
                    raise SpecError(f"tolerance rtol={rtol:g}, atol={atol:g} for {dtype} is invalid") from exc
            gap = text[marks["dtype_end"]:marks["tol_start"]] if dtypes else "x"
            adjacent = re.fullmatch(r"[\s/,:=]*(?:使用|采用|用|for|with|are|is)?[\s:=]*", gap)
            spans.append((marks["dtype_start"] if adjacent else marks["tol_start"], marks["tol_end"]))
        dtypes.clear()
        values.clear()
        marks.update(dtype_start=-1, dtype_end=-1, tol_start=-1, tol_end=-1)

    for m in _TOL.finditer(text):
        if m.group("stop"):
            flush()
        elif m.group("dtype"):
            if values:
                flush()
            between = text[marks["dtype_end"]:m.start()]
            if dtypes and not re.fullmatch(r"[\s/,&]*(?:and|or|和|与)?[\s/,&]*", between):
                dtypes.clear()
                marks["dtype_start"] = -1
            name = dtype_name(m.group("dtype"))
            if name and name not in dtypes:
                dtypes.append(name)
            marks["dtype_start"] = m.start() if marks["dtype_start"] < 0 else marks["dtype_start"]
            marks["dtype_end"] = m.end()
        else:
            key = m.group("key").lower()
            values["rtol" if key == "rtol" else "atol" if key == "atol" else "tol"] = float(m.group("value"))
            marks["tol_start"] = m.start() if marks["tol_start"] < 0 else marks["tol_start"]
            marks["tol_end"] = m.end()
    flush()
    return result, spans
