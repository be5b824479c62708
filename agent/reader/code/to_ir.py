"""Read the graph trace_code.py wrote (torch.fx nodes with shapes) into one IR expression over named inputs."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Any, Literal

from agent.ir.expr import Const, Expr, Node, Ref, names
from agent.ir.infer import infer
from agent.ir.printer import to_text
from agent.ir.types import IR_DTYPES, IRError, TensorType, ValueType
from agent.reader.code.calls import CallReader
from agent.reader.code.values import UNREAD, Extreme, Pieces, Reading, Unread, is_tensor, lift
from agent.reader.errors import SpecQuestion

Role = Literal["argument", "parameter"]
_RESERVED = {"torch", "F", "math", "nn"}  # names the IR's PyTorch rendering uses
_STATIC_METHODS = {"size", "dim", "ndimension", "numel", "nelement"}
_STATIC_ATTRS = {"shape", "dtype", "ndim", "device", "is_cuda"}
_PURE = ("operator.", "math.", "builtins.")


@dataclass(frozen=True)
class GraphInput:
    """An input of the reading: a forward argument, or a module tensor named after its path (`fc.weight`)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: Role
    origin: str  # the forward's parameter name, or the module attribute path


@dataclass(frozen=True)
class Mapped:
    """The IR of a traced graph, its inputs (forward arguments first), output type and what was assumed."""

    expr: Expr
    inputs: tuple[GraphInput, ...]
    output: TensorType
    notes: tuple[str, ...]


def graph_to_ir(trace: dict[str, Any]) -> Mapped:
    """Read a trace into the IR; SpecQuestion names every op the IR lacks and every step it could not read."""
    return _Walker(trace).run()


