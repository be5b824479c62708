"""Render IR expressions as readable PyTorch, and as the IR's own canonical text."""

from __future__ import annotations

import re
import string
from typing import Literal

from agent.ir import registry
from agent.ir.expr import Const, Expr, Node, Ref, Static
from agent.ir.registry import REQUIRED, OpDef, Param, is_default

Style = Literal["torch", "ir"]
# Python operator precedence, higher binds tighter.
_PRECEDENCE = {"|": 3, "&": 4, "==": 2, "!=": 2, "<": 2, "<=": 2, ">": 2, ">=": 2, "+": 6, "-": 6, "*": 7, "/": 7,
               "@": 7, "**": 9}
_UNARY = 8
_ATOM = 10
_FIELD = re.compile(r"\{(\w+)\}")


def number(value: float | int | bool | None) -> str:
    """Render a literal so that Python reads back the same value."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return f"float('{value}')"
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value)}.0"
    return repr(value)


def to_torch(expr: Expr) -> str:
    """Render one PyTorch expression (operands repeated where a template uses them twice)."""
    return _render(expr, "torch")[0]


def to_text(expr: Expr) -> str:
    """Render the canonical IR text, which `agent.ir.parse.parse_text` reads back to the same tree."""
    return _render(expr, "ir")[0]


def to_statements(expr: Expr, result: str) -> list[str]:
    """Render PyTorch assignments ending in `result = ...`, naming operands a template uses twice."""
    lines: list[str] = []

    def hoist(e: Expr) -> Expr:
        if not isinstance(e, Node):
            return e
        e = Node(e.op, tuple(hoist(a) for a in e.args), e.attrs)
        op = registry.get(e.op)
        fields = _FIELD.findall(op.torch)
        named = []
        for param, arg in zip(op.operands, e.args, strict=False):
            if fields.count(param.name) > 1 and isinstance(arg, Node):
                temp = f"t{len(lines)}"
                lines.append(f"{temp} = {to_torch(arg)}")
                arg = Ref(temp)
            named.append(arg)
        return Node(e.op, tuple(named), e.attrs)

    lines.append(f"{result} = {to_torch(hoist(expr))}")
    return lines


def _render(expr: Expr, style: Style) -> tuple[str, int]:
    """Return the code of expr and its precedence."""
    if isinstance(expr, Ref):
        return expr.name, _ATOM
    if isinstance(expr, Const):
        code = number(expr.value)
        negative = isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool) and expr.value < 0
        return code, _UNARY if negative else _ATOM
    op = registry.get(expr.op)
    if op.infix:
        return _infix(expr, op, style)
    if style == "ir" or "{" not in op.torch:
        callee = op.name if style == "ir" else op.torch
        return f"{callee}({', '.join(_call_arguments(expr, op, style))})", _ATOM
    return _template(expr, op), _ATOM


def _infix(expr: Node, op: OpDef, style: Style) -> tuple[str, int]:
    assert op.infix is not None
    if len(expr.args) == 1:
        code, prec = _render(expr.args[0], style)
        return f"{op.infix}{_wrap(code, prec, _UNARY)}", _UNARY
    precedence = _PRECEDENCE[op.infix]
    (left, lp), (right, rp) = (_render(a, style) for a in expr.args)
    if op.infix == "**":  # right-associative, and binds tighter than a unary minus on its left
        left, right = _wrap(left, lp, precedence + 1), _wrap(right, rp, _UNARY)
    else:
        left, right = _wrap(left, lp, precedence), _wrap(right, rp, precedence + 1)
    return f"{left} {op.infix} {right}", precedence


def _wrap(code: str, precedence: int, needed: int) -> str:
    return f"({code})" if precedence < needed else code


def _call_arguments(expr: Node, op: OpDef, style: Style) -> list[str]:
    """Render operands positionally while nothing was skipped, then everything else by keyword."""
    given = dict(expr.attrs)
    operands = iter(expr.args)
    parts: list[str] = []
    positional = True
    for param in op.signature:
        if param.operand:
            arg = next(operands, Const(None))
            if param.kind == "tensors":
                items = [_render(a, style)[0] for a in expr.args]
                parts.append(f"[{', '.join(items)}]")
                operands = iter(())
                continue
            if isinstance(arg, Const) and arg.value is None:
                positional = False
                continue
            code = _render(arg, style)[0]
            parts.append(code if positional else f"{param.name}={code}")
            continue
        value = given.get(param.name, param.default)
        if param.default != REQUIRED and is_default(value, param.default):
            positional = False
            continue
        parts.append(f"{param.name}={_attribute(param, value, style)}")
        positional = False
    if style == "ir":  # attributes outside the signature (layer_norm's literal normalized_shape, checked later)
        known = {p.name for p in op.signature}
        for key, value in expr.attrs:
            if key not in known:
                parts.append(f"{key}={_attribute(Param(key, 'ints'), value, style)}")
    return parts


def _attribute(param: Param, value: Expr | Static, style: Style) -> str:
    """Render an attribute value as Python source."""
    if isinstance(value, (Ref, Const, Node)):
        return _render(value, style)[0]
    if param.kind == "dtype" and style == "torch":
        return f"torch.{value}"
    if isinstance(value, tuple):
        return f"({', '.join(str(v) for v in value)}{',' if len(value) == 1 else ''})"
    if isinstance(value, float):
        return number(value)
    return repr(value)


def _template(expr: Node, op: OpDef) -> str:
    """Fill a custom PyTorch template; an operand used before `.` or `[` is wrapped when it is an infix."""
    given = dict(expr.attrs)
    values: dict[str, str] = {}
    operands = list(expr.args)
    for param in op.signature:
        if param.operand:
            arg = operands.pop(0) if operands else Const(None)
            code, prec = _render(arg, "torch")
            values[param.name] = _wrap(code, prec, _ATOM)
        else:
            value = given.get(param.name, param.default)
            values[param.name] = str(value) if param.kind == "dtype" else _attribute(param, value, "torch")
    return string.Formatter().vformat(op.torch, (), values)
