"""Hold the phrases follow-ups are read and rewritten with (dtypes, shapes, targets, rounds, devices, fillers)."""

from __future__ import annotations

import re

from agent.reader.vocabulary import dtype_name


# Both the message reading and the spec rewriting raise it: here neither module has to import the other.
class FollowUpError(ValueError):
    """A message that looks like a follow-up but cannot be applied (the message says why, as a question)."""


FLAGS = re.I | re.A  # ASCII \w and \b: `改成bf16` has an edge before `bf16`
_NUM = r"\d+(?:\.\d+)?"
COUNT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
               "nine": 9, "ten": 10, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
               "八": 8, "九": 9, "十": 10}
_COUNT = rf"(?:\d+|{'|'.join(COUNT_WORDS)})"
# ASCII word edges (a CJK character next to `bf16` is still an edge); they keep `torch.x` and `3.5` whole.
_B, _E = r"(?<![A-Za-z0-9_.])", r"(?![A-Za-z0-9_]|\.[A-Za-z0-9_])"

# A float dtype as written in a message or a spec; `single` only with `precision` (`a single row` is no dtype).
DTYPE = (
    rf"{_B}(?:torch\.)?(?:bfloat16|bf16|float16|fp16|f16|float32|fp32|f32|float|half)(?:[\s-]+precision)?{_E}"
    rf"|{_B}single(?:[\s-]+precision|\s+float){_E}|{_B}brain\s+float{_E}|[半单]精度(?:浮点数?)?"
)
OTHER_DTYPE = re.compile(rf"{_B}(?:torch\.)?(?:int64|int32|i64|i32|bool|long){_E}", FLAGS)
# A shape as a message writes it: sizes only.
SHAPE = (
    r"\[\s*\d+(?:\s*,\s*\d+)*\s*,?\s*\]|\(\s*\d+(?:\s*,\s*\d+)+\s*,?\s*\)|\(\s*\d+\s*,\s*\)"
    rf"|{_B}\d+(?:\s*[x×]\s*\d+)+{_E}"
)
# A shape as a spec writes it: sizes and symbols (`[tokens, 4096]`); only the sizes are rewritten.
_ITEM = r"(?:\d+|[A-Za-z_]\w*)"
SPEC_SHAPE = re.compile(
    rf"\[\s*{_ITEM}(?:\s*,\s*{_ITEM})*\s*,?\s*\]|\(\s*{_ITEM}(?:\s*,\s*{_ITEM})+\s*,?\s*\)|\(\s*\d+\s*,\s*\)"
    rf"|{_B}\d+(?:\s*[x×]\s*\d+)+{_E}", re.A)
# A dtype word that heads a tolerance (`fp16 rtol=1e-2`, `fp16/bf16: tol 1e-2`): it keeps its dtype.
TOLERANCE_AFTER = re.compile(
    rf"(?:\s*(?:[/,&]|and|or|和|与)?\s*(?:{DTYPE}))*\s*(?:[:=]|for|with|are|is|使用|采用|用)?\s*"
    r"(?:rtol|atol|tol(?:erance)?|容差|误差)", FLAGS)
_TO = r"\s*(?:->|→|=>|\bto\b|改成|改为|换成|换为|变成|变为|改到)\s*"
_NOT = r"\s*,?\s*(?:\binstead\s+of\b|\brather\s+than\b|\bnot\b|而不是|而非|代替|替代|替换|取代)\s*"
OLD_NEW = (rf"(?:\bfrom\s+|把\s*|将\s*)?(?P<old>{{X}}){_TO}(?P<new>{{X}})", rf"(?P<new>{{X}}){_NOT}(?P<old>{{X}})")
_SPEEDUP_WORDS = r"(?:faster|speed\s*-?\s*up|加速比?|提速|更快)"
TARGETS = (
    re.compile(
        rf"(?:\btarget(?:\s+speed\s*-?\s*up)?|\bspeed\s*-?\s*up(?:\s+target)?|\baim(?:\s+for)?|\bgo\s+for|\bgoal"
        rf"|目标加速比|加速比|目标)\s*(?:of|at|to|is|=|:|>=|>|为|是|改为|改成|设为|设成|至少|达到|到)?\s*"
        rf"(?:at\s+least\s+)?[x×]?\s*(?P<v>{_NUM})\s*(?:x|×|倍)?(?:\s*{_SPEEDUP_WORDS})?{_E}", FLAGS),
    re.compile(rf"(?:\bat\s+least\s+)?(?<![\w.])(?P<v>{_NUM})\s*(?:x|×|倍)(?!\s*\d)(?:\s*{_SPEEDUP_WORDS})?{_E}",
               FLAGS),
)
ROUNDS = (
    re.compile(
        rf"(?:\b(?:try|run|do|give\s+it)\s+)?(?:\b(?P<another>another|an?\s+extra)\s+)?(?:(?<![\w.])(?P<n>{_COUNT})\s+)?"
        r"(?P<more>(?:more|extra|additional)\s+)?(?:optimi[sz]ation\s+|tuning\s+)?"
        r"(?:rounds?|iterations?|tries|attempts)\b(?P<after>\s+more\b)?", FLAGS),
    re.compile(rf"\b(?:max(?:imum)?\s+)?(?:rounds?|iterations?)\s*(?:=|:|to|of)?\s*(?P<n>{_COUNT}){_E}", FLAGS),
    re.compile(rf"(?:最多|至多|不超过|再|多|另外)?\s*(?:跑|来|试|优化|迭代|做|调)?\s*(?P<n>{_COUNT})\s*(?:轮|遍)(?:优化|迭代)?"),
    re.compile(rf"(?:再|多)\s*(?:跑|来|试|优化|迭代|做|调)\s*(?P<n>{_COUNT})\s*次"),
    re.compile(rf"(?:最大)?(?:迭代|优化)?(?:轮次|轮数)\s*(?:改为|改成|设为|设成|为|=|:)?\s*(?P<n>{_COUNT})"),
)
_DEVICE_WORDS = {
    "cuda": r"cuda|nvidia|gpu|h100|h200|h800|a100|a800|v100|l40s?|rtx|英伟达",
    "npu": r"npu|ascend|atlas|910b|昇腾|华为",
    "cpu": r"cpu",
}
DEVICE = re.compile("|".join(rf"(?P<{kind}>(?<![\w.])(?:{words})(?![\w.]))" for kind, words in _DEVICE_WORDS.items()),
                    FLAGS)
