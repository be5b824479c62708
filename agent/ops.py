"""The catalogue of elementwise functions the offline generator can fuse."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Domain = Literal["any", "positive"]


@dataclass(frozen=True)
class Function:
    """One elementwise function: how Triton and PyTorch spell it, and what it costs."""

    name: str
    arity: int
    triton: str  # format string over {a0}, {a1}, ... and scalar parameter names
    torch: str
    flops: int  # rough floating-point operations per output element
    params: tuple[tuple[str, float], ...] = ()  # scalar parameters with defaults
    helpers: tuple[str, ...] = ()  # names of @triton.jit helpers the template calls
    domain: Domain = "any"  # inputs sampled from (0, inf) when "positive"
    aliases: tuple[str, ...] = field(default=())


# Helpers emitted verbatim into `<op>_triton.py` when an expression needs them.
# tanh and softplus are written with tl.exp so the kernel runs unchanged on CUDA,
# Ascend and the CPU interpreter (libdevice is CUDA-only).
TRITON_HELPERS: dict[str, str] = {
    "_tanh": '''@triton.jit
def _tanh(x):
    """Return tanh(x) computed from exp(-2|x|), which never overflows."""
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x >= 0, t, -t)''',
    "_softplus": '''@triton.jit
def _softplus(x):
    """Return log(1 + exp(x)) without overflow for large x."""
    return tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))''',
}

HELPER_DEPENDENCIES: dict[str, tuple[str, ...]] = {"_softplus": (), "_tanh": ()}

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805

FUNCTIONS: tuple[Function, ...] = (
    # activations
    Function("relu", 1, "tl.maximum({a0}, 0.0)", "torch.relu({a0})", 1),
    Function("relu6", 1, "tl.minimum(tl.maximum({a0}, 0.0), 6.0)", "F.relu6({a0})", 2),
    Function(
        "leaky_relu", 1, "tl.where({a0} >= 0, {a0}, {a0} * {negative_slope})",
        "F.leaky_relu({a0}, {negative_slope})", 2, params=(("negative_slope", 0.01),),
    ),
    Function(
        "gelu", 1, "0.5 * {a0} * (1.0 + tl.erf({a0} * 0.7071067811865476))",
        "F.gelu({a0})", 8, aliases=("gelu_erf",),
    ),
    Function(
        "gelu_tanh", 1,
        "0.5 * {a0} * (1.0 + _tanh(0.7978845608028654 * ({a0} + 0.044715 * {a0} * {a0} * {a0})))",
        "F.gelu({a0}, approximate='tanh')", 12, helpers=("_tanh",),
    ),
    Function("silu", 1, "{a0} * tl.sigmoid({a0})", "F.silu({a0})", 5, aliases=("swish",)),
    Function("sigmoid", 1, "tl.sigmoid({a0})", "torch.sigmoid({a0})", 4),
    Function("tanh", 1, "_tanh({a0})", "torch.tanh({a0})", 6, helpers=("_tanh",)),
    Function("softplus", 1, "_softplus({a0})", "F.softplus({a0})", 6, helpers=("_softplus",)),
    Function(
        "mish", 1, "{a0} * _tanh(_softplus({a0}))", "F.mish({a0})", 13,
        helpers=("_tanh", "_softplus"),
    ),
    Function(
        "elu", 1, "tl.where({a0} > 0, {a0}, {alpha} * (tl.exp({a0}) - 1.0))",
        "F.elu({a0}, {alpha})", 4, params=(("alpha", 1.0),),
    ),
    Function(
        "selu", 1,
        f"{_SELU_SCALE} * tl.where({{a0}} > 0, {{a0}}, {_SELU_ALPHA} * (tl.exp({{a0}}) - 1.0))",
        "F.selu({a0})", 5,
    ),
    Function(
        "hardswish", 1, "{a0} * tl.minimum(tl.maximum({a0} + 3.0, 0.0), 6.0) / 6.0",
        "F.hardswish({a0})", 5,
    ),
    Function(
        "hardsigmoid", 1, "tl.minimum(tl.maximum({a0} / 6.0 + 0.5, 0.0), 1.0)",
        "F.hardsigmoid({a0})", 4,
    ),
    Function(
        "hardtanh", 1, "tl.minimum(tl.maximum({a0}, {min_val}), {max_val})",
        "F.hardtanh({a0}, {min_val}, {max_val})", 2, params=(("min_val", -1.0), ("max_val", 1.0)),
    ),
    Function("softsign", 1, "{a0} / (1.0 + tl.abs({a0}))", "F.softsign({a0})", 3),
    Function(
        "clamp", 1, "tl.minimum(tl.maximum({a0}, {min}), {max})",
        "torch.clamp({a0}, {min}, {max})", 2, params=(("min", -1.0), ("max", 1.0)),
        aliases=("clip",),
    ),
    # plain math
    Function("abs", 1, "tl.abs({a0})", "torch.abs({a0})", 1),
    Function("neg", 1, "(-{a0})", "torch.neg({a0})", 1),
    Function("exp", 1, "tl.exp({a0})", "torch.exp({a0})", 4),
    Function("exp2", 1, "tl.exp2({a0})", "torch.exp2({a0})", 4),
    Function("log", 1, "tl.log({a0})", "torch.log({a0})", 4, domain="positive"),
    Function("log2", 1, "tl.log2({a0})", "torch.log2({a0})", 4, domain="positive"),
    Function("sqrt", 1, "tl.sqrt({a0})", "torch.sqrt({a0})", 4, domain="positive"),
    Function("rsqrt", 1, "tl.rsqrt({a0})", "torch.rsqrt({a0})", 4, domain="positive"),
    Function("reciprocal", 1, "1.0 / {a0}", "torch.reciprocal({a0})", 1, domain="positive"),
    Function("square", 1, "{a0} * {a0}", "torch.square({a0})", 1),
    Function("sin", 1, "tl.sin({a0})", "torch.sin({a0})", 4),
    Function("cos", 1, "tl.cos({a0})", "torch.cos({a0})", 4),
    Function("erf", 1, "tl.erf({a0})", "torch.erf({a0})", 6),
    # binary
    Function("add", 2, "({a0} + {a1})", "({a0} + {a1})", 1),
    Function("sub", 2, "({a0} - {a1})", "({a0} - {a1})", 1),
    Function("mul", 2, "({a0} * {a1})", "({a0} * {a1})", 1),
    Function("div", 2, "({a0} / {a1})", "({a0} / {a1})", 1),
    Function("maximum", 2, "tl.maximum({a0}, {a1})", "torch.maximum({a0}, {a1})", 1, aliases=("max",)),
    Function("minimum", 2, "tl.minimum({a0}, {a1})", "torch.minimum({a0}, {a1})", 1, aliases=("min",)),
)

BY_NAME: dict[str, Function] = {}
for _fn in FUNCTIONS:
    BY_NAME[_fn.name] = _fn
    for _alias in _fn.aliases:
        BY_NAME[_alias] = _fn


def lookup(name: str) -> Function | None:
    """Return the catalogue entry for a function name or alias, if known."""
    return BY_NAME.get(name.lower())


def unary_names() -> list[str]:
    """List the unary function names, for messages about what is supported."""
    return sorted(fn.name for fn in FUNCTIONS if fn.arity == 1 and fn.name != "neg")
