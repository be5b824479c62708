"""Elementwise ops: activations, math functions, arithmetic, comparisons, selection and casts."""

from __future__ import annotations

from agent.ir.costs import free, per_output
from agent.ir.registry import OpDef, Param, register

X = Param("input", "tensor")
Y = Param("other", "tensor")


def _unary(name: str, torch: str, flops: float, *attrs: Param, spellings: tuple[str, ...] = (),
           positive: bool = False, summary: str = "") -> OpDef:
    return OpDef(name, "elementwise", (X, *attrs), torch, per_output(flops), spellings=spellings,
                 positive=("input",) if positive else (), summary=summary)


def _binary(name: str, infix: str | None, torch: str, flops: float = 1, spellings: tuple[str, ...] = ()) -> OpDef:
    return OpDef(name, "elementwise", (X, Y), torch, per_output(flops), spellings=spellings, infix=infix)


register(
    # activations
    _unary("relu", "torch.relu", 1),
    _unary("relu6", "F.relu6", 2),
    _unary("leaky_relu", "F.leaky_relu", 2, Param("negative_slope", "scalar", 0.01)),
    _unary("gelu", "F.gelu", 8, Param("approximate", "str", "none", ("none", "tanh"))),
    _unary("silu", "F.silu", 5),
    _unary("sigmoid", "torch.sigmoid", 4, spellings=("expit",)),
    _unary("logsigmoid", "F.logsigmoid", 6),
    _unary("tanh", "torch.tanh", 6),
    _unary("softplus", "F.softplus", 6, Param("beta", "scalar", 1.0), Param("threshold", "scalar", 20.0)),
    _unary("mish", "F.mish", 13),
    _unary("elu", "F.elu", 4, Param("alpha", "scalar", 1.0)),
    _unary("celu", "F.celu", 4, Param("alpha", "scalar", 1.0)),
    _unary("selu", "F.selu", 5),
    _unary("hardswish", "F.hardswish", 5),
    _unary("hardsigmoid", "F.hardsigmoid", 4),
    _unary("hardtanh", "F.hardtanh", 2, Param("min_val", "scalar", -1.0), Param("max_val", "scalar", 1.0)),
    _unary("softsign", "F.softsign", 3),
    _unary("tanhshrink", "F.tanhshrink", 7),
    _unary("hardshrink", "F.hardshrink", 2, Param("lambd", "scalar", 0.5)),
    _unary("softshrink", "F.softshrink", 3, Param("lambd", "scalar", 0.5)),
    _unary("clamp", "torch.clamp", 2, Param("min", "scalar", None), Param("max", "scalar", None),
           spellings=("clip",)),
    # math
    _unary("abs", "torch.abs", 1, spellings=("absolute",)),
    OpDef("neg", "elementwise", (X,), "torch.neg", per_output(1), spellings=("negative",), infix="-"),
    _unary("exp", "torch.exp", 4),
    _unary("exp2", "torch.exp2", 4),
    _unary("expm1", "torch.expm1", 4),
    _unary("log", "torch.log", 4, positive=True),
    _unary("log2", "torch.log2", 4, positive=True),
    _unary("log10", "torch.log10", 4, positive=True),
    _unary("log1p", "torch.log1p", 4, positive=True),
    _unary("sqrt", "torch.sqrt", 4, positive=True),
    _unary("rsqrt", "torch.rsqrt", 4, positive=True),
    _unary("reciprocal", "torch.reciprocal", 1, positive=True),
    _unary("square", "torch.square", 1),
    _unary("sin", "torch.sin", 4),
    _unary("cos", "torch.cos", 4),
    _unary("tan", "torch.tan", 6),
    _unary("erf", "torch.erf", 6),
    _unary("sign", "torch.sign", 1),
    _unary("floor", "torch.floor", 1),
    _unary("ceil", "torch.ceil", 1),
    _unary("round", "torch.round", 1),
    _unary("trunc", "torch.trunc", 1),
    _unary("frac", "torch.frac", 2),
    # inverse and hyperbolic trigonometry, and special functions (torch.special's names are spellings)
    _unary("asin", "torch.asin", 10, spellings=("arcsin",)),
    _unary("acos", "torch.acos", 10, spellings=("arccos",)),
    _unary("atan", "torch.atan", 10, spellings=("arctan",)),
    _unary("sinh", "torch.sinh", 5),
    _unary("cosh", "torch.cosh", 5),
    _unary("asinh", "torch.asinh", 6, spellings=("arcsinh",)),
    _unary("acosh", "torch.acosh", 6, spellings=("arccosh",)),
    _unary("atanh", "torch.atanh", 6, spellings=("arctanh",)),
    _unary("sinc", "torch.sinc", 6),
    _unary("logit", "torch.logit", 5),
    _unary("lgamma", "torch.lgamma", 20, spellings=("gammaln",), positive=True),
    _unary("digamma", "torch.digamma", 20, spellings=("psi",), positive=True),
    _unary("erfinv", "torch.erfinv", 20),
    _unary("i0", "torch.i0", 20),
    # arithmetic
    _binary("add", "+", "torch.add"),
    _binary("sub", "-", "torch.sub", spellings=("subtract",)),
    _binary("mul", "*", "torch.mul", spellings=("multiply",)),
    _binary("div", "/", "torch.div", spellings=("divide", "true_divide")),
    _binary("pow", "**", "torch.pow", flops=4),
    _binary("maximum", None, "torch.maximum", spellings=("fmax",)),
    _binary("minimum", None, "torch.minimum", spellings=("fmin",)),
    # comparisons and logic: bool results, for masks and where
    _binary("gt", ">", "torch.gt", spellings=("greater",)),
    _binary("ge", ">=", "torch.ge", spellings=("greater_equal",)),
    _binary("lt", "<", "torch.lt", spellings=("less",)),
    _binary("le", "<=", "torch.le", spellings=("less_equal",)),
    _binary("eq", "==", "torch.eq", spellings=("equal",)),
    _binary("ne", "!=", "torch.ne", spellings=("not_equal",)),
    _binary("logical_and", "&", "torch.logical_and"),
    _binary("logical_or", "|", "torch.logical_or"),
    OpDef("logical_not", "elementwise", (X,), "torch.logical_not", per_output(1), infix="~"),
    OpDef("where", "elementwise", (Param("condition", "tensor"), X, Y), "torch.where", per_output(1)),
    OpDef("cast", "elementwise", (X, Param("dtype", "dtype")), "{input}.to(torch.{dtype})", free(),
          spellings=("to",), summary="convert to another dtype"),
)
