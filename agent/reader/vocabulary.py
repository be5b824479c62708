"""Words the reader knows: dtypes, fillers, connectors, and words that are never input names."""

from __future__ import annotations

import re

DTYPE_WORDS: dict[str, str] = {
    "float32": "float32", "fp32": "float32", "f32": "float32", "float": "float32", "single": "float32",
    "float16": "float16", "fp16": "float16", "f16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16", "brain float": "bfloat16",
    "int64": "int64", "long": "int64", "i64": "int64", "int32": "int32", "i32": "int32",
    "bool": "bool", "boolean": "bool",
}
CJK_DTYPES = {"单精度": "float32", "半精度": "float16", "整型": "int64", "布尔": "bool"}
# "double" and "complex" are dtypes only as types ("double precision", "complex tensor", `torch.double`), not
# in prose ("complex relationships", "double the size").
_AS_TYPE = r"(?=[\s-]*(?:precision|tensors?|dtype|type|values?|valued|inputs?|numbers?|data|outputs?)\b)"
UNSUPPORTED_DTYPE = re.compile(
    r"(?<![\w.])(?:torch\.(?:double|complex\w*)|(?:torch\.)?(?:float64|fp64|f64|int4|int8|int16|uint8|uint16|"
    rf"uint32|uint64|fp8|float8\w*|e4m3\w*|e5m2\w*|complex64|complex128|tf32|fp4|nvfp4|mxfp\d)|double{_AS_TYPE}"
    rf"(?:[\s-]precision)?|complex{_AS_TYPE})(?!\w)|双精度",
    re.I,
)

