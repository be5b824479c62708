"""Recognise operator phrases (English and Chinese) and turn them into a formula."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.ops import BY_NAME, unary_names
from agent.spec import SpecError

SUPPORTED = (
    "the offline parser handles elementwise/broadcast operators built from "
    f"{', '.join(unary_names())} and + - * / maximum minimum (plus swiglu/geglu); reductions, "
    "normalisations, softmax, scans, matmul, convolution and other operators need the LLM path"
)
_NUM = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"

_UNSUPPORTED: tuple[tuple[str, str], ...] = (
    (r"\b(?:log\s*)?soft\s*max\w*", "softmax"),
    (r"\b(?:rms|layer|batch|group|instance|l1|l2|weight)\s*norm\w*|\bnorm\b|\bnormali[sz]\w*",
     "normalization"),
    (r"\bmean\b|\baverage\b|\bvariance\b|\bvar\b|\bstd\b|standard\s+deviation", "mean/variance"),
    (r"\breductions?\b|\breduc\w*\s+(?:over|along|across)\b|\breduce\s*(?:sum|max|min|mean|prod)\b|"
     r"\breduce\s*\(|\bsum\s+(?:over|along|across|of\s+all)\b|\bsum\s*\(|\bprod\s*\(|\b(?:max|min)\s+"
     r"(?:over|along|across)\b|\bamax\b|\bamin\b|logsumexp", "reduction"),
    (r"prefix\s+sum|cum\s*sum|cum\s*prod|cumulative|\bscan\b", "scan (prefix sum)"),
    (r"mat\s*mul|\bgemm\b|\bbmm\b|matrix\s+(?:multipl\w*|product)|dot\s+product|\bmm\b|einsum|"
     r"\bfully\s+connected\b", "matrix multiplication"),
    (r"\bconv(?:olution\w*|\s*[123]\s*d|transpose\w*)?\b", "convolution"),
    (r"attention|\bsdpa\b", "attention"),
    (r"\barg\s*(?:max|min)\b|\btop\s*k\b|\bsort\w*", "argmax/top-k/sort"),
    (r"\bpool\w*", "pooling"),
    (r"transpose|permute|\bgather\b|\bscatter\b|embedding|concat\w*|index\s+select|\breshape\b",
     "data movement"),
    (r"dropout|\brandom\s+(?:mask|sampl\w*|noise)|\brandn?\s*\(", "random sampling"),
    (r"cross\s*entropy|\bloss\b", "loss"),
    (r"归约|规约|求和|前缀和|累加|累积|累乘|均值|平均|方差|归一化|"
     r"矩阵乘|卷积|注意力|池化|排序|转置|拼接|随机失活", "reduction or other"),
)

_PHRASES: tuple[tuple[str, str, str], ...] = (
    (r"\bswi\s*glu\b", "composite", "swiglu"),
    (r"\bge\s*glu\b", "composite", "geglu"),
    (r"\bre\s*glu\b", "composite", "reglu"),
    (r"\bbias\s*add\w*|\badd(?:s|ing)?\s+(?:a\s+|the\s+)?bias\b|偏置\s*(?:加法|相加|加)|bias\s*(?:加法|相加)|"
     r"加偏置|加上偏置", "binary", "bias_add"),
    (r"\bresidual\s*(?:add\w*|connection|sum)|\badd(?:s|ing)?\s+(?:a\s+|the\s+)?residual\b|残差", "binary",
     "residual_add"),
    (r"\bscale\s*(?:and|&|\+|,)\s*shift\b|\baffine\b|缩放.{0,4}平移", "binary", "scale_shift"),
    (r"\bgelu\b[^.;\n]{0,30}?\btanh\b\s*(?:approx\w*|近似)|\bgelu\s*\(?\s*tanh\b|\btanh\s*(?:approx\w*|近似)"
     r"[^.;\n]{0,20}?\bgelu\b|approximate\s*=\s*'?tanh", "unary", "gelu_tanh"),
    (r"\bgelu\b|gaussian\s+error\s+linear", "unary", "gelu"),
    (r"\bleaky\s*relu\b", "unary", "leaky_relu"),
    (r"\brelu\s*6\b", "unary", "relu6"),
    (r"\brelu\b|rectified\s+linear|线性整流", "unary", "relu"),
    (r"\bsilu\b|\bswish\b|sigmoid\s+linear\s+unit", "unary", "silu"),
    (r"\bhard\s*swish\b", "unary", "hardswish"),
    (r"\bhard\s*sigmoid\b", "unary", "hardsigmoid"),
    (r"\bhard\s*tanh\b", "unary", "hardtanh"),
    (r"\bsoft\s*plus\b", "unary", "softplus"),
    (r"\bsoft\s*sign\b", "unary", "softsign"),
    (r"\bsigmoid\b|\blogistic\b", "unary", "sigmoid"),
    (r"\btanh\b|hyperbolic\s+tangent|双曲正切", "unary", "tanh"),
    (r"\bmish\b", "unary", "mish"),
    (r"\bselu\b", "unary", "selu"),
    (r"\belu\b|exponential\s+linear\s+unit", "unary", "elu"),
    (r"\bclamp\w*|\bclip\w*|截断|裁剪|限幅|钳位", "unary", "clamp"),
    (r"\babs\b|absolute\s+value|绝对值", "unary", "abs"),
    (r"\bnegat(?:e|es|ion|ive\s+of)\b|取负|相反数", "unary", "neg"),
    (r"\bexp2\b", "unary", "exp2"),
    (r"\bexp\b|\bexponential\b|指数", "unary", "exp"),
    (r"\blog2\b", "unary", "log2"),
    (r"\blog\b|\bln\b|logarithm|对数", "unary", "log"),
    (r"\brsqrt\b|(?:reciprocal|inverse)\s+(?:of\s+(?:the\s+)?)?square\s+root|平方根倒数|倒数平方根", "unary",
     "rsqrt"),
    (r"\bsqrt\b|square\s+root|平方根|开方", "unary", "sqrt"),
    (r"\breciprocal\b|倒数", "unary", "reciprocal"),
    (r"\bsquare[sd]?\b|平方", "unary", "square"),
    (r"\bsine?\b|正弦", "unary", "sin"),
    (r"\bcos(?:ine)?\b|余弦", "unary", "cos"),
    (r"\berf\b|error\s+function", "unary", "erf"),
    (r"\badd(?:s|ed|ing|ition)?\b|\bplus\b|\bsum\s+of\b|相加|加法|加上", "binary", "add"),
    (r"\bsubtract\w*|\bminus\b|\bdifference\b|相减|减法|减去", "binary", "sub"),
    (r"\bmultipl\w*|\bproduct\b|\btimes\b|hadamard|相乘|乘法|乘以|逐元素乘", "binary", "mul"),
    (r"\bdivi(?:de|ded|des|ding|sion)\b|\bratio\b|\bquotient\b|相除|除法|除以", "binary", "div"),
    (r"\bmaximum\s+of\b|element\s*wise\s+max(?:imum)?\b|逐元素最大", "binary", "maximum"),
    (r"\bminimum\s+of\b|element\s*wise\s+min(?:imum)?\b|逐元素最小", "binary", "minimum"),
)
_COMPILED = tuple((re.compile(p, re.I | re.A), kind, fn) for p, kind, fn in _PHRASES)
_GLU = {"swiglu": "silu", "geglu": "gelu", "reglu": "relu"}
_ADDS = ("bias_add", "residual_add", "add")
OP_WORDS: set[str] = set(BY_NAME) | {
    "swiglu", "geglu", "reglu", "leaky", "hard", "gaussian", "linear", "unit", "sum", "plus", "minus",
    "multiply", "divide", "product", "relu6", "gelu_tanh", "hardswish", "approximate", "exponential", "pi",
    "e",
}
_RANGE = re.compile(
    rf"(?:\bto\b|\binto\b|\bwithin\b|\bin\b|\brange\b|\binterval\b|\bbetween\b|区间|范围|到|至|在)\s*(?:of\s*)?"
    rf"[\[(]\s*{_NUM}\s*,\s*{_NUM}\s*[\])]|\bbetween\s+{_NUM}\s+and\s+{_NUM}",
    re.I | re.A,
)


def phrase_text(text: str) -> str:
    """Lower-case text with - and _ turned into spaces, keeping every position."""
    return text.lower().replace("-", " ").replace("_", " ")


def unsupported_op(text: str) -> str | None:
    """Return a label for the first non-elementwise operation the text names, if any."""
    low = phrase_text(text)
    for pattern, label in _UNSUPPORTED:
        match = re.search(pattern, low, re.I | re.A)
        if match:
            return f"{label} ({match.group(0).strip()!r})"
    return None


@dataclass
class OpHit:
    """One operation named in the text."""

    kind: str
    fn: str
    start: int
    end: int
    params: dict[str, float] = field(default_factory=dict)


def clamp_range(text: str) -> tuple[float, float, int, int] | None:
    """Return (low, high, start, end) of a range such as `to [-2, 2]` or `between 0 and 6`."""
    match = _RANGE.search(text)
    if not match:
        return None
    values = [float(v) for v in match.groups() if v is not None]
    return min(values), max(values), match.start(), match.end()


def _param(text: str, pattern: str) -> float | None:
    """Return the number written after a parameter word such as `negative slope`, if any."""
    match = re.search(pattern + rf"\s*(?:=|:|of|is|为|取)?\s*{_NUM}", text, re.I | re.A)
    return float(match.group(1)) if match else None


def find_ops(text: str, bound: tuple[float, float] | None = None) -> list[OpHit]:
    """List the operations text names, in order, longer phrases first so `leaky relu` is not `relu`."""
    low = phrase_text(text)
    hits: list[OpHit] = []
    for pattern, kind, fn in _COMPILED:
        for match in pattern.finditer(low):
            hits.append(OpHit(kind, fn, match.start(), match.end()))
            low = low[: match.start()] + " " * (match.end() - match.start()) + low[match.end():]
    for hit in hits:
        if hit.fn == "leaky_relu":
            slope = _param(text, r"(?:negative\s*[_-]?\s*slope|\bslope|\balpha|负斜率|斜率|α)")
            hit.params = {"negative_slope": slope} if slope is not None else {}
        elif hit.fn == "elu":
            alpha = _param(text, r"(?:\balpha|α)")
            hit.params = {"alpha": alpha} if alpha is not None else {}
        elif hit.fn in ("clamp", "hardtanh"):
            low_key, high_key = ("min", "max") if hit.fn == "clamp" else ("min_val", "max_val")
            lo = bound[0] if bound else _param(text, r"\bmin(?:imum)?(?:_val)?|下界|最小值")
            hi = bound[1] if bound else _param(text, r"\bmax(?:imum)?(?:_val)?|上界|最大值")
            hit.params = {k: v for k, v in ((low_key, lo), (high_key, hi)) if v is not None}
    return sorted(hits, key=lambda h: h.start)


def _call(fn: str, arg: str, params: dict[str, float]) -> str:
    """Render `fn(arg, key=value, ...)` in formula syntax."""
    extra = "".join(f", {k}={v!r}" for k, v in params.items())
    return f"{fn}({arg}{extra})"


def phrase_formula(hits: list[OpHit], inputs: list[str], seen: str) -> tuple[str, str]:
    """Build (formula, name) from the named operations; raise SpecError when it would be a guess."""
    composites = list(dict.fromkeys(h.fn for h in hits if h.kind == "composite"))
    unary = list(dict.fromkeys(h.fn for h in hits if h.kind == "unary"))
    binary = list(dict.fromkeys(h.fn for h in hits if h.kind == "binary"))
    if composites:
        if len(composites) > 1 or unary:
            raise SpecError(f"the text names several operations ({', '.join(composites + unary)}); write the "
                            f"formula, e.g. 'out = silu(gate) * up'. {seen}")
        if "gate" in inputs and "up" in inputs:
            gate, up = "gate", "up"
        elif len(inputs) == 2:
            gate, up = inputs
        else:
            raise SpecError(f"{composites[0]} needs two inputs (gate and up) with shapes. {seen}")
        return f"{_GLU[composites[0]]}({gate}) * {up}", composites[0]
    if not unary and not binary:
        raise SpecError(f"no operation was recognised; {SUPPORTED}. {seen}")
    if len(unary) > 1:
        raise SpecError(f"the text names several operations ({', '.join(unary)}) without saying how they "
                        f"combine; write the formula, e.g. 'out = {unary[-1]}({unary[0]}(x))'. {seen}")
    if any(b in binary for b in _ADDS):
        binary = [next(b for b in _ADDS if b in binary)] + [b for b in binary if b not in _ADDS]
    if len(inputs) == 1:
        if binary:
            raise SpecError(f"the text names {binary[0].replace('_', ' ')} but only one input "
                            f"({inputs[0]}) has a shape. {seen}")
        base, prefix = inputs[0], ""
    else:
        if len(binary) != 1:
            ways = ", ".join(binary)
            what = f"several ways to combine them ({ways})" if binary else "nothing to combine them"
            raise SpecError(f"inputs {', '.join(inputs)} are given but the text names {what}; write the "
                            f"formula, e.g. 'out = {' + '.join(inputs)}'. {seen}")
        base, prefix = _combine(binary[0], inputs, seen)
    if not unary:
        return base, prefix
    hit = next(h for h in hits if h.fn == unary[0])
    return _call(unary[0], base, hit.params), "_".join(p for p in (prefix, unary[0]) if p)


def _combine(kind: str, inputs: list[str], seen: str) -> tuple[str, str]:
    """Return (expression, name) joining the inputs with one binary operation."""
    if kind in _ADDS:
        name = "bias_add" if "bias" in inputs else "residual_add" if "residual" in inputs else "add"
        return " + ".join(inputs), name
    if kind == "mul":
        return " * ".join(inputs), "mul"
    if kind == "scale_shift" and len(inputs) == 3:
        scale = next((n for n in inputs if n.lower() in ("scale", "weight", "gamma", "w", "alpha")), None)
        shift = next((n for n in inputs if n.lower() in ("shift", "bias", "beta", "b")), None)
        if scale and shift:
            x = next(n for n in inputs if n not in (scale, shift))
            return f"{x} * {scale} + {shift}", "scale_shift"
    if len(inputs) == 2 and kind in ("sub", "div", "maximum", "minimum"):
        a, b = inputs
        expr = {"sub": f"{a} - {b}", "div": f"{a} / {b}"}.get(kind, f"{kind}({a}, {b})")
        return expr, kind
    raise SpecError(f"cannot tell how {kind.replace('_', ' ')} combines inputs {', '.join(inputs)}; "
                    f"write the formula, e.g. 'out = x * scale + shift'. {seen}")
