"""How each elementwise IR op is written in Triton, over float32 values (format strings over {a0}, {a1}, attrs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


@dataclass(frozen=True)
class Helper:
    """A @triton.jit helper emitted into `<op>_triton.py` when an expression needs it."""

    source: str
    needs: tuple[str, ...] = ()


# tanh and softplus are written with tl.exp so the kernel runs unchanged on CUDA, Ascend and the CPU
# interpreter (libdevice is CUDA-only).
HELPERS: dict[str, Helper] = {
    "_tanh": Helper('''@triton.jit
def _tanh(x):
    """Return tanh(x) computed from exp(-2|x|), which never overflows."""
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x >= 0, t, -t)'''),
    # GELU's Gaussian CDF as 1 - erfc(z)/2 or erfc(z)/2, with erfc by Abramowitz-Stegun 7.1.26 (abs error 1.5e-7,
    # under fp32's own: 6.4e-7 from exact over [-12, 12] in fp32, against torch's fp32 GELU's 5.7e-7, and accurate
    # relative to the value in the negative tail, where 1 + erf(z) cancels). One division and one exp2 against
    # libdevice's erf: a T5-small up-projection with its GELU (x [8192, 512], w [2048, 512] fp16) ran 0.0469 ms
    # against 0.0538 on an H200, where the erf outweighed the product's last K steps.
    "_gelu_erf": Helper('''@triton.jit
def _gelu_erf(x):
    """Return x * Phi(x), the exact (erf) GELU, within 1e-6 of it in float32."""
    z = tl.abs(x) * 0.7071067811865476
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erfc = poly * tl.exp2(z * z * -1.4426950408889634)
    return x * tl.where(x >= 0, 1.0 - 0.5 * erfc, 0.5 * erfc)'''),
    # atan by Cephes' atanf: reduced to |z| <= tan(pi/8) around 0, pi/4 or pi/2, then a degree-9 odd polynomial
    # (relative error about 1e-7 in float32). NaN falls through every comparison and stays NaN.
    "_atan": Helper('''@triton.jit
def _atan(x):
    """Return atan(x) from a range reduction and Cephes' polynomial."""
    a = tl.abs(x)
    big = a > 2.414213562373095
    mid = (a > 0.41421356237309503) & (a <= 2.414213562373095)
    base = tl.where(big, 1.5707963267948966, tl.where(mid, 0.7853981633974483, 0.0))
    z = tl.where(big, -1.0 / tl.maximum(a, 1e-30), tl.where(mid, (a - 1.0) / (a + 1.0), a))
    zz = z * z
    p = (((8.05374449538e-2 * zz - 1.38776856032e-1) * zz + 1.99777106478e-1) * zz - 3.33329491539e-1) * zz * z + z
    r = base + p
    return tl.where(x < 0, -r, r)'''),
    "_softplus": Helper('''@triton.jit