# Words that join names in a list.
CONJUNCTIONS = {"and", "or", "&", "/", "和", "与", "及", "以及", "或", "、", "跟"}
# Words around declarations that carry no meaning of their own.
FILLERS = {
    "a", "an", "the", "of", "shape", "shapes", "shaped", "with", "tensor", "tensors", "torch.tensor", "input",
    "inputs", "is", "are", "has", "have", "having", "size", "sized", "sizes", "dims", "dimension", "dimensions",
    "nchw", "nhwc", "nd", "dtype", "dtypes", "type", "types", "both", "each", "all", "layout", "contiguous", "as",
    "respectively", "data", "matrix", "matrices", "array", "arrays", "vector", "vectors", "batch", "be", "in",
    "on", "for", "to", "by", "from", "at", "it", "its", "this", "that", "these", "those", "elementwise",
    "element", "wise", "pointwise", "element-wise", "activation", "function", "op", "operator", "kernel",
    "please", "implement", "write", "generate", "make", "build", "create", "compute", "computes", "computing",
    "calculate", "calculates", "apply", "applies", "applied", "applying", "fused", "fuse", "fusion", "triton",
    "torch", "pytorch", "using", "use", "used", "given", "let", "we", "i", "need", "want", "should", "must",
    "will", "can", "do", "does", "result", "results", "output", "outputs", "returns", "return", "returned",
    "value", "values", "numbers", "number", "float", "entries", "entry", "elements", "d", "2d", "3d", "4d",
    "1d", "two", "three", "one", "then", "first", "second", "finally", "after", "afterwards", "next",
    "followed", "which", "where", "same", "also", "just", "simple", "plain", "standard", "basic", "fast",
    "efficient", "optimized", "optimised", "high", "performance", "quick", "kernels", "ops", "operation",
    "operations", "layer", "module", "single", "along", "over", "across", "within", "into", "onto", "per",
    "every", "dim", "axis", "axes", "last", "final", "columns", "rows", "column", "row", "via",
    "new", "version", "variant", "form", "style", "like", "e.g", "eg", "i.e", "ie", "namely", "called",
    "named", "known", "so", "such", "here", "there", "some", "any", "mode", "only", "case", "cases", "x_",
    "gpu", "cuda", "npu", "cpu", "ascend", "nvidia", "h100", "h200", "a100", "device", "memory",
    "positive", "negative", "nonnegative", "non", "strictly", "real", "finite", "random", "normal", "valid",
    "unit", "learnable", "trainable", "optional", "affine", "biased", "unbiased", "inplace", "in-place", "exact",
    "approximate", "precise", "numerically", "stable", "safe", "naive", "online", "vectorized", "prob",
    "probability", "probabilities", "distribution", "log-probabilities", "logits-like", "raised", "power",
    "normalize", "normalise", "normalized", "normalised", "normalizes", "default", "defaults",
    "bound", "bandwidth", "throughput", "latency", "speed", "speedup", "faster", "than", "baseline", "eager",
    "reference", "correct", "correctness", "accuracy", "precision", "tolerance", "aka", "f", "nn", "functional",
    "def", "lambda", "math", "np", "thanks", "thank", "you", "me",
    "our", "my", "your", "their", "them", "they", "he", "she", "his", "her", "was", "were", "been", "being",
    "not", "no", "yes", "if", "else", "when", "while", "because", "since", "but", "however", "thus",
    "hence", "therefore", "either", "neither", "nor", "very", "more", "most", "less", "least",
    "again", "once", "twice", "time", "times", "step", "steps", "stage", "pass", "passes", "one-pass",
}
CJK_FILLERS = {
    "的", "做", "对", "是", "为", "成", "个", "把", "将", "给", "请", "实现", "计算", "编写", "生成", "一个", "算子",
    "张量", "输入", "输出", "形状", "大小", "尺寸", "维度", "数据", "类型", "数据类型", "精度", "激活", "函数",
    "运算", "操作", "融合", "逐元素", "元素", "按元素", "结果", "得到", "返回", "其中", "并", "且", "然后", "再",
    "先", "之后", "最后", "接着", "随后", "后", "都", "均", "分别", "以及", "和", "与", "及", "或", "上", "中",
    "在", "于", "用", "使用", "采用", "需要", "要求", "支持", "即", "也", "就", "这", "该", "其", "它", "之",
    "取", "值", "进行", "执行", "一下", "帮", "我", "优化", "高性能", "内核", "核函数", "矩阵", "向量", "批量",
    "批", "每", "每个", "每一", "行", "列", "维", "沿", "按", "沿着", "一", "第", "所有", "全部",
    "相同", "一致", "同", "跟", "卷积核", "非负", "为正", "正数", "正", "两种", "三种", "两个", "三个", "四个", "二个",
    "精确版", "精确", "布局", "格式", "这里", "本身", "两者", "二者", "均为", "都是", "都为", "概率", "对数概率",
    "自身", "之间", "默认", "带", "不带",
    "前向", "后接", "接", "过", "取值", "如下", "公式", "描述", "功能", "其余", "参数", "常数", "标量", "等于", "设",
    "令", "约", "个数", "数量", "次", "形如", "规模", "批次", "广播", "以", "上面",
    "下面", "如", "例如", "比如", "以下", "来", "去", "到", "从", "让", "使", "得", "了", "着", "吗", "呢",
    "吧", "啊", "嘛", "里", "内", "外", "前", "中间", "最终", "本", "此", "上述", "包含", "包括", "有", "没有",
    "无", "不", "可", "可以", "能", "应", "应该", "必须", "保证", "快", "更快", "加速", "提速", "性能", "目标",
}
# Words that are never input names, even next to a shape.
NOT_NAMES = FILLERS | {
    "and", "or", "out", "result", "apply", "then", "clamp", "multiply", "add", "subtract", "divide",
    "take", "its", "square", "root", "between", "range", "interval", "minus", "plus", "times",
    "over", "along", "keepdim", "true", "false", "none", "eps", "epsilon", "dim", "task", "name", "description",
    "inputs", "input", "outputs", "output", "approximate", "approximation", "approx", "tanh", "exact",
    "reduction", "sum", "max", "min", "causal", "masked", "same", "shape", "groups", "group", "heads", "head",
    "channels", "channel",
}
# Filler words that are still input names when a shape follows them (`target [256]`, `input [8, 10]`).
NAMES_TOO = {"input", "target", "targets", "output", "weight", "bias", "mask", "scale", "value", "data",
             "table", "index", "labels", "label", "logits", "probs", "batch"}
# Names an output is commonly given; they never become inputs.
OUTPUT_NAMES = ("out", "output", "y", "z", "o", "res", "result", "ret", "dst", "输出", "结果")
SENTENCE_END = re.compile(r"[.;!?\n]")


_FLOAT_WORDS = ("float32", "fp32", "f32", "float16", "fp16", "f16", "half", "bfloat16", "bf16", "float")
DTYPE_PATTERN = rf"(?<![\w.])(?:torch\.)?(?:{'|'.join(_FLOAT_WORDS)})(?!\w)"


def dtype_name(word: str) -> str | None:
    """Return the canonical float dtype a word names (fp16 -> float16), or None."""
    found = dtype_of(word)
    return found if found in ("float32", "float16", "bfloat16") else None


def dtype_of(word: str) -> str | None:
    """Return the canonical dtype a word names (fp16 -> float16), or None."""
    low = word.lower().removeprefix("torch.")
    return DTYPE_WORDS.get(low) or CJK_DTYPES.get(word)


# A structured line that declares tensors (`Inputs: x float32 [4, 5]`, `输出：y`): it wins over prose.
DECLARATION_LINE = re.compile(r"(?im)^[ \t#*-]*(?:inputs?|outputs?|输入|输出)\s*[:：].*$")
