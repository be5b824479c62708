"""The IR's expression tree: references, constants and operator nodes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

# A static attribute: a dim, a flag, a mode string, a dtype name, a tuple of sizes or dims.
Static = int | float | bool | str | tuple[int, ...] | None


@dataclass(frozen=True)
class Ref:
    """A tensor input or a scalar parameter, by name."""

    name: str


@dataclass(frozen=True)
class Const:
    """A literal number (None stands for an optional operand left out)."""

    value: float | int | bool | None


@dataclass(frozen=True)
class Node:
    """An operator from the registry applied to operands, with its attributes."""

    op: str
    args: tuple[Expr, ...]
    # Scalar attributes (negative_slope, eps, min, ...) are expressions: a number or a scalar parameter.
    attrs: tuple[tuple[str, Expr | Static], ...] = ()

    def attr(self, key: str, default: Expr | Static = None) -> Expr | Static:
        """Return an attribute's value, or default when it is not set."""
        for name, value in self.attrs:
            if name == key:
                return value
        return default


Expr = Ref | Const | Node


def children(expr: Expr) -> Iterator[Expr]:
    """Yield the operands and expression-valued attributes of a node."""
    if isinstance(expr, Node):
        yield from expr.args
        for _, value in expr.attrs:
            if isinstance(value, (Ref, Const, Node)):
                yield value


def walk(expr: Expr) -> Iterator[Expr]:
    """Yield every sub-expression, operands before the node that uses them."""
    for child in children(expr):
        yield from walk(child)
    yield expr


def names(expr: Expr) -> list[str]:
    """List the names an expression refers to, in order of first use."""
    found: list[str] = []
    for e in walk(expr):
        if isinstance(e, Ref) and e.name not in found:
            found.append(e.name)
    return found


def ops(expr: Expr) -> list[str]:
    """List the operators an expression applies, innermost first, each once."""
    found: list[str] = []
    for e in walk(expr):
        if isinstance(e, Node) and e.op not in found:
            found.append(e.op)
    return found


def substitute(expr: Expr, mapping: dict[str, Expr]) -> Expr:
    """Replace references by expressions (a catalogue definition applied to the user's operands)."""
    return transform(expr, lambda e: mapping.get(e.name, e) if isinstance(e, Ref) else e)


def transform(expr: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """Rebuild an expression bottom-up, applying fn to every sub-expression."""
    if isinstance(expr, Node):
        args = tuple(transform(a, fn) for a in expr.args)
        attrs = tuple((k, transform(v, fn) if isinstance(v, (Ref, Const, Node)) else v) for k, v in expr.attrs)
        return fn(Node(expr.op, args, attrs))
    return fn(expr)
