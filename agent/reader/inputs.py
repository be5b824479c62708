"""Turn declarations into inputs with concrete shape cases and dtypes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from agent.reader.bindings import Binding
from agent.reader.declarations import Decl
from agent.reader.errors import SpecQuestion
from agent.reader.lexer import Shape
from agent.spec import too_large


@dataclass
class InputInfo:
    """An input as the text declares it, before its shape cases are resolved."""

    name: str
    shapes: list[Shape] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    dtype_from: str | None = None
    shape_from: str | None = None
    position: int = 0  # where the text first names it, for input order


def merge(decls: list[Decl], output: str | None) -> tuple[dict[str, InputInfo], list[Decl]]:
    """Combine declarations by name; return the named inputs and the declarations without a name."""
    info: dict[str, InputInfo] = {}
    unnamed: list[Decl] = []
    for decl in decls:
        if not decl.names:
            unnamed.append(decl)
            continue
        for name in decl.names:
            if name == output:
                continue
            current = info.setdefault(name, InputInfo(name, position=decl.start))
            if decl.shapes and current.shapes and _same_shapes(current.shapes, decl.shapes):
                # `input (B, N)` in a description and `input [2, 3]` in an Inputs line: the sizes are the shape
                if all(not s.symbols for s in decl.shapes):
                    current.shapes = list(decl.shapes)
            elif decl.shapes and current.shapes and [s.dims for s in current.shapes] != [s.dims for s in decl.shapes]:
                raise SpecQuestion(
                    f"{name} is given two different shapes: {_show(current.shapes)} and {_show(decl.shapes)}; "
                    "which one is it?", example=f"{name} {_show(decl.shapes)}")
            current.shapes = current.shapes or list(decl.shapes)
            current.dtypes = current.dtypes or list(decl.dtypes)
    return info, unnamed


def _same_shapes(one: list[Shape], other: list[Shape]) -> bool:
    """Tell whether two written shapes agree where both give a size (a symbol agrees with any size)."""
    if len(one) != len(other):
        return False
    for a, b in zip(one, other, strict=True):
        if len(a.dims) != len(b.dims):
            return False
        if any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(a.dims, b.dims, strict=True)):
            return False
    return True


def _show(shapes: list[Shape]) -> str:
    return " or ".join(str(list(s.dims)) for s in shapes)


def resolve_shapes(infos: list[InputInfo], bindings: dict[str, Binding]) -> dict[str, list[list[int]]]:
    """Return each input's shape per case: tuple-bound symbols move together, other choices multiply."""
    for info in infos:
        if not info.shapes and info.shape_from:
            source = next((i for i in infos if i.name == info.shape_from), None)
            if source is None or not source.shapes:
                raise SpecQuestion(f"{info.name} has the same shape as {info.shape_from}, which has no shape",
                                   example=f"{info.shape_from} [1024, 1024]")
            info.shapes = source.shapes
    for info in infos:
        if not info.shapes:
            raise SpecQuestion(f"input {info.name} has no shape; what is its shape?",
                               example=f"{info.name} [1024, 1024]")
    alternatives = [i for i in infos if len(i.shapes) > 1]
    counts = {len(i.shapes) for i in alternatives}
    if len(counts) > 1:
        listed = ", ".join(f"{i.name} ({len(i.shapes)})" for i in alternatives)
        raise SpecQuestion(f"inputs list different numbers of shapes: {listed}; shape case k takes the k-th shape of "
                           "each, so they must list the same number", example="x [64, 128] or [256, 512], "
                           "y [64, 128] or [256, 512]")
    alt_count = counts.pop() if counts else 1
    symbols = list(dict.fromkeys(d for i in infos for s in i.shapes for d in s.symbols))
    unbound = [s for s in symbols if s not in bindings]
    if unbound:
        owner = next(i.name for i in infos if any(unbound[0] in s.symbols for s in i.shapes))
        raise SpecQuestion(f"the shape of {owner} uses {', '.join(unbound)} without a value; what size is it?",
                           example=f"{unbound[0]} = 1024 (or several: {unbound[0]} in {{1024, 4096}})")
    groups: dict[str, list[str]] = {}
    for s in symbols:
        groups.setdefault(bindings[s].group or s, []).append(s)
    choices = []
    for members in groups.values():
        length = len(bindings[members[0]].values)
        if any(len(bindings[m].values) != length for m in members):
            raise SpecQuestion(f"{', '.join(members)} are bound together but list different numbers of values")
        choices.append([{m: bindings[m].values[k] for m in members} for k in range(length)])
    assignments = [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*choices)] or [{}]
    result: dict[str, list[list[int]]] = {i.name: [] for i in infos}
    for k in range(alt_count):
        for assignment in assignments:
            for info in infos:
                shape = info.shapes[k] if len(info.shapes) > 1 else info.shapes[0]
                sizes = [_size(d, assignment, info.name) for d in shape.dims]
                problem = too_large(sizes)
                if problem:
                    raise SpecQuestion(f"{info.name} {sizes} has {problem}; is this the shape you meant?",
                                       example=f"{info.name} [1024, 1024]")
                result[info.name].append(sizes)
    return {name: _collapse(shapes) for name, shapes in result.items()}


def _size(dim: int | str, assignment: dict[str, float], owner: str) -> int:
    value = assignment[dim] if isinstance(dim, str) else dim
    if value != int(value) or value < 1:
        raise SpecQuestion(f"{owner} has a size of {value:g}; sizes must be whole numbers of at least 1",
                           example=f"{owner} [1024, 1024]")
    return int(value)


def _collapse(shapes: list[list[int]]) -> list[list[int]]:
    """Keep one shape when every case has the same (an input that does not vary)."""
    return [shapes[0]] if all(s == shapes[0] for s in shapes) else shapes