DEVICE_NAMES = {"cuda": "CUDA", "npu": "NPU", "cpu": "CPU"}

FILLERS = {
    "now", "instead", "please", "pls", "plz", "and", "then", "also", "ok", "okay", "so", "let's", "lets", "let",
    "us", "can", "could", "would", "you", "we", "i", "just", "but", "with", "use", "using", "switch", "change",
    "make", "it", "in", "to", "set", "go", "again", "as", "the", "a", "an", "this", "that", "same", "rerun",
    "redo", "do", "for", "me", "thanks", "thank", "what", "about", "how", "all", "both", "everything", "inputs",
    "input", "tensors", "tensor", "dtype", "dtypes", "precision", "type", "try", "run", "one", "time", "version",
    "keep", "rest", "else", "hi", "hey", "cool", "great", "nice", "good", "maybe", "too",
}
# Words that belong to one kind of change: a filler only when the message makes that change.
CONTEXT_FILLERS = {
    "shape": {"shape", "shapes", "size", "sizes", "dims", "dimensions", "of", "new", "bigger", "smaller"},
    "target": {"target", "speedup", "speed", "up", "aim", "goal", "for", "at", "least", "faster", "than",
               "baseline", "eager", "torch", "pytorch", "over"},
    "rounds": {"more", "rounds", "round", "another", "extra", "max", "maximum", "up", "at", "most", "iterations",
               "optimization", "optimisation", "tuning", "give", "of", "few"},
    "device": {"on", "device", "run", "it", "there"},
}
CJK_FILLERS = {
    "现在", "改成", "换成", "改为", "换为", "改用", "换用", "用", "使用", "请", "再", "然后", "并且", "并", "和", "把",
    "将", "改", "换", "一下", "吧", "试试", "试一下", "试", "跑", "上", "在", "那就", "好的", "好", "的", "设为",
    "设置为", "设成", "调整为", "调成", "为", "成", "也", "都", "就", "呢", "吗", "啊", "呀", "了", "来", "那", "那么",
    "还是", "同时", "以及", "与", "及", "全部", "全", "输入", "张量", "变成", "变为", "数据类型", "类型", "精度",
    "帮我", "帮", "我", "看看", "一遍", "重新", "改一下", "其他", "不变", "保持", "其余", "行", "可以", "嗯",
}
CJK_CONTEXT_FILLERS = {
    "shape": {"形状", "大小", "尺寸", "维度", "规模"},
    "target": {"目标", "加速比", "加速", "提速", "至少", "达到", "性能", "要求"},
    "rounds": {"轮", "轮次", "次", "优化", "迭代", "最多"},
    "device": {"设备", "上", "运行", "执行", "跑"},
}
TOKEN = re.compile(r"[A-Za-z_][\w'.-]*|\d+(?:\.\d+)?|[\u3400-\u9fff]+|\S", re.A)


def dtype_of(word: str) -> str:
    """Return the canonical float dtype of a dtype word (`half precision` -> float16)."""
    core = re.sub(r"(?:[\s-]+precision|\s+float|浮点数?)$", "", word.strip(), flags=re.I)
    # The patterns match float dtype words only, so a name is always found; the fallback is for the type checker.
    return "bfloat16" if core.lower() == "brain" else dtype_name(core) or "float32"
