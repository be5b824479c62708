"""Read formulas into the IR: the canonical IR text, math notation and PyTorch expressions alike."""

from __future__ import annotations

import ast
import keyword
import math
import re
import warnings
from collections.abc import Callable
from typing import Any

from agent.ir import registry
from agent.ir.bind import DTYPE_NAMES, DType, ShapeTail, Value, bind, fold
from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.types import IRError

_MODULES = {"torch", "F", "nn", "functional", "math", "np", "numpy", "linalg", "special", "tl", "Tensor"}
_CONSTANTS = {"pi": math.pi, "inf": math.inf, "nan": math.nan}
_BINOPS: dict[type[ast.operator], str] = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
                                          ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "logical_and",
                                          ast.BitOr: "logical_or"}
_COMPARE: dict[type[ast.cmpop], str] = {ast.Gt: "gt", ast.GtE: "ge", ast.Lt: "lt", ast.LtE: "le", ast.Eq: "eq",
                                        ast.NotEq: "ne"}
# Tensor methods that are casts or no-ops.
_CAST_METHODS = {"float": "float32", "half": "float16", "bfloat16": "bfloat16", "double": "float64",
                 "long": "int64", "int": "int32", "bool": "bool"}
_IDENTITY_METHODS = {"contiguous", "clone", "detach", "cpu", "cuda"}
_MATH_SYMBOLS = str.maketrans({"×": "*", "·": "*", "⋅": "*", "∗": "*", "−": "-", "÷": "/", "（": "(", "）": ")",
                               "，": ",", "σ": "sigmoid", "√": "sqrt", "²": "**2", "³": "**3", "^": "**"})
