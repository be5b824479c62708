"""Refuse a `_triton.py` whose entry point does not really run a Triton kernel."""

from __future__ import annotations

import ast

# torch attributes a wrapper may touch: allocation (zero-filled for a workspace such as a split kernel's tickets;
# zeros compute nothing a wrong kernel could hide behind), metadata, dtypes, devices.
ALLOWED_TORCH = {
    "empty", "empty_like", "empty_strided", "zeros", "broadcast_shapes", "promote_types", "result_type",
    "Size", "Tensor", "device", "dtype", "float32", "float16", "bfloat16", "float64", "int32",
    "int64", "is_tensor", "cuda", "npu", "Generator", "manual_seed",
}
# Methods whose result is again a tensor over the same data.
TENSOR_VIEWS = {"contiguous", "reshape", "view", "to", "flatten", "unsqueeze", "squeeze", "expand", "cpu"}
# Tensor methods that compute: using them in the wrapper hands the work to torch.
COMPUTE_METHODS = {
    "add", "sub", "mul", "div", "exp", "log", "sqrt", "rsqrt", "relu", "sigmoid", "tanh", "clamp",
    "abs", "neg", "pow", "sum", "mean", "max", "min", "softmax", "matmul", "mm", "bmm", "addmm",
    "copy_", "fill_", "add_", "mul_", "where", "erf", "square", "reciprocal", "lerp", "addcmul",
    # reductions, scans, sorting, indexing math and linear algebra (what LLM-written kernels may hand off)
    "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "prod", "norm", "var", "std", "argmax", "argmin",
    "amax", "amin", "logsumexp", "log_softmax", "sort", "argsort", "topk", "kthvalue", "median", "mode",
    "any", "all", "masked_fill", "masked_fill_", "scatter", "scatter_add", "gather", "index_select",
    "index_add", "mv", "dot", "einsum", "baddbmm", "outer", "sub_", "div_", "clamp_", "exp_", "sigmoid_",
    "gelu", "silu", "erfinv", "log1p", "expm1", "sin", "cos", "floor", "ceil", "round", "sign", "maximum",
    "minimum", "copysign", "hypot", "atan2", "remainder", "fmod", "layer_norm", "rms_norm", "conv1d", "conv2d",
    # data movement that computes a result (a reversed or repeated copy)
    "flip", "roll", "repeat", "tile", "index_put_", "put_", "masked_scatter",
}


class StaticCheckError(ValueError):
    """The kernel file breaks the contract; the message says where."""


def check_triton_file(source: str, entry: str) -> None:
    """Raise StaticCheckError unless `entry` launches an @triton.jit kernel and leaves math to it."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise StaticCheckError(f"the kernel file does not parse: line {exc.lineno}: {exc.msg}") from exc
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    kernels = {name for name, fn in functions.items() if _is_jit(fn)}
    if not kernels:
        raise StaticCheckError("no @triton.jit kernel is defined")
    wrapper = functions.get(entry)
    if wrapper is None:
        raise StaticCheckError(f"the entry point {entry}() is not defined at module level")
    if _is_jit(wrapper):
        raise StaticCheckError(f"{entry}() must be the Python wrapper, not the kernel itself")
    launched = _launched_kernels(wrapper, functions)
    if not launched & kernels:
        raise StaticCheckError(f"{entry}() never launches a @triton.jit kernel (kernel[grid](...))")
    _refuse_torch_imports(tree)
    for fn in _reachable(wrapper, functions) - {f for f in functions if f in kernels}:
        _refuse_torch_compute(functions[fn], entry=fn == entry)


def _refuse_torch_imports(tree: ast.Module) -> None:
    """Refuse torch compute reached by a name instead of `torch.<op>`: imports and module-level aliases."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "torch":
            bad = [a.name for a in node.names if node.module != "torch" or a.name not in ALLOWED_TORCH]
            if bad:
                raise StaticCheckError(f"the kernel file imports {', '.join(bad)} from {node.module} (line "
                                       f"{node.lineno}): the kernel must do the work")
        if isinstance(node, ast.Import) and any(a.name.startswith("torch.") for a in node.names):
            raise StaticCheckError(f"the kernel file imports a torch submodule (line {node.lineno}): "
                                   "the kernel must do the work")
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for inner in ast.walk(node.value):
                if (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)
                        and inner.value.id == "torch" and inner.attr not in ALLOWED_TORCH):
                    raise StaticCheckError(f"the kernel file keeps torch.{inner.attr} in a module name (line "
                                           f"{node.lineno}): the kernel must do the work")


def _is_jit(fn: ast.FunctionDef) -> bool:
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr in ("jit", "autotune", "heuristics"):
            return True
    return False


def _reachable(root: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> set[str]:
    """Return the module functions the wrapper calls, directly or not (itself included)."""
    seen = {root.name}
    stack = [root]
    while stack:
        for node in ast.walk(stack.pop()):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                name = node.func.id
                if name in functions and name not in seen:
                    seen.add(name)
                    stack.append(functions[name])
    return seen


def _launched_kernels(root: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> set[str]:
    launched = set()
    for name in _reachable(root, functions):
        for node in ast.walk(functions[name]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
                value = node.func.value
                if isinstance(value, ast.Name):
                    launched.add(value.id)
    return launched


def _refuse_torch_compute(fn: ast.FunctionDef, *, entry: bool = False) -> None:
    tensors = _tensor_names(fn, entry=entry)
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "torch" and node.attr not in ALLOWED_TORCH:
                raise StaticCheckError(
                    f"{fn.name}() calls torch.{node.attr} (line {node.lineno}): the kernel must do the work"
                )
            if node.value.id in ("F", "functional", "nn"):
                raise StaticCheckError(
                    f"{fn.name}() uses {node.value.id}.{node.attr} (line {node.lineno}): the kernel must do the work"
                )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            if not isinstance(name, ast.Constant) or name.value in COMPUTE_METHODS:
                raise StaticCheckError(
                    f"{fn.name}() looks a method up with getattr (line {node.lineno}): the kernel must do the work"
                )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in COMPUTE_METHODS and not _is_module_call(node.func):
                raise StaticCheckError(
                    f"{fn.name}() computes with .{node.func.attr}() (line {node.lineno}): the kernel must do the work"
                )
        if isinstance(node, (ast.BinOp, ast.AugAssign)):
            operands = (node.left, node.right) if isinstance(node, ast.BinOp) else (node.target, node.value)
            named = [o.id for o in operands if isinstance(o, ast.Name) and o.id in tensors]
            if named:
                raise StaticCheckError(
                    f"{fn.name}() does arithmetic on the tensor {named[0]} (line {node.lineno}): "
                    "the kernel must do the work"
                )

def _is_module_call(func: ast.Attribute) -> bool:
    """Tell module functions such as triton.cdiv from tensor methods."""
    modules = ("triton", "tl", "math", "os", "sys", "torch", "F", "nn")
    return isinstance(func.value, ast.Name) and func.value.id in modules


def _tensor_names(fn: ast.FunctionDef, *, entry: bool) -> set[str]:
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
