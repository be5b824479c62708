"""Read PyTorch code into the IR: trace it in the sandbox, map the graph, and check the mapping in the sandbox."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from agent.ir import registry
from agent.ir.bind import DTYPE_NAMES
from agent.ir.expr import Expr, Node, Ref, walk
from agent.ir.infer import infer
from agent.ir.printer import to_torch
from agent.ir.types import IR_DTYPES, IRError, TensorType, ValueType
from agent.reader.code.find import CodeKind, CodeSource
from agent.reader.code.to_ir import Mapped, graph_to_ir
from agent.reader.errors import SpecQuestion
from agent.runtime.sandbox import SandboxResult, run_file

HARNESS_DIR = Path(__file__).resolve().parents[2] / "runtime" / "harness"
SCRIPTS = ("code_common.py", "trace_code.py", "check_code.py")
USER_FILE = "user_spec.py"
SEEDS = (1, 2, 3)
# [rtol, atol] by output dtype: the IR repeats the code's own ops, so only rounding of equal ops may differ.
TOLERANCE = {"float64": [1e-9, 1e-12], "float32": [1e-5, 1e-6], "float16": [1e-3, 1e-3], "bfloat16": [1.6e-2, 1e-2]}


class CodeInput(NamedTuple):
    """An input of the reading: a forward argument, or a module tensor the code reads (role "parameter")."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: Literal["argument", "parameter"]


@dataclass(frozen=True)
class CodeReading:
    """The IR of the user's code, its inputs (forward arguments first, then module tensors) and what was assumed."""

    expr: Expr
    inputs: tuple[CodeInput, ...]
    output: TensorType
    entry: str  # "Model" (the nn.Module read) or the function's name
    kind: CodeKind
    source: str  # the user's code, verbatim
    runnable: str = ""  # the code as it runs on its own (the baseline's copy): an import prelude, a snippet wrapped
    init_args: tuple[Any, ...] = field(default=(), hash=False)  # get_init_inputs(), as JSON data
    parameters: tuple[tuple[str, str], ...] = ()  # (IR input name, module attribute path): ("fc_weight", "fc.weight")
    notes: tuple[str, ...] = ()
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0

    @property
    def arguments(self) -> tuple[CodeInput, ...]:
        """Return the forward's tensor arguments, in order."""
        return tuple(i for i in self.inputs if i.role == "argument")

    def parameter_path(self, name: str) -> str | None:
        """Return the module attribute path behind a parameter input (`fc_weight` -> `fc.weight`)."""
        return dict(self.parameters).get(name)


def read_code(code: CodeSource, *, work_dir: Path, declared: dict[str, tuple[list[int], str]] | None = None,
              timeout_s: float = 120.0, entry: str | None = None) -> CodeReading:
    """Trace the code in the sandbox, read its graph into the IR, and check the IR against the code there."""
    # `declared` gives shapes and dtypes (from the prose) for code without get_inputs() and overrides it otherwise;
    # `entry` picks the class or function when the code defines several; each of the two runs may take timeout_s.
    # A reading that cannot be made, or that computes other values than the code, is a SpecQuestion.
    inputs = _declared(declared or {})
    shared = {USER_FILE: code.source, SCRIPTS[0]: (HARNESS_DIR / SCRIPTS[0]).read_text()}
    extra = ("--entry", entry) if entry else ()
    trace = _run(shared | {SCRIPTS[1]: (HARNESS_DIR / SCRIPTS[1]).read_text(), "inputs.json": json.dumps(inputs)},
                 SCRIPTS[1], work_dir / "trace", ("--inputs", "inputs.json", *extra), timeout_s,
                 "KernelGen could not read your code")
    try:
        mapped = graph_to_ir(trace)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        if isinstance(exc, SpecQuestion):
            raise
        raise SpecQuestion(f"KernelGen could not read the trace of your code ({type(exc).__name__}: {exc}).") from None
    plan = _plan(trace, mapped, inputs) | {"budget_s": timeout_s}
    check = _run(shared | {SCRIPTS[2]: (HARNESS_DIR / SCRIPTS[2]).read_text(), "plan.json": json.dumps(plan)},
                 SCRIPTS[2], work_dir / "check", ("--plan", "plan.json"), timeout_s,
                 "KernelGen could not check its reading of your code")
    if check["status"] != "pass":
        raise SpecQuestion(f"KernelGen read your code as {to_torch(mapped.expr)}, but that computes other values "
                           f"than your code ({check.get('message', 'no detail')}); it will not use that reading.")
    return CodeReading(
        expr=mapped.expr,
        inputs=tuple(CodeInput(i.name, i.shape, i.dtype, i.role) for i in mapped.inputs),
        output=mapped.output, entry=trace["entry"], kind=trace["kind"], source=code.source,
        runnable=str(trace.get("runnable") or code.source),
        init_args=tuple(trace.get("init_args", [])),
        parameters=tuple((i.name, i.origin) for i in mapped.inputs if i.role == "parameter"),
        notes=tuple(_notes(trace, mapped, check)),
        max_abs_error=float(check["max_abs"]), max_rel_error=float(check["max_rel"]),
    )


