"""Decide whether an edit of `_triton.py` is a parameter, interface or logic edit."""

from __future__ import annotations

import ast
from typing import Literal

EditType = Literal["parameter", "interface", "logic"]

# Keyword arguments whose values are launch parameters, not semantics.
_LAUNCH_KEYWORDS = {"num_warps", "num_stages", "num_ctas", "maxnreg"}


def classify_edit(old_source: str, new_source: str, entry: str) -> EditType:
    """Compare two versions by AST: only tunable numbers changed means a parameter edit."""
    old_tree, new_tree = ast.parse(old_source), ast.parse(new_source)
    if _signature(old_tree, entry) != _signature(new_tree, entry):
        return "interface"
    if ast.dump(_Tunables().visit(old_tree)) == ast.dump(_Tunables().visit(new_tree)):
        return "parameter"
    return "logic"


def signature_of(source: str, entry: str) -> str | None:
    """Return a comparable form of the entry point's parameters, or None if it is missing."""
    return _signature(ast.parse(source), entry)


def _signature(tree: ast.Module, entry: str) -> str | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return ast.dump(node.args) + ast.dump(node.returns or ast.Constant(None))
    return None


def _is_tunable_name(name: str) -> bool:
    return name.isupper() and (name.startswith(("BLOCK", "NUM_", "GROUP")) or name.endswith("_SIZE"))


class _Tunables(ast.NodeTransformer):
    """Blank out the numbers a parameter edit may change."""

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if targets and all(_is_tunable_name(t) for t in targets) and isinstance(node.value, ast.Constant):
            node.value = ast.Constant(value="<tunable>")
        return self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        if node.arg and (node.arg in _LAUNCH_KEYWORDS or _is_tunable_name(node.arg)):
            if isinstance(node.value, ast.Constant):
                node.value = ast.Constant(value="<tunable>")
        return self.generic_visit(node)
