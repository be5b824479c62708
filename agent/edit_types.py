"""Decide whether an edit of `_triton.py` is a parameter, interface or logic edit.

The decision is an AST comparison of the old and new `_triton.py`:

- interface: the module-level entry function `def <op>(...)` is missing or its signature (parameters,
  defaults, annotations, return annotation) changed;
- parameter: after blanking the tunable values, the two modules are the same AST. Docstrings are
  stripped first (comments never reach the AST), so an edit with no other difference is a parameter edit;
- logic: anything else.

Tunable values ("slots") are: module-level tunable constants assigned an int literal; the values of
num_warps / num_stages / num_ctas / maxnreg in any call; tunable-named keywords at a kernel launch
`kernel[grid](..., BLOCK_SIZE=...)`; lists of `triton.Config(...)` (autotune configs); the launch grid,
both `kernel[grid]` and the `grid = ...` assignment. A slot may hold numbers, names, arithmetic and calls
to triton.cdiv / min / max / len; a call to anything else must already have been in the old slot.
Only values are blanked: adding or removing a constant or a keyword is a logic edit.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

EditType = Literal["parameter", "interface", "logic"]

# Keyword arguments whose values are launch parameters, not semantics.
_LAUNCH_KEYWORDS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg"})
_TUNABLE_PREFIXES = ("BLOCK", "NUM_", "GROUP", "PROGRAMS", "TILE", "SPLIT")
# Calls a slot may add: they only size the grid, they compute nothing the kernel sees.
_GRID_CALLS = frozenset({"cdiv", "min", "max", "len"})


def classify_edit(old_source: str, new_source: str, entry: str) -> EditType:
    """Compare two versions by AST: only tunable values changed means a parameter edit."""
    try:
        old_tree, new_tree = ast.parse(old_source), ast.parse(new_source)
    except SyntaxError:
        # Nothing can be proven about a file that does not parse; the rule check reports it.
        return "logic"
    new_signature = _signature(new_tree, entry)
    if new_signature is None or new_signature != _signature(old_tree, entry):
        return "interface"
    old_blanked, new_blanked = _Tunables(), _Tunables()
    old_dump = ast.dump(old_blanked.visit(_strip_docstrings(old_tree)))
    new_dump = ast.dump(new_blanked.visit(_strip_docstrings(new_tree)))
    if old_dump != new_dump:
        return "logic"
    # Equal dumps put the same slots in the same order, so they pair up one to one.
    if all(new.fits(old) for old, new in zip(old_blanked.slots, new_blanked.slots, strict=True)):
        return "parameter"
    return "logic"


def signature_of(source: str, entry: str) -> str | None:
    """Return a comparable form of the entry point's signature, or None if it is missing or does not parse."""
    try:
        return _signature(ast.parse(source), entry)
    except SyntaxError:
        return None


def find_entry(tree: ast.Module, entry: str) -> ast.FunctionDef | None:
    """Return the module-level definition of the entry function, or None if there is none."""
    found = None
    for node in tree.body:
        # The last definition wins, as it does when the module runs.
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            found = node
    return found


def _signature(tree: ast.Module, entry: str) -> str | None:
    node = find_entry(tree, entry)
    if node is None:
        return None
    return ast.dump(node.args) + ast.dump(node.returns or ast.Constant(None))


def _strip_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def _is_tunable_name(name: str) -> bool:
    return name.isupper() and (name.startswith(_TUNABLE_PREFIXES) or name.endswith("_SIZE"))


def _is_int_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


@dataclass(frozen=True)
class _Slot:
    """One blanked tunable value: its exact form, and whether the new one may differ from the old."""

    kind: str
    dump: str
    simple: bool  # only numbers, names and allowed calls (for a constant: an int literal)
    calls: frozenset[str]  # the other calls it holds, by AST dump

    def fits(self, old: _Slot) -> bool:
        """Tell whether this new value may replace the old one in a parameter edit."""
        if self.dump == old.dump:
            return True
        return self.simple and old.simple and self.calls <= old.calls


