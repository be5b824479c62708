"""Elementwise expressions: parse a formula, render it for Triton and PyTorch."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from agent.ops import Function, lookup, unary_names


class FormulaError(ValueError):
    """A formula uses syntax or functions the offline generator does not know."""


@dataclass(frozen=True)
class Name:
    """A tensor input or a scalar parameter, by name."""

    id: str


@dataclass(frozen=True)
class Const:
    """A literal number."""

    value: float


@dataclass(frozen=True)
class Call:
    """A catalogue function applied to arguments; scalar parameters by keyword."""

    fn: str
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...] = ()


Expr = Name | Const | Call

_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
# Python equivalents used to fold calls whose arguments are all numbers.
_FOLD: dict[str, Callable[..., float]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "neg": lambda a: -a, "sqrt": math.sqrt, "exp": math.exp,
    "log": math.log, "tanh": math.tanh, "abs": abs, "reciprocal": lambda a: 1.0 / a,
    "rsqrt": lambda a: 1.0 / math.sqrt(a), "square": lambda a: a * a,
}
_MAX_POWER = 8


def _normalize(text: str) -> str:
    """Turn common math spellings into Python syntax."""
    text = text.replace("^", "**").replace("×", "*").replace("·", "*").replace("−", "-")
    text = re.sub(r"[（]", "(", text)
    text = re.sub(r"[）]", ")", text)
    # x[c] or scale[c] style indexing names the broadcast axis; the shapes carry it
    text = re.sub(r"\b([A-Za-z_]\w*)\s*\[\s*[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\s*\]", r"\1", text)
    return text.strip()


def parse_formula(text: str) -> Expr:
    """Parse a right-hand side such as `gelu(x + bias)` into an expression tree."""
    source = _normalize(text)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"cannot read the formula {text!r}: {exc.msg}") from exc
    return _convert(tree.body, text)


def _convert(node: ast.AST, text: str) -> Expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return Const(float(node.value))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return Const(_CONSTANTS[node.id])
        return Name(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in ("math", "torch", "np") and node.attr in _CONSTANTS:
            return Const(_CONSTANTS[node.attr])
    if isinstance(node, ast.UnaryOp):
        operand = _convert(node.operand, text)
        if isinstance(node.op, ast.USub):
            return _folded(Call("neg", (operand,)), text)
        if isinstance(node.op, ast.UAdd):
            return operand
    if isinstance(node, ast.BinOp):
        left, right = _convert(node.left, text), _convert(node.right, text)
        if isinstance(node.op, ast.Pow):
            return _power(left, right, text)
        op = _BINOPS.get(type(node.op))
        if op is not None:
            return _folded(Call(op, (left, right)), text)
    if isinstance(node, ast.Call):
        return _call(node, text)
    raise FormulaError(f"the formula {text!r} uses {ast.unparse(node)!r}, which is not supported")


def _power(base: Expr, exponent: Expr, text: str) -> Expr:
    if not isinstance(exponent, Const):
        raise FormulaError(f"in {text!r} the exponent must be a number")
    value = exponent.value
    if value == 0.5:
        return Call("sqrt", (base,))
    if value == -0.5:
        return Call("rsqrt", (base,))
    if value == int(value) and 1 <= abs(value) <= _MAX_POWER:
        result: Expr = base
        for _ in range(int(abs(value)) - 1):
            result = Call("mul", (result, base))
        if value < 0:
            return _folded(Call("reciprocal", (result,)), text)
        return result
    raise FormulaError(f"in {text!r} only integer powers up to {_MAX_POWER} and ±0.5 are supported")


def _call(node: ast.Call, text: str) -> Expr:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name is None:
        raise FormulaError(f"cannot read the call {ast.unparse(node)!r} in {text!r}")
    fn = lookup(name)
    if fn is None:
        raise FormulaError(
            f"the function {name!r} in {text!r} is not known to the offline generator; "
            f"known: {', '.join(unary_names())}, plus + - * / ** maximum minimum"
        )
    args = [_convert(a, text) for a in node.args]
    keywords = {kw.arg: _convert(kw.value, text) for kw in node.keywords if kw.arg}
    # Extra positional arguments fill the function's scalar parameters in order.
    tensor_args, extra = args[: fn.arity], args[fn.arity :]
    if len(tensor_args) != fn.arity:
        raise FormulaError(f"{fn.name} takes {fn.arity} argument(s) in {text!r}")
    param_names = [p for p, _ in fn.params]
    if len(extra) > len(param_names):
        raise FormulaError(f"{fn.name} got too many arguments in {text!r}")
    kwargs = dict(zip(param_names, extra, strict=False))
    for key, value in keywords.items():
        if key not in param_names:
            raise FormulaError(f"{fn.name} has no parameter {key!r} in {text!r}")
        kwargs[key] = value
    if fn.name in ("maximum", "minimum") and all(isinstance(a, Const) for a in tensor_args):
        raise FormulaError(f"{fn.name} of two numbers in {text!r} is not an elementwise operator")
    return _folded(Call(fn.name, tuple(tensor_args), tuple(sorted(kwargs.items()))), text)


def _folded(call: Call, text: str) -> Expr:
    """Replace a call on numbers alone by its value (sqrt(2/pi) -> 0.7978...)."""
    if not all(isinstance(a, Const) for a in call.args) or call.kwargs:
        return call
    fold = _FOLD.get(call.fn)
    if fold is None:
        raise FormulaError(f"{call.fn} of a number in {text!r} is not an elementwise operator")
    try:
        return Const(float(fold(*[a.value for a in call.args if isinstance(a, Const)])))
    except (ValueError, ZeroDivisionError) as exc:
        raise FormulaError(f"cannot evaluate {to_formula(call)} in {text!r}: {exc}") from exc


def names(expr: Expr) -> list[str]:
    """List the names an expression refers to, in order of first use."""
    found: list[str] = []

    def visit(e: Expr) -> None:
        if isinstance(e, Name) and e.id not in found:
            found.append(e.id)
        elif isinstance(e, Call):
            for a in e.args:
                visit(a)
            for _, v in e.kwargs:
                visit(v)

    visit(expr)
    return found


def positive_names(expr: Expr) -> set[str]:
    """Return the names that feed a function defined only for positive inputs."""
    result: set[str] = set()

    def visit(e: Expr, positive: bool) -> None:
        if isinstance(e, Name) and positive:
            result.add(e.id)
        elif isinstance(e, Call):
            fn = _fn(e.fn)
            for i, a in enumerate(e.args):
                needs = positive or fn.domain == "positive" or (e.fn == "div" and i == 1)
                visit(a, needs)

    visit(expr, False)
    return result


def flops(expr: Expr) -> int:
    """Estimate floating-point operations per output element."""
    if isinstance(expr, Call):
        return _fn(expr.fn).flops + sum(flops(a) for a in expr.args)
    return 0


def helpers(expr: Expr) -> list[str]:
    """List the Triton helper functions an expression needs."""
    found: list[str] = []
    if isinstance(expr, Call):
        for h in _fn(expr.fn).helpers:
            if h not in found:
                found.append(h)
        for a in expr.args:
            for h in helpers(a):
                if h not in found:
                    found.append(h)
    return sorted(found)


def to_triton(expr: Expr) -> str:
    """Render as a Triton expression over fp32 values of the same names."""
    return _render(expr, "triton")


def to_triton_statements(expr: Expr, result: str) -> list[str]:
    """Render as Triton assignments, naming each argument a function uses twice."""
    lines: list[str] = []

    def hoist(e: Expr) -> Expr:
        if not isinstance(e, Call):
            return e
        args = tuple(hoist(a) for a in e.args)
        call = Call(e.fn, args, e.kwargs)
        if e.fn in _INFIX:
            return call
        named = []
        for a in args:
            if isinstance(a, Call):
                temp = f"t{len(lines)}"
                lines.append(f"{temp} = {_strip(_render(a, 'triton'))}")
                a = Name(temp)
            named.append(a)
        return Call(e.fn, tuple(named), e.kwargs)

    final = hoist(expr)
    lines.append(f"{result} = {_strip(_render(final, 'triton'))}")
    return lines


_INFIX = ("add", "sub", "mul", "div")


def _strip(code: str) -> str:
    """Drop one pair of outer parentheses that wraps the whole expression."""
    if code.startswith("(") and code.endswith(")"):
        depth = 0
        for i, ch in enumerate(code):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and i < len(code) - 1:
                return code
        return code[1:-1]
    return code


def to_torch(expr: Expr) -> str:
    """Render as an unfused PyTorch expression (the baseline)."""
    return _render(expr, "torch")


def to_formula(expr: Expr) -> str:
    """Render in the canonical formula syntax that parse_formula reads back."""
    if isinstance(expr, Name):
        return expr.id
    if isinstance(expr, Const):
        return _number(expr.value)
    infix = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
    if expr.fn in infix:
        return f"({to_formula(expr.args[0])} {infix[expr.fn]} {to_formula(expr.args[1])})"
    parts = [to_formula(a) for a in expr.args] + [f"{k}={to_formula(v)}" for k, v in expr.kwargs]
    return f"{expr.fn}({', '.join(parts)})"


def _fn(name: str) -> Function:
    fn = lookup(name)
    if fn is None:  # parse_formula only builds known calls
        raise FormulaError(f"unknown function {name!r}")
    return fn


def _number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value)}.0"
    return repr(value)


def _render(expr: Expr, backend: str) -> str:
    if isinstance(expr, Name):
        return expr.id
    if isinstance(expr, Const):
        return _number(expr.value)
    fn = _fn(expr.fn)
    args = [_render(a, backend) for a in expr.args]
    if backend == "torch" and fn.name in ("maximum", "minimum"):
        consts = [a for a in expr.args if isinstance(a, Const)]
        if consts:  # torch.maximum wants two tensors; clamp takes a number
            tensor = args[0] if not isinstance(expr.args[0], Const) else args[1]
            side = "min" if fn.name == "maximum" else "max"
            return f"torch.clamp({tensor}, {side}={_number(consts[0].value)})"
    values = {f"a{i}": a for i, a in enumerate(args)}
    given = dict(expr.kwargs)
    for pname, default in fn.params:
        values[pname] = _render(given[pname], backend) if pname in given else _number(default)
    template = fn.triton if backend == "triton" else fn.torch
    return template.format(**values)