def _declared(declared: dict[str, tuple[list[int], str]]) -> dict[str, dict[str, Any]]:
    """Return the declared inputs as the harness reads them, with canonical dtype names."""
    inputs = {}
    for name, (shape, dtype) in declared.items():
        canonical = DTYPE_NAMES.get(str(dtype).removeprefix("torch."), str(dtype))
        if canonical not in IR_DTYPES:
            raise SpecQuestion(f"{name} is declared as {dtype}, a dtype the IR does not carry.")
        inputs[name] = {"shape": [int(d) for d in shape], "dtype": canonical}
    return inputs


def _run(files: dict[str, str], script: str, folder: Path, args: tuple[str, ...], timeout_s: float,
         failure: str) -> dict[str, Any]:
    """Run a harness in a fresh folder; an error, a crash or a timeout becomes a SpecQuestion with its reason."""
    result: SandboxResult = run_file(files, script, folder, device="cpu", timeout_s=timeout_s, args=args)
    if result.status == "timeout":
        raise SpecQuestion(f"{failure}: it ran past {timeout_s:.0f} s and was stopped.")
    if result.status not in ("pass", "fail"):
        message = str(result.result.get("message") or "it stopped without a result").strip().splitlines()[0]
        raise SpecQuestion(f"{failure}: {message}")
    return result.result


def _plan(trace: dict[str, Any], mapped: Mapped, inputs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Return what check_code.py needs: the rendering, the names, how to draw inputs, the tolerances."""
    types: dict[str, ValueType] = {i.name: TensorType(i.dtype, i.shape) for i in mapped.inputs}
    ranges, positive = _draws(mapped.expr, types, mapped)
    return {
        "expr": to_torch(mapped.expr), "entry": trace["entry"], "declared": inputs, "seeds": list(SEEDS),
        "arguments": {i.origin: i.name for i in mapped.inputs if i.role == "argument"},
        "tensors": {i.name: i.origin for i in mapped.inputs if i.role == "parameter"},
        "ranges": ranges, "positive": positive, "tolerance": TOLERANCE,
    }


def _draws(expr: Expr, types: dict[str, ValueType], mapped: Mapped) -> tuple[dict[str, list[int]], list[str]]:
    """Return the valid range of each integer argument (class targets, indices) and the arguments drawn positive."""
    origin = {i.name: i.origin for i in mapped.inputs}
    ranges: dict[str, list[int]] = {}
    positive: list[str] = []
    for node in walk(expr):
        if not isinstance(node, Node):
            continue
        op = registry.get(node.op)
        operands = dict(zip((p.name for p in op.operands), node.args, strict=False))
        for name in op.positive:
            arg = operands.get(name)
            if isinstance(arg, Ref) and arg.name in origin:
                positive.append(origin[arg.name])
        bound = _index_bound(node, operands, types)
        if bound is not None:
            ranges[origin[bound[0]]] = [0, bound[1]]
    return ranges, positive


def _index_bound(node: Node, operands: dict[str, Expr], types: dict[str, ValueType]) -> tuple[str, int] | None:
    """Return (input, high) for an integer input that indexes: a class target, embedding ids, gather indices."""
    key, size_of, dim = {"cross_entropy": ("target", "input", 1), "nll_loss": ("target", "input", 1),
                         "embedding": ("input", "weight", 0), "gather": ("index", "input", None),
                         "index_select": ("index", "input", None)}.get(node.op, (None, None, None))
    if key is None or size_of is None or not isinstance(operands.get(key), Ref):
        return None
    try:
        shape = infer(operands[size_of], types)
    except IRError:
        return None
    if not isinstance(shape, TensorType) or not shape.shape:
        return None
    axis = dim if dim is not None else node.attr("dim")
    axis = int(axis) if isinstance(axis, int) else 0
    if len(shape.shape) == 1:
        axis = 0
    target = operands[key]
    assert isinstance(target, Ref)
    return target.name, shape.shape[axis]


def _notes(trace: dict[str, Any], mapped: Mapped, check: dict[str, Any]) -> list[str]:
    """Say what the reading assumed, where its inputs came from, and how it was checked."""
    kind = "class" if trace["kind"] == "module" else "function"
    notes = [f"read {kind} {trace['entry']}" + (" (an nn.Module, in eval mode)" if kind == "class" else "")]
    if trace["kind"] == "module" and trace.get("init_args"):
        notes.append(f"constructor arguments from get_init_inputs(): {trace['init_args']!r}")
    by_source: dict[str, list[str]] = {}
    for argument in trace["arguments"]:
        shown = f"{argument['name']} {argument['shape']} {argument['dtype']}"
        by_source.setdefault(argument["source"], []).append(shown)
    words = {"get_inputs": "inputs from get_inputs()", "declared": "inputs as declared"}
    notes += [f"{words.get(source, source)}: {', '.join(items)}" for source, items in by_source.items()]
    for fixed in trace.get("fixed", []):
        why = "its default" if fixed["source"] == "default" else "from get_inputs()"
        notes.append(f"{fixed['name']} = {fixed['value']!r} is fixed ({why})")
    parameters = [i for i in mapped.inputs if i.role == "parameter"]
    if parameters:
        notes.append("module tensors as inputs: " + ", ".join(f"{i.name} {list(i.shape)} {i.dtype} ({i.origin})"
                                                              for i in parameters))
    notes += [*trace.get("notes", []), *mapped.notes]
    count, error = len(check["seeds"]), float(check["max_abs"])
    notes.append(f"checked: the IR computes the same values as your code on {count} random "
                 f"input{'s' if count > 1 else ''} (max abs error {f'{error:.3g}' if error else '0.0'})")
    notes += check.get("notes", [])
    return notes
