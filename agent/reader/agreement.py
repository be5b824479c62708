"""Tell whether two readings compute the same values, on random inputs at small stand-in shapes."""

from __future__ import annotations

import math

import torch

from agent.ir import registry
from agent.ir.evaluate import evaluate
from agent.ir.expr import Const, Expr, Node, Ref
from agent.ir.index_inputs import index_inputs
from agent.ir.infer import infer, torch_dtype
from agent.ir.types import IRError, ScalarType, TensorType, ValueType

_SMALL = (3, 5, 7, 11, 13, 17, 19, 23, 29, 31)
_MAX_EVAL_ELEMENTS = 1 << 18


def positive_inputs(expr: Expr) -> set[str]:
    """Return the inputs that feed, through elementwise ops, an operand defined only for positive values."""
    found: set[str] = set()

    def visit(e: Expr, positive: bool) -> None:
        if isinstance(e, Ref) and positive:
            found.add(e.name)
        if isinstance(e, Node):
            op = registry.get(e.op)
            exponent = e.args[1] if e.op == "pow" else None
            whole = isinstance(exponent, Const) and isinstance(exponent.value, (int, float)) \
                and float(exponent.value).is_integer()
            fractional = e.op == "pow" and not whole
            for param, arg in zip(op.operands, e.args, strict=False):
                needs = positive or param.name in op.positive or e.op == "div" and param.name == "other" or (
                    fractional and param.name == "input")
                # Through elementwise ops a need reaches the inputs; other ops name their own (kl_div's target).
                visit(arg, needs and op.family == "elementwise" or param.name in op.positive)

    visit(expr, False)
    return found



def product_inputs(expr: Expr) -> set[str]:
    """Return the inputs multiplied together along a dim (prod, cumprod), directly or through elementwise ops."""
    found: set[str] = set()

    def visit(e: Expr, multiplied: bool) -> None:
        if isinstance(e, Ref) and multiplied:
            found.add(e.name)
        if isinstance(e, Node):
            elementwise = registry.get(e.op).family == "elementwise"
            for arg in e.args:
                visit(arg, e.op in ("prod", "cumprod") or multiplied and elementwise)

    visit(expr, False)
    return found


def small_types(types: dict[str, ValueType]) -> dict[str, ValueType]:
    """Map each distinct size above 8 to a distinct small odd size, consistently across inputs."""
    sizes = sorted({d for t in types.values() if isinstance(t, TensorType) for d in t.shape if d > 8})
    mapping = {size: _SMALL[i % len(_SMALL)] + 2 * len(_SMALL) * (i // len(_SMALL)) for i, size in enumerate(sizes)}
    return {n: TensorType(t.dtype, tuple(mapping.get(d, d) for d in t.shape)) if isinstance(t, TensorType) else t
            for n, t in types.items()}


def sample(types: dict[str, ValueType], expr: Expr, seed: int) -> dict[str, object]:
    """Draw float64 inputs (positive where needed, valid indices for integer inputs) for one seed."""
    generator = torch.Generator().manual_seed(seed)
    positive = positive_inputs(expr)
    integers = {name: found.high({n: t.shape for n, t in types.items() if isinstance(t, TensorType)})
                for name, found in index_inputs(expr, types).items()}
    env: dict[str, object] = {}
    for name, t in types.items():
        if isinstance(t, ScalarType):
            env[name] = t.value
        elif name in integers or t.dtype in ("int64", "int32"):
            high = integers.get(name, 4)
            env[name] = torch.randint(0, max(1, high), t.shape, generator=generator)
        elif t.dtype == "bool":
            env[name] = torch.rand(t.shape, generator=generator) > 0.5
        elif name in positive:
            env[name] = torch.rand(t.shape, generator=generator, dtype=torch.float64) * 3.75 + 0.25
        else:
            env[name] = torch.randn(t.shape, generator=generator, dtype=torch.float64)
    return env


def agree(a: Expr, b: Expr, types: dict[str, ValueType], seeds: int = 3) -> tuple[bool, str]:
    """Evaluate both readings on the same random inputs; return whether they agree and a one-line figure."""
    small_enough = all(not isinstance(t, TensorType) or t.numel <= _MAX_EVAL_ELEMENTS for t in types.values())
    # At the spec's own shapes when they are small: a parameter may be tied to a size (d the head dimension).
    for candidate in ((types,) if small_enough else (small_types(types),)):
        try:
            infer(a, candidate)
            infer(b, candidate)
        except IRError:
            continue
        worst = 0.0
        for seed in range(seeds):
            env = sample(candidate, _combined(a, b), seed)
            try:
                left, right = evaluate(a, env), evaluate(b, env)
            except (RuntimeError, TypeError, ValueError) as exc:
                return False, f"cannot evaluate both: {exc}"
            if left.shape != right.shape:
                return False, f"they give different shapes ({list(left.shape)} and {list(right.shape)})"
            left, right = left.double(), right.double()
            both_nan = torch.isnan(left) & torch.isnan(right)
            close = torch.isclose(left, right, rtol=1e-6, atol=1e-6) | both_nan
            if not bool(close.all()):
                diff = (left - right).abs()
                diff[both_nan] = 0
                return False, f"they differ by up to {float(diff.nan_to_num(math.inf).max()):.3g}"
            finite = (left - right).abs()[~both_nan]
            worst = max(worst, float(finite.max()) if finite.numel() else 0.0)
        return True, f"they agree on {seeds} random inputs (max difference {worst:.1e})"
    return False, "they cannot both apply to these inputs"


def _combined(a: Expr, b: Expr) -> Expr:
    """Return one expression holding both, so inputs are drawn for the needs of either."""
    return Node("add", (Node("sum", (a,)), Node("sum", (b,))))


def dtype_of(name: str) -> torch.dtype:
    """Return the torch dtype of an IR dtype name."""
    return torch_dtype(name)


__all__ = ["Const", "agree", "positive_inputs", "sample", "small_types"]
