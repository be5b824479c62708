"""Trace the user's PyTorch code with torch.fx and write its graph as JSON.

Copied into the sandbox next to code_common.py and user_spec.py (the user's code, verbatim) and run there:

    python trace_code.py --json result.json [--inputs inputs.json] [--entry NAME]

inputs.json maps an input name to {"shape": [...], "dtype": "float16"}, for code without get_inputs() (and to
override it). The result names the entry, its tensor arguments and fixed arguments, every graph node (kind,
target, args, kwargs, and the shape and dtype or the constant it produced; a submodule's class, attributes and
tensors), and the module tensors the graph reads; or {"status": "error", "message": one line}.
"""

import builtins
import copy
import functools
import inspect
import json
import math
import operator
import sys
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from code_common import USER_FILE, Refused, Setup, argument, dtype_name, jsonable, one_line, prepare, write_result
from torch.fx import GraphModule, Interpreter, Node, Tracer

NAMESPACES = (("torch", torch), ("torch.nn.functional", F), ("torch.special", torch.special),
              ("torch.linalg", torch.linalg), ("torch.fft", torch.fft), ("operator", operator), ("math", math),
              ("builtins", builtins))
SIMPLE = (type(None), bool, int, float, str)


def main() -> int:
    """Trace the code and write the result file."""
    result_path = argument("--json")
    inputs_path = argument("--inputs")
    assert result_path is not None
    try:
        declared = {}
        if inputs_path:
            with open(inputs_path) as handle:
                declared = json.load(handle)
        result = trace(declared, argument("--entry"))
    except Refused as exc:
        result = {"status": "error", "message": str(exc)}
    except Exception as exc:  # anything else is reported as data, in one line
        result = {"status": "error", "message": f"tracing failed: {one_line(exc)}"}
    write_result(result_path, result)
    return 0


class LineTracer(Tracer):
    """A tracer that notes the line of the user's code each node comes from (record_stack_traces costs seconds)."""

    def create_node(self, *args: Any, **kwargs: Any) -> Node:
        """Create the node and keep the innermost line of user_spec.py on the stack."""
        node = super().create_node(*args, **kwargs)
        frame = sys._getframe(1)
        while frame is not None and not frame.f_code.co_filename.endswith(USER_FILE):
            frame = frame.f_back  # type: ignore[assignment]
        if frame is not None:
            node.meta["user_line"] = frame.f_lineno
        return node


class Recorder(Interpreter):
    """Shape propagation that keeps each node's value: shapes and dtypes, and sizes, dtypes and tuples too.

    (torch.fx.passes.shape_prop.ShapeProp keeps tensor metadata only, and importing it costs 0.3 s of sympy.)
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.values: dict[str, Any] = {}
        self.node: Node | None = None

    def run_node(self, n: Node) -> Any:
        """Run one node and remember what it produced."""
        self.node = n
        value = super().run_node(n)
        self.values[n.name] = value
        return value


def trace(declared: dict[str, dict], entry: str | None) -> dict:
    """Trace the entry and propagate shapes through the graph; the code runs eagerly only to explain a failure."""
    setup = prepare(declared, entry, seed=0)
    with torch.no_grad():
        try:
            tracer = LineTracer()
            graph = tracer.trace(setup.target, concrete_args=setup.fixed or None)
            gm = GraphModule(tracer.root, graph)
        except Exception as exc:
            _raise_if_eager_fails(setup)
            raise Refused(f"torch.fx cannot trace the code: {one_line(exc)}") from None
        recorder = _on_meta(gm, setup)
        if recorder is None:
            recorder = Recorder(gm)
            try:
                recorder.run(*setup.values)
            except Exception as exc:
                _raise_if_eager_fails(setup)
                raise Refused(f"the traced code raised {one_line(exc)}{_line(recorder.node)}") from None
    names = _qualified_names()
    nodes = [_node(n, gm, recorder.values, names, setup) for n in gm.graph.nodes]
    tensors: dict[str, dict] = {}
    for n in gm.graph.nodes:
        paths = [n.target] if n.op == "get_attr" else []
        if n.op == "call_module":
            paths = [p for p in _module(gm.get_submodule(n.target), n.target)["tensors"].values() if p]
        for path in paths:
            tensors[path] = _attribute(gm, path, setup.model)
    return {
        "status": "pass", "kind": setup.kind, "entry": setup.entry, "init_args": jsonable(setup.init_args),
        "arguments": [{"name": n, "shape": list(t.shape), "dtype": dtype_name(t.dtype), "source": setup.sources[n]}
                      for n, t in setup.tensors.items()],
        "fixed": [{"name": n, "value": jsonable(v), "source": setup.sources[n]} for n, v in setup.fixed.items()],
        "tensors": tensors, "nodes": nodes, "notes": setup.notes, "runnable": setup.runnable,
    }


def _on_meta(gm: GraphModule, setup: Setup) -> Recorder | None:
    """Propagate shapes and dtypes on the meta device, which does no arithmetic; None where an op needs values.

    A large fp16 matmul takes minutes on the CPU (PyTorch has no fast fp16 GEMM there) and none on meta. Code that
    reads values (.item(), data-dependent shapes) fails here and runs for real; so does code that takes integer
    tensors (indices, targets), whose values the CPU run checks and meta cannot.
    """
    if any(not t.is_floating_point() for t in setup.tensors.values()):
        return None
    try:
        meta = copy.deepcopy(gm).to("meta")
        with torch.device("meta"):  # tensors made in forward (a causal mask, an arange) are made there too
            recorder = Recorder(meta)
            recorder.run(*(v.to("meta") if isinstance(v, torch.Tensor) else v for v in setup.values))
    except Exception:
        return None
    return recorder


def _raise_if_eager_fails(setup: Setup) -> None:
    """Run the code as written; if it raises, that (with its line) is the reason to give."""
    shapes = ", ".join(f"{n} {list(t.shape)} {dtype_name(t.dtype)}" for n, t in setup.tensors.items())
    try:
        setup.call()
    except Exception as exc:
        raise Refused(f"the code raised {one_line(exc)} when run on {shapes or 'its inputs'}") from None


def _line(node: Node | None) -> str:
    """Return ` (line N: source)` for the node of the user's code a failure came from."""
    line = node.meta.get("user_line") if node is not None else None
    if not line:
        return ""
    with open(USER_FILE) as handle:
        lines = handle.read().splitlines()
    text = lines[line - 1].strip() if line <= len(lines) else ""
    return f" (line {line}: {text})"


