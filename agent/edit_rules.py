"""Check that an edit touches only what its edit type allows."""

from __future__ import annotations

import ast

from agent.edit_types import EditType, find_entry

_OTHER_ROLES = ("baseline", "accuracy", "performance")


def check_edit_rule(edit_type: EditType, old_files: dict[str, str], new_files: dict[str, str], op: str) -> str | None:
    """Return why the new files break the rule of their edit type, or None if they keep it."""
    triton_name = f"{op}_triton.py"
    if edit_type == "parameter":
        changed = sorted(
            name for name in old_files.keys() | new_files.keys()
            if name != triton_name and old_files.get(name) != new_files.get(name)
        )
        if changed:
            return f"a parameter edit may change only {triton_name}, but {', '.join(changed)} changed too"
        return None
    names = [f"{op}_{role}.py" for role in ("triton", *_OTHER_ROLES)]
    missing = [name for name in names if name not in new_files]
    if missing:
        article = "an" if edit_type == "interface" else "a"
        return f"{article} {edit_type} edit must regenerate all four files, but {', '.join(missing)} is absent"
    trees: dict[str, ast.Module] = {}
    for name in names:
        try:
            trees[name] = ast.parse(new_files[name])
        except SyntaxError as error:
            return f"{name} does not parse: {error.msg} (line {error.lineno})"
    baseline_name = f"{op}_baseline.py"
    parameters: dict[str, str | None] = {}
    for name in (triton_name, baseline_name):
        parameters[name] = entry_parameters(trees[name], op)
        if parameters[name] is None:
            return f"{name} does not define the entry point {op}() at module level"
    if parameters[triton_name] != parameters[baseline_name]:
        return f"the entry point {op}() takes different parameters in {triton_name} and {baseline_name}"
    for name in names[2:]:
        imported = imported_modules(trees[name])
        absent = [module for module in (f"{op}_triton", f"{op}_baseline") if module not in imported]
        if absent:
            return f"{name} no longer imports {' and '.join(absent)}: it must use both the kernel and the baseline"
    return None


def entry_parameters(tree: ast.Module, entry: str) -> str | None:
    """Return a comparable dump of the entry point's parameters, or None if it is not defined at module level."""
    node = find_entry(tree, entry)
    return None if node is None else ast.dump(node.args)


def imported_modules(tree: ast.Module) -> set[str]:
    """Return the modules a file imports, by name (also `from pkg import module`)."""
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module and node.level == 0:
                modules.add(node.module)
            # `from . import op_triton` and `from pkg import op_triton` import the module by name.
            modules.update(alias.name for alias in node.names)
    return modules
