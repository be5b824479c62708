"""Refuse a `_triton.py` whose entry point does not really run a Triton kernel.

The check follows the code: every function, method, class, lambda and module-level name the entry point reaches is
read, the kernels' decorators (autotune hooks) included, and so is every import of the file. The run-time launch
guard of the independent check (`harness/harness_common.py`) stands behind it for what reading cannot see.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from agent.runtime.static_names import (
    ALLOWED_MODULES,
    ALLOWED_TORCH,
    COMPUTE_METHODS,
    DUNDER_COMPUTE,
    OVERRIDES,
    REACH_AROUND,
    SERVICE_MODULES,
    SIBLING_ROLES,
    TENSOR_VIEWS,
)

Function = ast.FunctionDef | ast.AsyncFunctionDef


class StaticCheckError(ValueError):
    """The kernel file breaks the contract; the message says where."""


def check_triton_file(source: str, entry: str) -> None:
    """Raise StaticCheckError unless `entry` launches an @triton.jit kernel and leaves math to it."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise StaticCheckError(f"the kernel file does not parse: line {exc.lineno}: {exc.msg}") from exc
    body = [node for node in tree.body if not _is_main_block(node)]  # a script's self-check never runs on import
    statements = list(_module_statements(body))
    functions = {node.name: node for node in statements if isinstance(node, Function)}
    kernels = {name for name, fn in functions.items() if _is_jit(fn)}
    if not kernels:
        raise StaticCheckError("no @triton.jit kernel is defined")
    wrapper = functions.get(entry)
    if wrapper is None or wrapper not in tree.body:
        raise StaticCheckError(f"the entry point {entry}() is not defined at module level")
    if _is_jit(wrapper):
        raise StaticCheckError(f"{entry}() must be the Python wrapper, not the kernel itself")
    _refuse_imports(body, entry)
    _refuse_reach_arounds(tree)
    reached = _reachable(wrapper, _definitions(statements))
    if not _launched(reached) & kernels:
        raise StaticCheckError(f"{entry}() never launches a @triton.jit kernel (kernel[grid](...))")
    for label, node, tensors in _units(reached, wrapper):
        _refuse_torch_compute(node, label, tensors)
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


def _units(reached: list[ast.stmt], entry: ast.stmt) -> Iterator[tuple[str, ast.AST, set[str]]]:
    """Yield what to read for torch compute, with its name: functions, methods, class bodies, assignments."""
    for node in reached:
        if isinstance(node, Function):
            if _is_jit(node):  # the kernel computes; its decorators (autotune hooks) are Python
                for deco in node.decorator_list:
                    yield f"the decorator of {node.name}()", deco, set()
            else:
                yield f"{node.name}()", node, _tensor_names(node, entry=node is entry)
        elif isinstance(node, ast.ClassDef):
            for part in [*node.bases, *node.keywords, *node.decorator_list]:
                yield f"class {node.name}", part, set()
            for item in node.body:
                if isinstance(item, Function):
                    yield f"{node.name}.{item.name}()", item, _tensor_names(item, entry=False)
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


def _refuse_reach_arounds(tree: ast.Module) -> None:
    """Refuse torch's dispatch hooks and the ways around the import check (sys.modules, frames)."""
    for node in ast.walk(tree):
        name = node.name if isinstance(node, Function) else node.attr if isinstance(node, ast.Attribute) else \
            node.id if isinstance(node, ast.Name) else None
        line = getattr(node, "lineno", "?")
        if name in OVERRIDES:
            raise StaticCheckError(f"the kernel file uses {name} (line {line}): it could answer torch calls in place "
                                   "of the kernel")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                (node.value.id, node.attr) in REACH_AROUND):
            raise StaticCheckError(f"the kernel file uses {node.value.id}.{node.attr} (line {line}): a kernel may "
                                   "not reach other modules or frames")