def _qualified_names() -> dict[int, str]:
    """Map each public function of torch, F, torch.special, ..., operator, math and builtins to its dotted name."""
    table: dict[int, str] = {}
    for prefix, namespace in NAMESPACES:
        for attr in dir(namespace):
            if attr.startswith("_"):
                continue
            try:
                value = getattr(namespace, attr)
            except Exception:  # a few lazy attributes raise on access
                continue
            if callable(value) and not inspect.isclass(value):
                table.setdefault(id(value), f"{prefix}.{attr}")
    return table


def _node(node: Node, gm: GraphModule, values: dict[str, Any], names: dict[int, str], setup: Setup) -> dict:
    target: Any = node.target
    if node.op == "call_function":
        target = names.get(id(target)) or f"{getattr(target, '__module__', '?')}.{getattr(target, '__name__', target)}"
    data = {"name": node.name, "op": node.op, "target": str(target), "args": _encode(node.args),
            "kwargs": {k: _encode(v) for k, v in node.kwargs.items()},
            "value": _describe(values[node.name]) if node.name in values else None}
    if "user_line" in node.meta:
        data["line"] = node.meta["user_line"]
    if node.op == "placeholder":
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        data["argument"] = setup.names[placeholders.index(node)]
    if node.op == "call_module":
        data["module"] = _module(gm.get_submodule(str(node.target)), str(node.target))
    return data


def _encode(value: Any) -> Any:
    """Encode an argument as JSON: node references, numbers, strings, lists, dtypes, slices, None."""
    if isinstance(value, Node):
        return {"node": value.name}
    if isinstance(value, torch.dtype):
        return {"dtype": dtype_name(value)}
    if isinstance(value, slice):
        return {"slice": [_encode(value.start), _encode(value.stop), _encode(value.step)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): _encode(v) for k, v in value.items()}}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if isinstance(value, SIMPLE):
        return value
    if isinstance(value, torch.device):
        return {"device": str(value)}
    return {"other": repr(value)[:80]}


def _describe(value: Any) -> dict:
    """Describe what a node produced: a tensor's shape and dtype, a tuple of such, or a constant."""
    if isinstance(value, torch.Tensor):
        return {"tensor": {"shape": list(value.shape), "dtype": dtype_name(value.dtype)}}
    if isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value):
        return {"tuple": [_describe(v) for v in value]}
    return {"const": _encode(value)}


def _module(module: nn.Module, path: str) -> dict:
    """Describe a submodule: class, simple attributes (eps, dim, stride, ...), and the paths of its tensors."""
    cls = type(module)
    name = f"nn.{cls.__name__}" if cls.__module__.startswith("torch.nn") else f"{cls.__module__}.{cls.__qualname__}"
    attrs = {k: _encode(v) for k, v in vars(module).items()
             if not k.startswith("_") and k != "training" and _simple(v)}
    held = [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]
    tensors = {k: f"{path}.{k}" for k, _ in held}
    return {"class": name, "attrs": attrs, "tensors": tensors}


def _simple(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_simple(v) for v in value)
    return isinstance(value, SIMPLE)


def _attribute(gm: GraphModule, path: str, model: nn.Module | None) -> dict:
    """Describe a tensor the graph reads from the module: a parameter, a buffer or a constant made in forward."""
    tensor: Any = functools.reduce(getattr, path.split("."), gm)
    buffers = {name for name, _ in model.named_buffers()} if model is not None else set()
    kind = "parameter" if isinstance(tensor, nn.Parameter) else "buffer" if path in buffers else "constant"
    data = {"shape": list(tensor.shape), "dtype": dtype_name(tensor.dtype), "kind": kind}
    if kind == "constant" and tensor.dim() == 0:
        data["scalar"] = jsonable(tensor.item())
    return data


if __name__ == "__main__":
    raise SystemExit(main())
