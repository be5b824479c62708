"""A module written in prose (`nn.LayerNorm(1024, eps=1e-12) on x`, `y = nn.LeakyReLU(0.2)(x)`) as its functional call.

People name the module they would build. Its constructor's positional arguments mean what torch's own signature
says (`LayerNorm(normalized_shape, eps, ...)`), so the call is bound with `inspect.signature` of the torch class,
not by position guesses, and written as the `F.` call the reader reads, with every value kept: a normalized shape
stays a literal, which the IR checks against the input's last dims. A call that does not parse, holds anything but
constants, or names a module with no functional form here is left as written (the reading then asks about it).
"""

from __future__ import annotations

import ast
import inspect
import re
from typing import Any

# Module class -> functional name, and the constructor arguments that change nothing the kernel computes.
_FUNCTIONAL: dict[str, str] = {
    "LayerNorm": "layer_norm", "RMSNorm": "rms_norm", "Softmax": "softmax", "LogSoftmax": "log_softmax",
    "Softmin": "softmin", "LeakyReLU": "leaky_relu", "ELU": "elu", "CELU": "celu", "GELU": "gelu",
    "Hardtanh": "hardtanh", "Softplus": "softplus", "Hardshrink": "hardshrink", "Softshrink": "softshrink",
    "ReLU": "relu", "ReLU6": "relu6", "SiLU": "silu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Mish": "mish",
    "SELU": "selu", "Hardswish": "hardswish", "Hardsigmoid": "hardsigmoid", "Softsign": "softsign",
    "Tanhshrink": "tanhshrink", "LogSigmoid": "logsigmoid",
}
# inplace changes where the result is written; the affine flags pick a weight and bias that start as ones and
# zeros (the identity), which the reading without them computes; device and dtype place the parameters.
_IGNORED = {"inplace", "elementwise_affine", "bias", "device", "dtype"}
_SHAPED = {"LayerNorm", "RMSNorm"}  # normalized_shape: an int means a 1-tuple, as in torch
_START = re.compile(r"(?<![\w.])(?:torch\.)?nn\.(" + "|".join(sorted(_FUNCTIONAL, key=len, reverse=True)) + r")\s*\(")
_APPLIED_TO = re.compile(r"\s+(?:on|to|of|applied\s+to|over)\s+(?:the\s+)?(?:input\s+)?(?:tensor\s+)?"
                         r"([A-Za-z_]\w*)\b")


def functional_modules(text: str) -> str:
    """Rewrite each module constructor applied to a named tensor as the functional call it computes."""
    out: list[str] = []
    position = 0
    for match in _START.finditer(text):
        if match.start() < position:
            continue
        close = _closing(text, match.end() - 1)
        if close is None:
            continue
        rewritten = _rewrite(match.group(1), text[match.start():close + 1], text, close + 1)
        if rewritten is None:
            continue
        call, end = rewritten
        out.append(text[position:match.start()])
        out.append(call)
        position = end
    return "".join(out) + text[position:]


def _rewrite(cls: str, constructor: str, text: str, after: int) -> tuple[str, int] | None:
    """Return the functional call and where the consumed text ends, or None to leave it as written."""
    keywords = _bound(cls, constructor)
    if keywords is None:
        return None
    applied = re.match(r"\s*\(\s*([A-Za-z_]\w*)\s*\)", text[after:])
    if applied is not None:
        operand, end, tail = applied.group(1), after + applied.end(), ""
    else:
        named = _APPLIED_TO.match(text[after:])
        if named is None:
            return None
        operand, end, tail = named.group(1), after + named.end(), f", {named.group(1)}"  # the name keeps its shape
    if cls in ("Softmax", "LogSoftmax", "Softmin") and "dim" not in keywords:
        return None  # torch picks the axis from the input's rank there: the reading asks which
    args = [operand]
    if cls in _SHAPED:
        shape = keywords.pop("normalized_shape", None)
        if shape is None:
            return None
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        args.append(repr(dims))
    args += [f"{k}={v!r}" for k, v in keywords.items()]
    return f"F.{_FUNCTIONAL[cls]}({', '.join(args)})" + tail, end


def _bound(cls: str, constructor: str) -> dict[str, Any] | None:
    """Bind the constructor's constant arguments by torch's signature; None when they are not all constants."""
    try:
        call = ast.parse(constructor.strip(), mode="eval").body
        if not isinstance(call, ast.Call):
            return None
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    except (SyntaxError, ValueError):
        return None
    from torch import nn  # the reader has torch already; a text with no module spelling never gets here

    try:
        bound = inspect.signature(getattr(nn, cls)).bind(*args, **kwargs)
    except TypeError:
        return None  # a wrong argument count is the reading's question, with the call quoted as written
    return {k: v for k, v in bound.arguments.items() if k not in _IGNORED and v is not None}


def _closing(text: str, opening: int) -> int | None:
    """Return the index of the parenthesis closing the one at `opening`."""
    depth = 0
    for i in range(opening, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None
