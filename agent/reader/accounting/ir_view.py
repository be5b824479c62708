"""What a reading's IR shows of the text: its ops (with what each implies), attributes, numbers and names."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from agent.ir import registry
from agent.ir.expr import Const, Expr, Node, Ref, walk
from agent.ir.parse import parse_text
from agent.reader.accounting.lexicon import ATTR_WORDS, IMPLIED
from agent.reading import Reading


@dataclass
class IRView:
    """The facts of one reading the accounting pass checks words against."""

    ops: set[str] = field(default_factory=set)  # the IR's ops, and what each implies
    own_ops: set[str] = field(default_factory=set)  # the IR's ops alone
    attrs: dict[str, list[object]] = field(default_factory=dict)  # attribute name -> values set in the IR
    numbers: list[float] = field(default_factory=list)  # constants, attribute numbers, parameter values
    names: set[str] = field(default_factory=set)  # inputs, scalar parameters, the output
    tensor_names: set[str] = field(default_factory=set)  # the tensor inputs and the output
    dims: set[int] = field(default_factory=set)  # every size of every input shape
    nests: list[tuple[str, ...]] = field(default_factory=list)  # chains of one-operand ops, outermost first

    def has_any(self, ops: frozenset[str] | tuple[str, ...]) -> bool:
        """Tell whether the reading computes any of these ops (or ops that imply them)."""
        return any(op in self.ops for op in ops)

    def has_number(self, value: float) -> bool:
        """Tell whether the reading uses this number anywhere (a constant, an attribute, a size)."""
        candidates = [*self.numbers, *map(float, self.dims)]
        return any(math.isclose(value, n, rel_tol=1e-9, abs_tol=1e-12) for n in candidates)

    def attr_is(self, name: str, value: object) -> bool:
        """Tell whether an op of the IR sets this attribute to this value, or takes it with this as its default."""
        for got in self.attrs.get(name, []):
            if _same(got, value):
                return True
        return any(_same(p.default, value) for op in self.ops if registered(op)
                   for p in registry.get(op).attributes if name in (p.name, *p.aliases))


def view_of(reading: Reading) -> IRView:
    """Build the view of a reading from its IR text, its inputs, parameters and output."""
    facts = IRView()
    facts.tensor_names = {i.name for i in reading.inputs} | {reading.output}
    facts.names = facts.tensor_names | set(reading.params)
    facts.dims = {d for i in reading.inputs for shape in i.shapes for d in shape}
    facts.numbers = [float(v) for v in reading.params.values()]
    if not reading.ir:
        return facts
    expr = parse_text(reading.ir)
    for node in walk(expr):
        if isinstance(node, Const) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            facts.numbers.append(float(node.value))
        if not isinstance(node, Node):
            continue
        facts.ops.add(node.op)
        for name, value in node.attrs:
            plain = value.value if isinstance(value, Const) else value
            facts.attrs.setdefault(name, []).append(plain)
            if isinstance(plain, (int, float)) and not isinstance(plain, bool):
                facts.numbers.append(float(plain))
            if isinstance(plain, tuple):
                facts.numbers += [float(v) for v in plain if isinstance(v, (int, float))]
            if isinstance(plain, str) and plain in ATTR_WORDS:
                facts.ops.add(ATTR_WORDS[plain])
            if isinstance(value, Ref):
                facts.names.add(value.name)
    facts.own_ops = set(facts.ops)
    facts.ops |= _implied(facts.ops)
    facts.nests = _unary_chains(expr)
    return facts


def _implied(ops: set[str]) -> set[str]:
    closure, frontier = set(ops), list(ops)
    while frontier:
        for implied in IMPLIED.get(frontier.pop(), ()):
            if implied not in closure:
                closure.add(implied)
                frontier.append(implied)
    return closure


def _unary_chains(expr: Expr) -> list[tuple[str, ...]]:
    """Return each maximal chain of ops with one tensor operand (`sqrt(exp(x))` is ('sqrt', 'exp'))."""
    chains: list[tuple[str, ...]] = []

    def visit(node: Expr, chain: tuple[str, ...]) -> None:
        if not isinstance(node, Node):
            if len(chain) > 1:
                chains.append(chain)
            return
        tensors = [a for a in node.args if isinstance(a, (Node, Ref))]
        if len(tensors) == 1:
            visit(tensors[0], (*chain, node.op))
            return
        if len(chain) > 1:
            chains.append(chain)
        for arg in tensors:
            visit(arg, ())

    visit(expr, ())
    return chains


def registered(op: str) -> bool:
    """Tell whether an op name is the IR registry's (the view also holds words a reading implies)."""
    try:
        registry.get(op)
    except (KeyError, ValueError):
        return False
    return True


def _same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (str(a).lower() == str(b).lower())
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return str(a).strip("'\"").lower() == str(b).strip("'\"").lower()
