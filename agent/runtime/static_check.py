"""Refuse a `_triton.py` whose entry point does not really run a Triton kernel.

The check follows the code: every function, method, class, lambda and module-level name the entry point reaches is
read, the kernels' decorators (autotune hooks) and the globals their bodies read included, and so is every import
of the file. The run-time launch guard of the independent check (`harness/launch_guard.py`) stands behind it for
what reading cannot see.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from agent.runtime.static_names import (
    ALLOWED_MODULES,
    ALLOWED_TORCH,
    OVERRIDES,
    REACH_AROUND,
    REACH_AROUND_NAMES,
    SERVICE_MODULES,
    SIBLING_ROLES,
)
from agent.runtime.static_units import (
    Function,
    StaticCheckError,
    module_containers,
    refuse_kernel_globals,
    refuse_torch_compute,
    tensor_names,
)

__all__ = ["StaticCheckError", "check_triton_file"]
_KERNEL_DECORATORS = ("jit", "autotune", "heuristics", "constexpr_function")


def check_triton_file(source: str, entry: str) -> None:
    """Raise StaticCheckError unless `entry` launches an @triton.jit kernel and leaves math to it."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise StaticCheckError(f"the kernel file does not parse: line {exc.lineno}: {exc.msg}") from exc
    body = [node for node in tree.body if not _is_main_block(node)]  # a script's self-check never runs on import
    statements = list(_module_statements(body))
    _refuse_imports(body, entry)
    _refuse_reach_arounds(body)
    triton_names = _triton_names(body)
    functions = {node.name: node for node in statements if isinstance(node, Function)}
    kernels = {name for name, fn in functions.items() if _is_jit(fn, triton_names)}
    if not kernels:
        raise StaticCheckError("no @triton.jit kernel is defined")
    wrapper = functions.get(entry)
    if wrapper is None or wrapper not in tree.body:
        raise StaticCheckError(f"the entry point {entry}() is not defined at module level")
    if entry in kernels:
        raise StaticCheckError(f"{entry}() must be the Python wrapper, not the kernel itself")
    bindings = _definitions(statements)
    reached = _reachable(wrapper, bindings)
    if not _launched(reached, kernels) & kernels:
        raise StaticCheckError(f"{entry}() never launches a @triton.jit kernel (kernel[grid](...))")
    containers = module_containers(statements)
    for node in reached:
        if isinstance(node, Function) and node.name in kernels:
            refuse_kernel_globals(node, bindings, kernels)
    for label, unit, tensors in _units(reached, wrapper, kernels):
        refuse_torch_compute(unit, label, tensors, containers)
    for node in statements:  # module-level code runs on import, reached or not
        if not isinstance(node, Function | ast.ClassDef | ast.Import | ast.ImportFrom):
            _refuse_module_alias(node)


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Yield the module's statements, descending into top-level if/try/with blocks (not into defs)."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for inner in getattr(node, block, []):
                    yield from _module_statements(inner.body if isinstance(inner, ast.ExceptHandler) else [inner])


def _definitions(statements: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Map each module-level name to the statement that binds it (def, class or assignment)."""
    names: dict[str, ast.stmt] = {}
    for node in statements:
        if isinstance(node, Function | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update({n.id: node for n in ast.walk(target) if isinstance(n, ast.Name)})
    return names


def _reachable(root: ast.stmt, names: dict[str, ast.stmt]) -> list[ast.stmt]:
    """Return the module-level statements the entry point reaches by any name it (or they) load."""
    order, seen, stack = [root], {id(root)}, [root]
    while stack:
        for node in ast.walk(stack.pop()):
            target = names.get(node.id) if isinstance(node, ast.Name) else None
            if target is not None and id(target) not in seen:
                seen.add(id(target))
                order.append(target)
                stack.append(target)
    return order


def _units(reached: list[ast.stmt], entry: ast.stmt, kernels: set[str]) -> Iterator[tuple[str, ast.AST, set[str]]]:
    """Yield what to read for torch compute, with its name: functions, methods, class bodies, assignments."""
    for node in reached:
        if isinstance(node, Function):
            if node.name in kernels:  # the kernel computes; its decorators (autotune hooks) are Python
                for deco in node.decorator_list:
                    yield f"the decorator of {node.name}()", deco, set()
            else:
                yield f"{node.name}()", node, tensor_names(node, entry=node is entry)
        elif isinstance(node, ast.ClassDef):
            for part in [*node.bases, *node.keywords, *node.decorator_list]:
                yield f"class {node.name}", part, set()
            for item in node.body:
                if isinstance(item, Function):
                    yield f"{node.name}.{item.name}()", item, tensor_names(item, entry=False)
                else:
                    yield f"class {node.name}", item, set()
        else:
            names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
            yield (names[0] if names else "a module-level statement"), node, set()


def _is_main_block(node: ast.stmt) -> bool:
    """Tell `if __name__ == "__main__":` apart: code that runs only when the file is run as a script."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _refuse_imports(body: list[ast.stmt], op: str) -> None:
    """Refuse imports a kernel has no use for, the reference and the tests first; torch compute by name too."""
    siblings = {f"{op}_{role}" for role in SIBLING_ROLES}
    for node in (inner for statement in body for inner in ast.walk(statement)):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or "."]
        for module in modules:
            root = module.split(".")[0]
            if module in siblings or root in SERVICE_MODULES or (isinstance(node, ast.ImportFrom) and node.level):
                raise StaticCheckError(f"the kernel file imports {module} (line {node.lineno}): a kernel may not "
                                       "call the reference, the tests or the service's harnesses")
            if root not in ALLOWED_MODULES:
                raise StaticCheckError(f"the kernel file imports {module} (line {node.lineno}), which a kernel has "
                                       f"no use for; it may import {', '.join(sorted(ALLOWED_MODULES))}")
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "torch":
            bad = [a.name for a in node.names if node.module != "torch" or a.name not in ALLOWED_TORCH]
            if bad:
                raise StaticCheckError(f"the kernel file imports {', '.join(bad)} from {node.module} (line "
                                       f"{node.lineno}): the kernel must do the work")
        if isinstance(node, ast.Import) and any(a.name.startswith("torch.") for a in node.names):
            raise StaticCheckError(f"the kernel file imports a torch submodule (line {node.lineno}): "
                                   "the kernel must do the work")