class _Walker(CallReader):
    """Visit the nodes the output depends on, in graph order, keeping what each stands for."""

    def __init__(self, trace: dict[str, Any]) -> None:
        super().__init__()
        self.trace = trace
        self.nodes: dict[str, dict[str, Any]] = {n["name"]: n for n in trace["nodes"]}
        self.static: set[str] = set()
        self.inputs: dict[str, GraphInput] = {}
        self.types: dict[str, ValueType] = {}
        # Types of the subtrees read so far: each node's check reuses them (typing the whole tree again at every
        # node was quadratic, minutes for a loop of a few hundred steps).
        self.typed: dict[Expr, ValueType] = {}
        self.used_names: set[str] = set()
        self.paths: dict[str, str] = {}  # module path -> IR name

    def run(self) -> Mapped:
        """Read every needed node, then the output."""
        for node in self.trace["nodes"]:  # every tensor argument keeps its name, used or not
            if node["op"] == "placeholder" and "tensor" in (node.get("value") or {}):
                self.env[node["name"]] = self._argument(node)
        needed = self._needed()
        output = next(n for n in self.trace["nodes"] if n["op"] == "output")
        for node in self.trace["nodes"]:
            if node["name"] in needed and node["name"] not in self.env and node["op"] != "output":
                self.current = node
                self.env[node["name"]] = self._visit(node)
        expr = self._output(output)
        self._raise_if_unread()
        assert expr is not None
        return self._finish(expr, output)

    def _needed(self) -> set[str]:
        """Return the nodes the output depends on, with in-place updates of those (asserts and dead code skipped)."""
        needed: set[str] = set()
        stack = [n["name"] for n in self.trace["nodes"] if n["op"] == "output"]
        while stack:
            while stack:
                name = stack.pop()
                if name not in needed:
                    needed.add(name)
                    stack.extend(_refs([self.nodes[name]["args"], self.nodes[name]["kwargs"]]))
            stack = [n["name"] for n in self.trace["nodes"] if n["name"] not in needed and _mutates(n)
                     and set(_refs(n["args"][:1])) & needed]
        return needed

    def _visit(self, node: dict[str, Any]) -> Reading:
        value = node.get("value") or {}
        if node["op"] == "placeholder":
            self.static.add(node["name"])
            return lift(value.get("const"))
        if node["op"] == "get_attr":
            return self.module_tensor(node["target"])
        if "const" in value and self._is_static(node):
            self.static.add(node["name"])
            return lift(value["const"])
        args = tuple(self.decode(a) for a in node["args"])
        kwargs = {k: self.decode(v) for k, v in node["kwargs"].items()}
        if any(isinstance(v, Unread) for v in (*args, *kwargs.values())):
            return UNREAD
        try:
            if node["op"] == "call_function":
                result = self.function(node["target"], args, kwargs)
            elif node["op"] == "call_method":
                result = self.method(node["target"], args[0], args[1:], kwargs)
            else:
                result = self.module(node["module"], args, kwargs)
        except IRError as exc:
            return self.problem(str(exc))
        return self._checked(node, result)

    def _is_static(self, node: dict[str, Any]) -> bool:
        """Tell whether a node's constant comes from shapes and fixed values only, never from tensor data."""
        target = node["target"]
        if node["op"] == "call_method":
            return str(target) in _STATIC_METHODS
        if target == "builtins.getattr":
            return node["args"][1] in _STATIC_ATTRS
        return str(target).startswith(_PURE) and all(r in self.static for r in _refs([node["args"], node["kwargs"]]))

    def _checked(self, node: dict[str, Any], result: Reading) -> Reading:
        """Check a tensor reading's type against the shape and dtype the code produced at that node."""
        recorded = (node.get("value") or {}).get("tensor")
        if recorded is None or not is_tensor(result):
            return result
        assert isinstance(result, (Ref, Node))
        try:
            found = infer(result, self.types, self.typed)
        except IRError as exc:
            return self.problem(str(exc))
        want = TensorType(recorded["dtype"], tuple(recorded["shape"]))
        if found != want:
            return self.problem(f"{self.where()}: read as {to_text(result)}, which gives {found} where the code "
                                f"gives {want}")
        return result

    def _argument(self, node: dict[str, Any]) -> Reading:
        meta = node["value"]["tensor"]
        name = self._fresh(node["argument"])
        return self._input(name, meta, "argument", node["argument"])

    def module_tensor(self, path: str) -> Reading:
        """Return the IR input for a module parameter or buffer (`fc.weight` -> fc_weight), or a 0-d constant."""
        info = self.trace["tensors"][path]
        if info["kind"] == "constant" and "scalar" in info:
            self.notes.append(f"the constant tensor {info['scalar']!r} made in forward is read as a number")
            return Const(info["scalar"])
        if path not in self.paths:
            self.paths[path] = self._fresh(path)
        return self._input(self.paths[path], info, "parameter", path)

    def _input(self, name: str, meta: dict[str, Any], role: Role, origin: str) -> Reading:
        if meta["dtype"] not in IR_DTYPES:
            return self.problem(f"{origin} is {meta['dtype']}, a dtype the IR does not carry")
        self.inputs[name] = GraphInput(name, tuple(meta["shape"]), meta["dtype"], role, origin)
        self.types[name] = TensorType(meta["dtype"], tuple(meta["shape"]))
        return Ref(name)

    def _fresh(self, wanted: str) -> str:
        """Return a free IR name for an argument or a module path: `fc.weight` -> `fc_weight`."""
        base = re.sub(r"\W", "_", wanted).strip("_") or "t"
        if base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED:
            base = f"{base}_" if not base[0].isdigit() else f"t{base}"
        name, count = base, 2
        while name in self.used_names:
            name, count = f"{base}_{count}", count + 1
        self.used_names.add(name)
        return name

    def _output(self, output: dict[str, Any]) -> Expr | None:
        """Return the expression of the one returned tensor; several outputs need a question."""
        (value,) = output["args"]
        if isinstance(value, list):
            if len(value) != 1:
                shown = ", ".join(str(v.get("node", v)) if isinstance(v, dict) else repr(v) for v in value)
                raise SpecQuestion(
                    f"The code returns {len(value)} values ({shown}); a kernel here computes one output. "
                    "Which one should it compute?", example="return only the tensor the kernel should produce")
            self.notes.append("the code returns a one-element tuple; its tensor is the output")
            value = value[0]
        result = self.decode(value)
        if isinstance(result, Unread):
            return None
        if isinstance(result, (Extreme, Pieces)):
            raise SpecQuestion("The code returns several tensors (values and indices, or pieces); "
                               "which one should the kernel compute?")
        if isinstance(result, Ref):
            raise SpecQuestion(f"The code returns its input {result.name} unchanged (after views or copies only); "
                               "there is no computation to write a kernel for.")
        if not isinstance(result, Node):
            raise SpecQuestion(f"The code returns {result!r}, not a tensor computed from its inputs.")
        return result

    def _finish(self, expr: Expr, output: dict[str, Any]) -> Mapped:
        used = set(names(expr))
        arguments = [i for i in self.inputs.values() if i.role == "argument"]
        for unused in (i for i in arguments if i.name not in used):
            self.notes.append(f"the argument {unused.origin} is not used by the output")
        parameters = [i for i in self.inputs.values() if i.role == "parameter" and i.name in used]
        types = {i.name: self.types[i.name] for i in (*arguments, *parameters)}
        try:
            found = infer(expr, types)
        except IRError as exc:
            raise SpecQuestion(f"The reading of the code is not well-formed: {exc}") from None
        meta = (output.get("value") or {}).get("tensor")
        want = TensorType(meta["dtype"], tuple(meta["shape"])) if meta else None
        if not isinstance(found, TensorType) or found != want:
            raise SpecQuestion(f"The reading {to_text(expr)} gives {found}, not what the code returns ({want}).")
        return Mapped(expr, (*arguments, *parameters), found, tuple(self.notes))

    def _raise_if_unread(self) -> None:
        parts = []
        if self.unmapped:
            parts.append(f"The code uses {_join(self.unmapped)}, which the IR does not have.")
        if self.problems:
            parts.append("Some steps could not be read: " + "; ".join(self.problems) + ".")
        if parts:
            raise SpecQuestion(" ".join(parts), understood=f"{self.trace.get('entry', 'the code')} traced into "
                               f"{len(self.trace['nodes'])} graph nodes",
                               example="write the computation with operators the IR has (elementwise math, "
                                       "reductions, softmax, norms, matmul, conv), or describe it in words")


def _mutates(node: dict[str, Any]) -> bool:
    """Tell whether a node changes its first argument in place (`y.mul_(3)`, `F.relu(y, inplace=True)`)."""
    target = str(node["target"])
    if node["op"] == "call_method":
        return target.endswith("_") and not target.startswith("_")
    return node["op"] == "call_function" and node["kwargs"].get("inplace") is True


def _refs(data: Any) -> list[str]:
    """List the node names a JSON argument structure refers to."""
    if isinstance(data, dict):
        if set(data) == {"node"}:
            return [data["node"]]
        return [r for v in data.values() for r in _refs(v)]
    if isinstance(data, list):
        return [r for v in data for r in _refs(v)]
    return []


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"