def _refuse_module_alias(node: ast.stmt) -> None:
    """Refuse torch compute kept in a module-level name (`_scan = torch.cumsum`)."""
    for inner in ast.walk(node):
        if (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)
                and inner.value.id == "torch" and inner.attr not in ALLOWED_TORCH):
            raise StaticCheckError(f"the kernel file keeps torch.{inner.attr} in a module name (line "
                                   f"{inner.lineno}): the kernel must do the work")


def _is_jit(fn: ast.stmt) -> bool:
    if not isinstance(fn, Function):
        return False
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr in ("jit", "autotune", "heuristics"):
            return True
    return False


def _launched(reached: list[ast.stmt]) -> set[str]:
    """Name what the reached code launches with `kernel[grid](...)` (a name, or an attribute's last part)."""
    launched = set()
    for unit in reached:
        if _is_jit(unit):
            continue
        for node in ast.walk(unit):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
                value = node.func.value
                if isinstance(value, ast.Name):
                    launched.add(value.id)
                elif isinstance(value, ast.Attribute):
                    launched.add(value.attr)
    return launched


def _refuse_torch_compute(unit: ast.AST, label: str, tensors: set[str]) -> None:
    for node in ast.walk(unit):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "torch" and node.attr not in ALLOWED_TORCH:
                raise StaticCheckError(f"{label} calls torch.{node.attr} (line {line}): the kernel must do the work")
            if node.value.id in ("F", "functional", "nn"):
                raise StaticCheckError(
                    f"{label} uses {node.value.id}.{node.attr} (line {line}): the kernel must do the work")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            if not isinstance(name, ast.Constant) or name.value in COMPUTE_METHODS | DUNDER_COMPUTE:
                raise StaticCheckError(
                    f"{label} looks a method up with getattr (line {line}): the kernel must do the work")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if (method in COMPUTE_METHODS and not _is_module_call(node.func)) or method in DUNDER_COMPUTE:
                raise StaticCheckError(f"{label} computes with .{method}() (line {line}): the kernel must do the work")
        operands = (node.left, node.right) if isinstance(node, ast.BinOp) else \
            (node.target, node.value) if isinstance(node, ast.AugAssign) else \
            (node.operand,) if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not) else ()
        named = [o.id for o in operands if isinstance(o, ast.Name) and o.id in tensors]
        if named:
            raise StaticCheckError(
                f"{label} does arithmetic on the tensor {named[0]} (line {line}): the kernel must do the work")


def _is_module_call(func: ast.Attribute) -> bool:
    """Tell module functions such as triton.cdiv from tensor methods."""
    modules = ("triton", "tl", "math", "os", "sys", "torch", "F", "nn")
    return isinstance(func.value, ast.Name) and func.value.id in modules


def _tensor_names(fn: Function, *, entry: bool) -> set[str]:
    """Collect names that hold tensors: Tensor-annotated parameters (every non-scalar one of the entry point, whose
    inputs are tensors by contract) and what is derived from them."""
    args = fn.args.args + fn.args.kwonlyargs
    defaults = dict(zip([a.arg for a in fn.args.args][len(fn.args.args) - len(fn.args.defaults):], fn.args.defaults,
                        strict=True))
    defaults |= {a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is not None}
    names = set()
    for a in args:
        annotation = ast.unparse(a.annotation) if a.annotation is not None else ""
        scalar = annotation in ("int", "float", "bool", "str") or (
            a.arg in defaults and isinstance(defaults[a.arg], ast.Constant | ast.UnaryOp))
        if "Tensor" in annotation or (entry and not scalar):
            names.add(a.arg)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            derived = isinstance(func, ast.Attribute) and (
                (isinstance(func.value, ast.Name) and func.value.id in names and func.attr in TENSOR_VIEWS) or
                (isinstance(func.value, ast.Name) and func.value.id == "torch"
                 and (func.attr.startswith("empty") or func.attr == "zeros"))
            )
            if derived:
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names