def _softplus(x):
    """Return log(1 + exp(x)) without overflow for large x."""
    return tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))'''),
}


@dataclass(frozen=True)
class TritonOp:
    """One op's Triton spelling; `choose` picks a variant from the rendered attribute values."""

    template: str
    helpers: tuple[str, ...] = ()
    choose: Callable[[dict[str, str]], str] | None = None

    def pick(self, values: dict[str, str]) -> str:
        """Return the template for these attribute values."""
        return self.choose(values) if self.choose else self.template


def _gelu(values: dict[str, str]) -> str:
    if values.get("approximate") == "tanh":
        return "0.5 * {a0} * (1.0 + _tanh(0.7978845608028654 * ({a0} + 0.044715 * {a0} * {a0} * {a0})))"
    return "_gelu_erf({a0})"


def nan_max(a: str, b: str) -> str:
    """Return Triton code for the larger of a and b that keeps NaN (torch.clamp, relu, maximum do; tl.maximum not)."""
    return f"tl.maximum({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"


def nan_min(a: str, b: str) -> str:
    """Return Triton code for the smaller of a and b that keeps NaN, as torch does."""
    return f"tl.minimum({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"


def _clamp(values: dict[str, str]) -> str:
    low, high = values.get("min", "None"), values.get("max", "None")
    if low != "None" and high != "None":
        return nan_min(nan_max("{a0}", "{min}"), "{max}")
    return nan_max("{a0}", "{min}") if low != "None" else nan_min("{a0}", "{max}")


TRITON: dict[str, TritonOp] = {
    "relu": TritonOp(nan_max("{a0}", "0.0")),
    "relu6": TritonOp(nan_min(nan_max("{a0}", "0.0"), "6.0")),
    "leaky_relu": TritonOp("tl.where({a0} >= 0, {a0}, {a0} * {negative_slope})"),
    "gelu": TritonOp("", ("_tanh", "_gelu_erf"), _gelu),
    "silu": TritonOp("{a0} * tl.sigmoid({a0})"),
    "sigmoid": TritonOp("tl.sigmoid({a0})"),
    "logsigmoid": TritonOp("-_softplus(-{a0})", ("_softplus",)),
    "tanh": TritonOp("_tanh({a0})", ("_tanh",)),
    "softplus": TritonOp("tl.where({a0} * {beta} > {threshold}, {a0}, _softplus({a0} * {beta}) / {beta})",
                         ("_softplus",)),
    "mish": TritonOp("{a0} * _tanh(_softplus({a0}))", ("_tanh", "_softplus")),
    "elu": TritonOp("tl.where({a0} > 0, {a0}, {alpha} * (tl.exp({a0}) - 1.0))"),
    "celu": TritonOp(nan_max("{a0}", "0.0") + " + tl.minimum(0.0, {alpha} * (tl.exp({a0} / {alpha}) - 1.0))"),
    "selu": TritonOp(f"{_SELU_SCALE} * tl.where({{a0}} > 0, {{a0}}, {_SELU_ALPHA} * (tl.exp({{a0}}) - 1.0))"),
    "hardswish": TritonOp("{a0} * tl.minimum(tl.maximum({a0} + 3.0, 0.0), 6.0) / 6.0"),
    "hardsigmoid": TritonOp(nan_min(nan_max("{a0} / 6.0 + 0.5", "0.0"), "1.0")),
    "hardtanh": TritonOp(nan_min(nan_max("{a0}", "{min_val}"), "{max_val}")),
    "softsign": TritonOp("{a0} / (1.0 + tl.abs({a0}))"),
    "tanhshrink": TritonOp("{a0} - _tanh({a0})", ("_tanh",)),
    "hardshrink": TritonOp("tl.where(tl.abs({a0}) <= {lambd}, 0.0, {a0})"),  # NaN is not <= anything: kept
    "softshrink": TritonOp("tl.where({a0} > {lambd}, {a0} - {lambd}, tl.where({a0} < -{lambd}, {a0} + {lambd}, "
                           "{a0} * 0.0))"),  # NaN * 0 stays NaN
    "clamp": TritonOp("", choose=_clamp),
    "abs": TritonOp("tl.abs({a0})"),
    "neg": TritonOp("(-{a0})"),
    "exp": TritonOp("tl.exp({a0})"),
    "exp2": TritonOp("tl.exp2({a0})"),
    "expm1": TritonOp("(tl.exp({a0}) - 1.0)"),
    "log": TritonOp("tl.log({a0})"),
    "log2": TritonOp("tl.log2({a0})"),
    "log10": TritonOp("(tl.log({a0}) * 0.4342944819032518)"),
    "log1p": TritonOp("tl.log(1.0 + {a0})"),
    "sqrt": TritonOp("tl.sqrt({a0})"),
    "rsqrt": TritonOp("tl.rsqrt({a0})"),
    "reciprocal": TritonOp("(1.0 / {a0})"),
    "square": TritonOp("({a0} * {a0})"),
    "sin": TritonOp("tl.sin({a0})"),
    "cos": TritonOp("tl.cos({a0})"),
    "tan": TritonOp("(tl.sin({a0}) / tl.cos({a0}))"),
    "erf": TritonOp("tl.erf({a0})"),
    "atan": TritonOp("_atan({a0})", ("_atan",)),
    "sinh": TritonOp("(0.5 * (tl.exp({a0}) - tl.exp(-{a0})))"),
    "cosh": TritonOp("(0.5 * (tl.exp({a0}) + tl.exp(-{a0})))"),
    # asinh by its logarithm on |x| (no cancellation for negative x), the sign put back
    "asinh": TritonOp("tl.where({a0} < 0, -1.0, 1.0) * tl.log(tl.abs({a0}) + tl.sqrt({a0} * {a0} + 1.0))"),
    "sinc": TritonOp("tl.where({a0} == 0, 1.0, tl.sin(3.141592653589793 * {a0}) / (3.141592653589793 * {a0}))"),
    "trunc": TritonOp("tl.where({a0} >= 0, tl.floor({a0}), tl.ceil({a0}))"),
    "frac": TritonOp("({a0} - tl.where({a0} >= 0, tl.floor({a0}), tl.ceil({a0})))"),
    "sign": TritonOp("tl.where({a0} > 0, 1.0, tl.where({a0} < 0, -1.0, 0.0))"),
    "floor": TritonOp("tl.floor({a0})"),
    "ceil": TritonOp("tl.ceil({a0})"),
    "add": TritonOp("({a0} + {a1})"),
    "sub": TritonOp("({a0} - {a1})"),
    "mul": TritonOp("({a0} * {a1})"),
    "div": TritonOp("({a0} / {a1})"),
    "pow": TritonOp(""),  # lowered by lowering._power
    "maximum": TritonOp(nan_max("{a0}", "{a1}")),
    "minimum": TritonOp(nan_min("{a0}", "{a1}")),
    "gt": TritonOp("({a0} > {a1})"),
    "ge": TritonOp("({a0} >= {a1})"),
    "lt": TritonOp("({a0} < {a1})"),
    "le": TritonOp("({a0} <= {a1})"),
    "eq": TritonOp("({a0} == {a1})"),
    "ne": TritonOp("({a0} != {a1})"),
    "logical_and": TritonOp("({a0} & {a1})"),
    "logical_or": TritonOp("({a0} | {a1})"),
    "logical_not": TritonOp("(~{a0})"),
    "where": TritonOp("tl.where({a0}, {a1}, {a2})"),
    "cast": TritonOp("{a0}.to(tl.{dtype}).to(tl.float32)"),
}

# Why the elementwise engine stops at a family (reductions, softmax, norms, scans and losses go to the row engine).
UNSUPPORTED_REASON = {
    "matmul": "matrix products are written by the matmul engine, not inside an elementwise chain",
    "conv": "convolutions are written by the convolution engine, not inside an elementwise chain",
    "attention": "attention is written by the attention engine, not inside an elementwise chain",
    "data-movement": "layout changes and indexing are read but not generated offline yet",
    "elementwise": "this elementwise op has no offline Triton spelling yet",
}