class _Tunables(ast.NodeTransformer):
    """Replace each tunable value by a placeholder and keep the values aside as slots."""

    def __init__(self) -> None:
        self.slots: list[_Slot] = []
        self._grid_names: set[str] = {"grid"}

    def visit_Module(self, node: ast.Module) -> ast.AST:
        # A name that is launched with, `kernel[g](...)`, is a grid wherever it is assigned.
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Subscript):
                if isinstance(sub.func.slice, ast.Name):
                    self._grid_names.add(sub.func.slice.id)
        for statement in node.body:
            self._blank_constant(statement)
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in self._grid_names:
                node.value = self._slot("grid", node.value)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        launch = isinstance(node.func, ast.Subscript)
        if isinstance(node.func, ast.Subscript):
            node.func.slice = self._slot("grid", node.func.slice)
        for keyword in node.keywords:
            name = keyword.arg
            if name and (name in _LAUNCH_KEYWORDS or (launch and _is_tunable_name(name))):
                keyword.value = self._slot(f"keyword {name}", keyword.value)
        return self.generic_visit(node)

    def visit_List(self, node: ast.List) -> ast.AST:
        if node.elts and all(_is_config_call(element) for element in node.elts):
            return self._slot("configs", node)
        return self.generic_visit(node)

    def visit_Tuple(self, node: ast.Tuple) -> ast.AST:
        if node.elts and all(_is_config_call(element) for element in node.elts):
            return self._slot("configs", node)
        return self.generic_visit(node)

    def _blank_constant(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            if isinstance(statement.target, ast.Name) and _is_tunable_name(statement.target.id):
                statement.value = self._slot("constant", statement.value, literal=True)
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
            if isinstance(target, ast.Name) and _is_tunable_name(target.id):
                statement.value = self._slot("constant", value, literal=True)
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                # BLOCK_M, BLOCK_N = 64, 128
                for index, (name, element) in enumerate(zip(target.elts, value.elts, strict=True)):
                    if isinstance(name, ast.Name) and _is_tunable_name(name.id):
                        value.elts[index] = self._slot("constant", element, literal=True)

    def _slot(self, kind: str, value: ast.expr, literal: bool = False) -> ast.expr:
        if literal:
            simple, calls = _is_int_literal(value), frozenset[str]()
        else:
            found = _configs_calls(value) if kind == "configs" else _simple_calls(value)
            simple, calls = found is not None, found or frozenset()
        self.slots.append(_Slot(kind, ast.dump(value), simple, calls))
        return ast.Constant(value=f"<{kind}>")


def _is_config_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "Config") or (
        isinstance(func, ast.Attribute) and func.attr == "Config"
        and isinstance(func.value, ast.Name) and func.value.id == "triton"
    )


def _configs_calls(node: ast.expr) -> frozenset[str] | None:
    """Return the other calls in a list of triton.Config, or None if a config holds more than tunables."""
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    calls: frozenset[str] = frozenset()
    for config in node.elts:
        if not isinstance(config, ast.Call):
            return None
        values: list[ast.expr] = list(config.args[1:])
        if config.args:
            kwargs = config.args[0]
            # The dict names the constexprs a config sets: each must be a tunable, or it could switch semantics.
            if not isinstance(kwargs, ast.Dict):
                return None
            for key in kwargs.keys:
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_tunable_name(key.value)):
                    return None
            values += kwargs.values
        for keyword in config.keywords:
            if keyword.arg not in _LAUNCH_KEYWORDS:
                return None  # pre_hook and the like run code
            values.append(keyword.value)
        for value in values:
            found = _simple_calls(value)
            if found is None:
                return None
            calls |= found
    return calls


def _is_grid_call(node: ast.Call) -> bool:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in _GRID_CALLS
    return isinstance(func, ast.Attribute) and func.attr == "cdiv" and isinstance(func.value, ast.Name) \
        and func.value.id == "triton"


def _simple_calls(node: ast.expr) -> frozenset[str] | None:
    """Return the calls other than the grid helpers in an expression of numbers and names, else None."""
    if isinstance(node, ast.Constant):
        number = isinstance(node.value, int | float) and not isinstance(node.value, bool)
        return frozenset() if number or node.value is None else None
    if isinstance(node, ast.Name):
        return frozenset()
    if isinstance(node, ast.Attribute):
        return _simple_calls(node.value)
    if isinstance(node, ast.Subscript):
        # meta["BLOCK_SIZE"], x.shape[0]
        index = frozenset[str]() if isinstance(node.slice, ast.Constant) else _simple_calls(node.slice)
        value = _simple_calls(node.value)
        return None if index is None or value is None else index | value
    if isinstance(node, ast.Call) and not _is_grid_call(node):
        return frozenset({ast.dump(node)})
    parts: list[ast.expr]
    if isinstance(node, ast.Call):
        parts = [*node.args, *(keyword.value for keyword in node.keywords)]
    elif isinstance(node, ast.Tuple | ast.List):
        parts = list(node.elts)
    elif isinstance(node, ast.BinOp):
        parts = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        parts = [node.operand]
    elif isinstance(node, ast.Lambda):
        parts = [node.body]  # grid = lambda meta: (...)
    else:
        return None
    calls: frozenset[str] = frozenset()
    for part in parts:
        found = _simple_calls(part)
        if found is None:
            return None
        calls |= found
    return calls
