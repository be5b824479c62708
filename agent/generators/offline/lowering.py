"""Lower an elementwise IR expression to Triton statements over float32 registers."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.generators.offline.triton_ops import HELPERS, TRITON, UNSUPPORTED_REASON
from agent.ir import registry
from agent.ir.expr import Const, Expr, Node, Ref, Static
from agent.ir.printer import number, to_text
from agent.ir.registry import REQUIRED


class NotLowerable(ValueError):
    """An expression the elementwise generator cannot write; the message names the nodes."""


@dataclass
class InputView:
    """An input as the kernel sees it: how many trailing size-1 dims its IR view adds (per-channel scale)."""

    name: str
    trailing: int = 0


@dataclass
class Lowered:
    """The kernel body for an elementwise expression."""

    body: list[str]
    helpers: list[str]
    views: dict[str, InputView] = field(default_factory=dict)
    cast: str | None = None  # the dtype a cast at the root stores the output in


def unsupported(expr: Expr) -> list[str]:
    """Return a line per node the elementwise generator cannot lower (empty when it can lower them all)."""
    found: list[str] = []

    def visit(e: Expr, root: bool) -> None:
        if not isinstance(e, Node):
            return
        if _view_of(e) is not None:
            return
        if e.op == "cast" and root:
            visit(e.args[0], False)
            return
        op = registry.get(e.op)
        if e.op not in TRITON or op.family != "elementwise":
            reason = UNSUPPORTED_REASON.get(op.family, f"{op.family} ops are not offline yet")
            found.append(f"{to_text(e)} ({e.op}: {reason})")
            return
        if e.op == "pow" and _number(e.args[1]) is None and not isinstance(e.args[1], (Ref, Node)):
            found.append(f"{to_text(e)} (pow: the exponent must be a number or a tensor)")
        for a in e.args:
            visit(a, False)

    visit(expr, True)
    return found


def _view_of(e: Expr) -> tuple[str, int] | None:
    """Return (input, trailing 1s) when e is an input viewed with trailing unsqueezes (`s[..., None, None]`)."""
    trailing = 0
    while isinstance(e, Node) and e.op == "unsqueeze" and e.attr("dim") == -1:
        trailing += 1
        e = e.args[0]
    return (e.name, trailing) if isinstance(e, Ref) and trailing else None


def lower(expr: Expr, output: str, inputs: list[str]) -> Lowered:
    """Return Triton statements computing `output` from inputs loaded as float32 (NotLowerable otherwise)."""
    problems = unsupported(expr)
    if problems:
        raise NotLowerable("; ".join(problems))
    lowered = Lowered(body=[], helpers=[])
    cast = None
    if isinstance(expr, Node) and expr.op == "cast":
        cast, expr = str(expr.attr("dtype")), expr.args[0]
    lowered.cast = cast
    temps: dict[Expr, str] = {}

    def emit(e: Expr, root: bool = False) -> str:
        if isinstance(e, Ref):
            return e.name
        if isinstance(e, Const):
            return _literal(e.value)
        view = _view_of(e)
        if view is not None:
            name, trailing = view
            lowered.views[name] = InputView(name, trailing)
            return name
        assert isinstance(e, Node)
        if e in temps:
            return temps[e]
        code = _apply(e, [emit(a) for a in e.args], lowered)
        if _is_leaf_code(code) or root:
            return code
        temp = f"t{len(temps)}"
        temps[e] = temp
        lowered.body.append(f"{temp} = {code}")
        return temp

    result = emit(expr, root=True)
    lowered.body.append(f"{output} = {result}")
    for name in inputs:
        lowered.views.setdefault(name, InputView(name))
    lowered.helpers = sorted(dict.fromkeys(lowered.helpers))
    return lowered


def _apply(node: Node, args: list[str], lowered: Lowered) -> str:
    spelling = TRITON[node.op]
    op = registry.get(node.op)
    values: dict[str, str] = {f"a{i}": a for i, a in enumerate(args)}
    for param in op.attributes:
        value = node.attr(param.name, None if param.default == REQUIRED else param.default)
        values[param.name] = _attr(value)
    if node.op == "pow":
        return _power(node, args, lowered)
    template = spelling.pick(values)
    used = [helper for helper in spelling.helpers if f"{helper}(" in template]  # the chosen spelling's own
    lowered.helpers.extend(used)
    for helper in used:
        lowered.helpers.extend(HELPERS[helper].needs)
    return template.format(**values)


def _power(node: Node, args: list[str], lowered: Lowered) -> str:
    """Small integer powers as products, other integers through |x| with the sign put back, ±0.5 as square roots,
    the rest as exp(y·log x) (NaN for a negative base, as in PyTorch)."""
    exponent = _number(node.args[1])
    base = args[0]
    if exponent == 0:
        return f"tl.full({base}.shape, 1.0, tl.float32)"
    if exponent is not None and exponent == int(exponent) and abs(exponent) <= 8:
        product = " * ".join([base] * int(abs(exponent)))
        return f"({product})" if exponent > 0 else f"(1.0 / ({product}))"
    if exponent is not None and exponent == int(exponent):  # x ** 10 of a negative x is real: no log of it
        magnitude = f"tl.exp({exponent:g} * tl.log(tl.abs({base})))"
        return f"tl.where({base} < 0, -{magnitude}, {magnitude})" if int(exponent) % 2 else magnitude
    if exponent == 0.5:
        return f"tl.sqrt({base})"
    if exponent == -0.5:
        return f"tl.rsqrt({base})"
    return f"tl.exp({args[1]} * tl.log({base}))"


def _number(e: Expr) -> float | None:
    return float(e.value) if isinstance(e, Const) and isinstance(e.value, (int, float)) else None


def _attr(value: Expr | Static) -> str:
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, Const):
        return _literal(value.value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _literal(value)
    return "None" if value is None else str(value)


def _literal(value: float | int | bool | None) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if value is None:
        return "None"
    return number(float(value))


def _is_leaf_code(code: str) -> bool:
    return code.replace(".", "").replace("_", "").replace("-", "").isalnum()