def _refuse_reach_arounds(body: list[ast.stmt]) -> None:
    """Refuse torch's dispatch hooks and the ways around the import check (sys.modules, eval, __dict__, ...)."""
    for node in (inner for statement in body for inner in ast.walk(statement)):
        name = node.name if isinstance(node, Function) else node.attr if isinstance(node, ast.Attribute) else \
            node.id if isinstance(node, ast.Name) else None
        line = getattr(node, "lineno", "?")
        if name in OVERRIDES:
            raise StaticCheckError(f"the kernel file uses {name} (line {line}): it could answer torch calls in place "
                                   "of the kernel")
        if name in REACH_AROUND_NAMES or isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                (node.value.id, node.attr) in REACH_AROUND):
            shown = ast.unparse(node) if isinstance(node, ast.Attribute) else name
            raise StaticCheckError(f"the kernel file uses {shown} (line {line}): a kernel file may not reach other "
                                   "modules, frames or namespaces")


def _refuse_module_alias(node: ast.stmt) -> None:
    """Refuse torch compute kept in a module-level name (`_scan = torch.cumsum`)."""
    for inner in ast.walk(node):
        if (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)
                and inner.value.id == "torch" and inner.attr not in ALLOWED_TORCH):
            raise StaticCheckError(f"the kernel file keeps torch.{inner.attr} in a module name (line "
                                   f"{inner.lineno}): the kernel must do the work")


def _triton_names(body: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """Return the names the file gives the triton module, and the kernel decorators it imports by name."""
    modules, decorators = {"triton"}, set()
    for node in (inner for statement in body for inner in ast.walk(statement)):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "triton"}
        elif isinstance(node, ast.ImportFrom) and node.module == "triton":
            decorators |= {a.asname or a.name for a in node.names if a.name in _KERNEL_DECORATORS}
    return modules, decorators


def _is_jit(fn: Function, triton_names: tuple[set[str], set[str]]) -> bool:
    """Tell a Triton kernel: decorated with triton's jit, autotune or heuristics (not any `.jit`)."""
    modules, decorators = triton_names
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr in _KERNEL_DECORATORS and isinstance(
                target.value, ast.Name) and target.value.id in modules:
            return True
        if isinstance(target, ast.Name) and target.id in decorators:
            return True
    return False


def _launched(reached: list[ast.stmt], kernels: set[str]) -> set[str]:
    """Name the kernels the reached code launches: `kernel[grid](...)`, also through a name bound to the kernel or
    to what its `warmup(...)` returns, or an attribute's last part."""
    aliases: dict[str, str] = {}
    for unit in reached:
        for node in ast.walk(unit):
            if isinstance(node, ast.Assign):
                value = node.value.func.value if isinstance(node.value, ast.Call) and isinstance(
                    node.value.func, ast.Attribute) else node.value
                if isinstance(value, ast.Name) and value.id in kernels:
                    aliases |= {t.id: value.id for t in node.targets if isinstance(t, ast.Name)}
    launched = set()
    for unit in reached:
        if isinstance(unit, Function) and unit.name in kernels:
            continue
        for value in _subscript_calls(unit):
            if isinstance(value, ast.Name):
                launched.add(aliases.get(value.id, value.id))
            elif isinstance(value, ast.Attribute):
                launched.add(value.attr)
    return launched | _handed_to_launchers(reached)


def _subscript_calls(unit: ast.AST) -> Iterator[ast.expr]:
    """Yield what the code subscripts and calls, `x` of every `x[...](...)` (a kernel launch's shape)."""
    for node in ast.walk(unit):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            yield node.func.value


def _handed_to_launchers(reached: list[ast.stmt]) -> set[str]:
    """Name what the reached code hands to a reached function as an argument that function itself launches."""
    launchers: dict[str, tuple[list[str], set[str]]] = {}  # function -> its parameters, those its body launches
    for unit in reached:
        if isinstance(unit, ast.FunctionDef | ast.AsyncFunctionDef):
            params = [a.arg for a in unit.args.posonlyargs + unit.args.args]
            own = {value.id for value in _subscript_calls(unit) if isinstance(value, ast.Name)}
            # A parameter the body binds again is no longer what the caller handed over.
            rebound = {n.id for n in ast.walk(unit) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            if launching := own & set(params) - rebound:
                launchers[unit.name] = params, launching
    handed = set()
    for unit in reached:
        for node in ast.walk(unit):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in launchers):
                continue
            params, launching = launchers[node.func.id]
            pairs = list(zip(params, node.args, strict=False)) + [(k.arg, k.value) for k in node.keywords if k.arg]
            handed |= {arg.id for param, arg in pairs if param in launching and isinstance(arg, ast.Name)}
    return handed