_NUMBER = re.compile(r"(?<![\w.])(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_FOLLOWER = re.compile(r"\s*([A-Za-z_]\w*|\()")


class ParseError(IRError):
    """A formula the IR cannot read; the message quotes the part that failed."""


class MissingDim(ParseError):
    """Torch code (`F.softmax(x)`) that names no dim: no shorter part of the text may be read in its place."""



def parse_python(source: str, mode: str = "exec") -> Any:  # ast.Module or ast.Expression, by mode
    """Parse people's text as Python without the SyntaxWarnings (`3x`, `\\d`) Python prints for it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(source, mode=mode)


def math_to_python(text: str) -> str:
    """Turn math spellings into Python syntax: `^`, `×`, `σ`, `√`, implicit products like `1.702x`."""
    text = re.sub(r"([\w)\]])\s*(?:\^\s*\{?\s*[Tt]\s*\}?|ᵀ)(?![\w])", r"\1.T", text)  # k^T, Wᵀ: a transpose
    text = re.sub(r"\|([^|\n]+)\|", r"abs(\1)", text)  # |x|: absolute value in math notation
    text = text.translate(_MATH_SYMBOLS).replace("****", "**")
    text = re.sub(r"sqrt\s*(?=[A-Za-z_\d])(\w+)", r"sqrt(\1)", text)
    pieces, last = [], 0
    for m in _NUMBER.finditer(text):
        follower = _FOLLOWER.match(text, m.end())
        if follower and not keyword.iskeyword(follower.group(1)):
            pieces += [text[last:m.end()], "*"]
            last = m.end()
    return "".join(pieces) + text[last:]


Macro = Callable[[str, list[Value], dict[str, Value], str], "Expr | None"]


def parse_text(text: str, *, math_notation: bool = True, euler: bool = True, macros: Macro | None = None) -> Expr:
    """Parse one expression; math notation allows `^`, `×` and implicit multiplication.

    `macros` expands names that are not IR ops (catalogue entries such as `quick_gelu`) into IR.
    """
    source = math_to_python(text) if math_notation else text
    try:
        tree = parse_python(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise ParseError(f"cannot read {text.strip()!r}: {exc.msg}") from None
    value = _Reader(text.strip(), euler=euler, macros=macros).value(tree.body)
    if not isinstance(value, (Ref, Const, Node)):
        raise ParseError(f"{text.strip()!r} is not an expression of tensors")
    return value


class _Reader:
    """Convert a Python AST into IR values."""

    def __init__(self, text: str, *, euler: bool, macros: Macro | None) -> None:
        self.text = text
        self.euler = euler
        self.macros = macros

    def fail(self, node: ast.AST, why: str) -> ParseError:
        return ParseError(f"in {self.text!r}, {ast.unparse(node)!r}: {why}")

    def value(self, node: ast.AST) -> Value:
        """Return the IR value of an AST node."""
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, "this kind of expression is not supported")
        return method(node)  # type: ignore[no-any-return]

    def expr(self, node: ast.AST) -> Expr:
        value = self.value(node)
        if not isinstance(value, (Ref, Const, Node)):
            raise self.fail(node, "expected a tensor or a number")
        return value

    def _Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, str):
            return node.value
        if node.value is None or isinstance(node.value, (bool, int, float)):
            return Const(node.value)
        raise self.fail(node, "unsupported literal")

    def _Name(self, node: ast.Name) -> Value:
        if node.id in _CONSTANTS:
            return Const(_CONSTANTS[node.id])
        if node.id == "e" and self.euler:
            return Const(math.e)
        if node.id in ("True", "False", "None"):
            return Const({"True": True, "False": False, "None": None}[node.id])
        return Ref(node.id)

    def _Tuple(self, node: ast.Tuple) -> Value:
        return tuple(self.value(e) for e in node.elts)

    _List = _Tuple

    def _Attribute(self, node: ast.Attribute) -> Value:
        path = _dotted(node)
        if path and path[0] in _MODULES:
            if path[-1] in _CONSTANTS or path[-1] == "e":
                return Const(_CONSTANTS.get(path[-1], math.e))
            if path[-1] in DTYPE_NAMES:
                return DType(DTYPE_NAMES[path[-1]])
            raise self.fail(node, "not a value")
        base = self.value(node.value)
        if node.attr in ("values", "data"):
            return base  # max/min/cummax over a dim are read as their values already
        if node.attr in ("T", "mT") and isinstance(base, (Ref, Node)):
            return bind(registry.get("transpose"), [base, Const(-2), Const(-1)], {}, ast.unparse(node))
        raise self.fail(node, f"the attribute .{node.attr} is not supported")

    def _Subscript(self, node: ast.Subscript) -> Value:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            tail = node.slice
            if isinstance(tail, ast.Slice) and tail.upper is None and tail.step is None and tail.lower is not None:
                lower = self.value(tail.lower)
                if isinstance(lower, Const) and isinstance(lower.value, int) and lower.value < 0:
                    return ShapeTail(-lower.value)
            raise self.fail(node, "only x.shape[-k:] is supported; write sizes as numbers")
        base = self.value(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(base, Node) and base.op in ("amax", "amin", "cummax", "cummin") and len(items) == 1:
            index = self.value(items[0])
            if isinstance(index, Const) and index.value == 0:
                return base  # torch.max(x, dim)[0]: the values
        if not isinstance(base, (Ref, Node)):
            raise self.fail(node, "indexing needs a tensor")
        return self._index(node, base, items)

    def _index(self, node: ast.AST, base: Expr, items: list[ast.expr]) -> Expr:
        """Read `s[:, None]` and `x[..., None]` as unsqueeze; other indexing is not in the IR."""
        kinds = []
        for item in items:
            if isinstance(item, ast.Slice) and item.lower is None and item.upper is None and item.step is None:
                kinds.append("all")
            elif isinstance(item, ast.Constant) and item.value is None:
                kinds.append("new")
            elif isinstance(item, ast.Constant) and item.value is Ellipsis:
                kinds.append("rest")
            else:
                raise self.fail(node, "only `:`, `None` and `...` indexing is supported")
        if kinds.count("rest") > 1 or "new" not in kinds:
            raise self.fail(node, "only adding dims with None is supported")
        result = base
        if "rest" in kinds:
            split = kinds.index("rest")
            before, after = kinds[:split], kinds[split + 1:]
            for position, kind in enumerate(before):
                if kind == "new":
                    result = bind(registry.get("unsqueeze"), [result, Const(position)], {}, ast.unparse(node))
            for offset, kind in enumerate(reversed(after)):
                if kind == "new":
                    result = bind(registry.get("unsqueeze"), [result, Const(-1 - offset)], {}, ast.unparse(node))
            return result
        for position, kind in enumerate(kinds):
            if kind == "new":
                result = bind(registry.get("unsqueeze"), [result, Const(position)], {}, ast.unparse(node))
        return result

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if isinstance(operand, Const) and isinstance(operand.value, (int, float)):
                return Const(-operand.value)
            return bind(registry.get("neg"), [operand], {}, ast.unparse(node))
        if isinstance(node.op, (ast.Invert, ast.Not)):
            return bind(registry.get("logical_not"), [operand], {}, ast.unparse(node))
        raise self.fail(node, "unsupported unary operator")

    def _BinOp(self, node: ast.BinOp) -> Value:
        name = _BINOPS.get(type(node.op))
        if name is None:
            raise self.fail(node, "unsupported operator (use + - * / ** @)")
        left, right = self.expr(node.left), self.expr(node.right)
        return bind(registry.get(name), [left, right], {}, ast.unparse(node))

    def _Compare(self, node: ast.Compare) -> Value:
        terms = [self.expr(node.left), *(self.expr(c) for c in node.comparators)]
        parts: list[Expr] = []
        for op, left, right in zip(node.ops, terms, terms[1:], strict=False):
            name = _COMPARE.get(type(op))
            if name is None:
                raise self.fail(node, "unsupported comparison")
            parts.append(bind(registry.get(name), [left, right], {}, ast.unparse(node)))
        result = parts[0]
        for part in parts[1:]:
            result = bind(registry.get("logical_and"), [result, part], {}, ast.unparse(node))
        return result

    def _BoolOp(self, node: ast.BoolOp) -> Value:
        name = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        values = [self.expr(v) for v in node.values]
        result = values[0]
        for v in values[1:]:
            result = bind(registry.get(name), [result, v], {}, ast.unparse(node))
        return result

    def _IfExp(self, node: ast.IfExp) -> Value:
        condition, yes, no = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        return bind(registry.get("where"), [condition, yes, no], {}, ast.unparse(node))

    def _Call(self, node: ast.Call) -> Value:
        call = ast.unparse(node)
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(node, "*args is not supported")
        args = [self.value(a) for a in node.args]
        keywords: dict[str, Value] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.fail(node, "**kwargs is not supported")
            keywords[kw.arg] = self.value(kw.value)
        func = node.func
        path = _dotted(func)
        if path and (len(path) == 1 or path[0] in _MODULES):
            return self._function(node, path, args, keywords, call)
        if isinstance(func, ast.Attribute):
            receiver = self.value(func.value)
            if isinstance(receiver, (Ref, Node, Const)):
                return self._method(node, receiver, func.attr, args, keywords, call)
        raise self.fail(node, "unknown function")

    def _function(self, node: ast.Call, path: list[str], args: list[Value], keywords: dict[str, Value],
                  call: str) -> Value:
        name, module = path[-1], path[0] if len(path) > 1 else ""
        if module in ("math", "np", "numpy") and args and all(isinstance(a, Const) for a in args):
            folded = _math_call(name, args)
            if folded is not None:
                return folded
        if name in ("max", "min"):
            return self._extreme(node, name, args, keywords, call, torch_style=bool(module))
        if name == "float" and not module and len(args) == 1 and isinstance(args[0], str):
            return Const(float(args[0]))
        if name == "sum" and not module and len(args) == 1 and not keywords:
            return bind(registry.get("sum"), args, {}, call)
        if name in ("where",) and len(args) == 3:
            return bind(registry.get("where"), args, keywords, call)
        op = registry.resolve(name)
        if op is not None:
            if op.family in ("softmax", "scan") and op.param("dim") is not None and len(args) < 2 \
                    and "dim" not in keywords and op.param("dim").required:  # type: ignore[union-attr]
                if module:  # torch code: F.softmax(x) picks its axis from the rank (dim 0 of a 3-D input)
                    raise MissingDim(f"{call} gives no dim (torch needs one, or picks it from the input's rank: "
                                     "dim 0 of a 1-D or 3-D input); which dim?")
                keywords = {**keywords, "dim": Const(-1)}  # softmax(...) in math notation: over the last dim
            return bind(op, args, keywords, call)
        expanded = self.macros(name, args, keywords, call) if self.macros else None
        if expanded is None:
            raise self.fail(node, f"{name} is not an operator the IR knows")
        return expanded

    def _extreme(self, node: ast.Call, name: str, args: list[Value], keywords: dict[str, Value], call: str,
                 torch_style: bool) -> Value:
        """Tell the reduction `torch.max(x, dim)` from the elementwise `max(x, y)` and `max(x, 0)`."""
        reduce_name, pair_name = ("amax", "maximum") if name == "max" else ("amin", "minimum")
        if len(args) == 2 and not keywords:
            first, second = args
            if isinstance(first, Const) and isinstance(second, (Ref, Node)):
                first, second = second, first
            if isinstance(second, (Ref, Node)):
                return bind(registry.get(pair_name), [first, second], {}, call)
            numeric = isinstance(second, Const) and isinstance(second.value, (int, float))
            if numeric and (not torch_style or isinstance(second, Const) and isinstance(second.value, float)):
                bound = "min" if name == "max" else "max"  # max(x, 0) keeps x at or above 0
                return bind(registry.get("clamp"), [first], {bound: second}, call)
        if "other" in keywords:
            return bind(registry.get(pair_name), [*args, keywords.pop("other")], keywords, call)
        if len(args) > 1 or "dim" in keywords:
            dim = args[1] if len(args) > 1 else keywords.pop("dim")
            return bind(registry.get(reduce_name), [args[0]], {"dim": dim, **keywords}, call)
        if len(args) == 1:
            return bind(registry.get(reduce_name), args, keywords, call)
        raise self.fail(node, f"{name} needs a tensor")

    def _method(self, node: ast.Call, receiver: Expr, name: str, args: list[Value], keywords: dict[str, Value],
                call: str) -> Value:
        if name in _IDENTITY_METHODS:
            return receiver
        if name in _CAST_METHODS and not args:
            return bind(registry.get("cast"), [receiver, DType(_CAST_METHODS[name])], {}, call)
        if name in ("to", "type") and args:
            return bind(registry.get("cast"), [receiver, args[0]], {}, call)
        if name in ("view", "reshape", "permute") and args and all(isinstance(a, Const) for a in args):
            return bind(registry.get("reshape" if name != "permute" else "permute"), [receiver, tuple(args)], {}, call)
        if name in ("max", "min"):
            return self._extreme(node, name, [receiver, *args], keywords, call, torch_style=True)
        if name == "t" and not args:
            return bind(registry.get("transpose"), [receiver, Const(0), Const(1)], {}, call)
        if name == "clamp_min" and len(args) == 1:
            return bind(registry.get("clamp"), [receiver], {"min": args[0]}, call)
        if name == "clamp_max" and len(args) == 1:
            return bind(registry.get("clamp"), [receiver], {"max": args[0]}, call)
        if name == "masked_fill" and len(args) == 2:
            return bind(registry.get("where"), [args[0], args[1], receiver], {}, call)
        op = registry.resolve(name)
        if op is not None:
            return bind(op, [receiver, *args], keywords, call)
        raise self.fail(node, f"the method .{name}() is not an operator the IR knows")


def _dotted(node: ast.AST) -> list[str]:
    """Return ['torch', 'nn', 'functional', 'gelu'] for a dotted name, [] for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []


def _math_call(name: str, args: list[Value]) -> Const | None:
    """Fold math.sqrt(2 / math.pi) and friends."""
    fn: Any = getattr(math, name, None)
    if fn is None or not callable(fn):
        return None
    try:
        return Const(float(fn(*(a.value for a in args if isinstance(a, Const)))))
    except (TypeError, ValueError, OverflowError):
        return None


__all__ = ["ParseError", "fold", "math_to_python", "parse_text"]
