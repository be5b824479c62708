"""Check that model-written files keep the four-file contract before anything runs them."""

from __future__ import annotations

import ast

from agent.edit_rules import entry_parameters, imported_modules
from agent.runtime.static_check import StaticCheckError, check_triton_file

ROLES = ("triton", "baseline", "accuracy", "performance")
_PERFORMANCE_NAMES = ("make_inputs", "PARAMS", "SPEC_CASES", "DTYPE_CASES")
# The service's harnesses import the kernel and the reference: these would let either change what a harness sees.
_FORBIDDEN_MODULES = frozenset({"atexit", "builtins", "ctypes", "subprocess", "socket", "multiprocessing", "signal",
                                "gc", "importlib", "threading", "sqlite3", "shutil"})
_FORBIDDEN_CALLS = frozenset({"setattr", "delattr", "exec", "eval", "compile", "__import__", "globals", "vars"})
# No file, the tests included, may start processes, open connections or load native code. This is a first filter
# that names the problem to the model; the sandbox (bubblewrap) is the wall behind it.
_ESCAPE_MODULES = frozenset({"subprocess", "_posixsubprocess", "ctypes", "_ctypes", "cffi", "socket", "_socket", "ssl",
                             "urllib", "http", "requests", "httpx", "importlib", "multiprocessing", "pty", "pexpect"})
_ESCAPE_OS = frozenset({"system", "popen", "fork", "forkpty", "kill", "killpg", "setsid", "setuid", "setgid",
                        "setresuid", "setresgid", "chroot", "posix_spawn", "posix_spawnp"})
_ESCAPE_OS_PREFIXES = ("exec", "spawn")
_ESCAPE_BUILTINS = frozenset({"__import__", "__builtins__", "breakpoint", "exec", "eval", "compile"})
_ESCAPE_ATTRIBUTES = frozenset({"__builtins__", "__subclasses__", "__globals__", "__code__", "__loader__"})


def check_role(role: str, files: dict[str, str], op: str) -> str | None:
    """Return why the role's file breaks the contract (given the files beside it), or None."""
    name = f"{op}_{role}.py"
    source = files.get(name)
    if source is None:
        return f"{name} is missing"
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"{name} does not parse: {exc.msg} at line {exc.lineno}"
    escape = _escape(tree, name)
    if escape is not None:
        return escape
    if role in ("triton", "baseline"):
        problem = _side_effect(tree, name, op)
        if problem is not None:
            return problem
    if role == "triton":
        try:
            check_triton_file(source, op)
        except StaticCheckError as exc:
            return f"{name}: {exc}"
        if "DEVICE" not in _module_names(tree):
            return f"{name} must define the module constant DEVICE (resolved at run time)"
        return None
    if role == "baseline":
        return _same_entry(files, op)
    imported = imported_modules(tree)
    absent = [m for m in (f"{op}_triton", f"{op}_baseline") if m not in imported]
    if absent:
        return f"{name} must import {' and '.join(absent)}"
    if "--json" not in source:
        return f"{name} must write its result as JSON to the path given after --json"
    if role == "performance":
        missing = [n for n in _PERFORMANCE_NAMES if n not in _module_names(tree)]
        if missing:
            return f"{name} must define {', '.join(missing)} at module level"
        if "do_bench" not in source:
            return f"{name} must time with triton.testing.do_bench"
    return None


def check_files(files: dict[str, str], op: str) -> str | None:
    """Return the first contract problem of the four files, or None."""
    for role in ROLES:
        problem = check_role(role, files, op)
        if problem is not None:
            return problem
    return None


def _same_entry(files: dict[str, str], op: str) -> str | None:
    entries = {}
    for role in ("triton", "baseline"):
        name = f"{op}_{role}.py"
        try:
            entries[role] = entry_parameters(ast.parse(files.get(name, "")), op)
        except SyntaxError:
            return f"{name} does not parse"
        if entries[role] is None:
            return f"{name} must define the entry point {op}() at module level"
    if entries["triton"] != entries["baseline"]:
        return (f"{op}() must have the identical parameter list (names, defaults and annotations) in "
                f"{op}_triton.py and {op}_baseline.py")
    return None


def _escape(tree: ast.Module, name: str) -> str | None:
    """Find a way out of the computation: processes, sockets, native code, import machinery, interpreter internals."""
    os_names = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names if alias.name == "os"}
    why = "generated files may not start processes, open connections or load native code"
    for node in ast.walk(tree):
        where = f"{name} line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            roots = _import_roots(node)
            bad = sorted(set(roots) & _ESCAPE_MODULES)
            if bad:
                return f"{where}: imports {bad[0]}: {why}"
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                taken = [a.name for a in node.names if _os_escape(a.name)]
                if taken:
                    return f"{where}: imports os.{taken[0]}: {why}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in os_names and (
                _os_escape(node.attr)):
            return f"{where}: uses os.{node.attr}: {why}"
        if isinstance(node, ast.Name) and node.id in _ESCAPE_BUILTINS or (
                isinstance(node, ast.Attribute) and node.attr in _ESCAPE_ATTRIBUTES):
            return f"{where}: uses {node.id if isinstance(node, ast.Name) else node.attr}: {why}"
    return None


def _import_roots(node: ast.Import | ast.ImportFrom) -> list[str]:
    """Return the top-level packages an import statement loads (`os` for `import os.path`)."""
    if isinstance(node, ast.Import):
        return [a.name.split(".")[0] for a in node.names]
    return [(node.module or "").split(".")[0]]


def _os_escape(attr: str) -> bool:
    return attr in _ESCAPE_OS or attr.startswith(_ESCAPE_OS_PREFIXES)


def _side_effect(tree: ast.Module, name: str, op: str) -> str | None:
    """Find code that patches modules, rebinds the entry point, or reaches outside the computation."""
    modules = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
               if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names}
    for node in ast.walk(tree):
        where = f"{name} line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            roots = _import_roots(node)
            bad = sorted(set(roots) & _FORBIDDEN_MODULES)
            if bad:
                return f"{where}: imports {bad[0]}, which a kernel or a reference has no use for"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FORBIDDEN_CALLS:
            return f"{where}: calls {node.func.id}(), which could change what the tests see"
        targets = (node.targets if isinstance(node, ast.Assign) else [node.target]
                   if isinstance(node, ast.AugAssign | ast.AnnAssign) else node.targets
                   if isinstance(node, ast.Delete) else [])
        for target in targets:
            root = target
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if root is not target and isinstance(root, ast.Name) and root.id in modules:
                return f"{where}: assigns into the module {root.id}, which patches it for everyone"
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            names = [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(t, ast.Name)]
            if op in names or f"{op}_kernel" in names:
                return f"{name} line {node.lineno}: rebinds {op} at module level; define it once with def"
    return None


def _module_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names
