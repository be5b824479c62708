"""Read one piece of a kernel file for work done outside Triton: a wrapper's Python, or a kernel's globals."""

from __future__ import annotations

import ast

from agent.runtime.static_names import (
    ALLOWED_MODULES,
    ALLOWED_TORCH,
    BLOCKED_ATTRIBUTES,
    COMPUTE_METHODS,
    CONTAINER_CALLS,
    DUNDER_COMPUTE,
    TENSOR_VIEWS,
)

Function = ast.FunctionDef | ast.AsyncFunctionDef
MODULE_NAMES = ALLOWED_MODULES | {"tl"}


class StaticCheckError(ValueError):
    """The kernel file breaks the contract; the message says where."""


def refuse_torch_compute(unit: ast.AST, label: str, tensors: set[str], containers: set[str]) -> None:
    """Raise StaticCheckError where the Python of `unit` computes with torch (calls, methods, arithmetic)."""
    containers = containers | _containers(unit)
    called = {id(node.func) for node in ast.walk(unit) if isinstance(node, ast.Call)}
    for node in ast.walk(unit):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "torch" and node.attr not in ALLOWED_TORCH:
                verb = "calls" if id(node) in called else "uses"
                raise StaticCheckError(f"{label} {verb} torch.{node.attr} (line {line}): the kernel must do the work")
            if isinstance(node.value, ast.Name) and node.value.id in ("F", "functional", "nn") or \
                    node.attr in BLOCKED_ATTRIBUTES:
                raise StaticCheckError(f"{label} uses {ast.unparse(node)} (line {line}): the kernel must do the work")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            if not isinstance(name, ast.Constant) or _computes(str(name.value)):
                raise StaticCheckError(
                    f"{label} looks a method up with getattr (line {line}): the kernel must do the work")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _computes(node.func.attr):
            receiver = node.func.value
            # Modules are not tensors (F and nn are refused by name above, with their own message).
            plain = isinstance(receiver, ast.Name) and receiver.id in MODULE_NAMES | containers | {"F", "nn"}
            if not plain or node.func.attr in DUNDER_COMPUTE:
                raise StaticCheckError(
                    f"{label} computes with .{node.func.attr}() (line {line}): the kernel must do the work")
        operands = (node.left, node.right) if isinstance(node, ast.BinOp) else \
            (node.target, node.value) if isinstance(node, ast.AugAssign) else \
            (node.operand,) if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not) else ()
        named = [o.id for o in operands if isinstance(o, ast.Name) and o.id in tensors]
        if named:
            raise StaticCheckError(
                f"{label} does arithmetic on the tensor {named[0]} (line {line}): the kernel must do the work")


def refuse_kernel_globals(kernel: Function, bindings: dict[str, ast.stmt], kernels: set[str]) -> None:
    """Refuse a kernel body that reads torch, a module-level object that is not a constant, or a function that is not
    a kernel (Triton's own rules: the interpreter would run such Python, a GPU would not compile it)."""
    for node in ast.walk(kernel):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        bound = bindings.get(node.id)
        if node.id == "torch" or (isinstance(bound, ast.Assign | ast.AnnAssign) and not _constant(bound.value)) or (
                isinstance(bound, Function | ast.ClassDef) and node.id not in kernels):
            raise StaticCheckError(f"the kernel {kernel.name}() reads {node.id} (line {node.lineno}): a kernel may "
                                   "read only its arguments, module constants and other @triton.jit functions")


def tensor_names(fn: Function, *, entry: bool) -> set[str]:
    """Collect the names holding tensors: Tensor-annotated parameters, the entry point's inputs, what derives."""
    args = fn.args.args + fn.args.kwonlyargs
    with_default = {a.arg for a in fn.args.args[len(fn.args.args) - len(fn.args.defaults):]}
    with_default |= {a.arg for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is not None}
    names = set()
    for a in args:
        annotation = ast.unparse(a.annotation) if a.annotation is not None else ""
        # The contract puts the input tensors first and gives every scalar parameter a default.
        scalar = annotation in ("int", "float", "bool", "str") or a.arg in with_default
        if "Tensor" in annotation or (entry and not scalar and a.arg not in ("self", "cls")):
            names.add(a.arg)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            derived = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (
                (func.value.id in names and func.attr in TENSOR_VIEWS)
                or (func.value.id == "torch" and (func.attr.startswith("empty") or func.attr == "zeros")))
            if derived:
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def module_containers(statements: list[ast.stmt]) -> set[str]:
    """Name the module-level sets, lists and dicts: their .add() or .sort() is bookkeeping, not tensor math."""
    return set().union(*(_containers(node) for node in statements if not isinstance(node, Function | ast.ClassDef)))


def _containers(unit: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(unit):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and _is_container(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _is_container(value: ast.expr) -> bool:
    if isinstance(value, ast.Set | ast.List | ast.Dict | ast.ListComp | ast.SetComp | ast.DictComp | ast.Tuple):
        return True
    func = value.func if isinstance(value, ast.Call) else None
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return name in CONTAINER_CALLS


def _computes(method: str) -> bool:
    """Tell a method that computes: a compute method, its in-place form (`cumsum_`), or an operator's dunder."""
    return method in COMPUTE_METHODS or method.rstrip("_") in COMPUTE_METHODS or method in DUNDER_COMPUTE


def _constant(value: ast.expr | None) -> bool:
    """Tell a module constant a kernel may read: a literal, arithmetic on literals, or tl.constexpr(...)."""
    if value is None:
        return False
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "constexpr":
        return True
    try:
        literal = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return isinstance(value, ast.BinOp | ast.UnaryOp) and all(
            _constant(v) for v in ((value.left, value.right) if isinstance(value, ast.BinOp) else (value.operand,)))
    return _immutable(literal)


def _immutable(literal: object) -> bool:
    """Tell a value a kernel may bake in: numbers, strings, None, and tuples of them (not lists, dicts or sets)."""
    if isinstance(literal, tuple):
        return all(_immutable(item) for item in literal)
    return literal is None or isinstance(literal, int | float | str | bool)
