"""Load the user's PyTorch code, find its entry and build its inputs: shared by trace_code.py and check_code.py.

Copied into the sandbox next to those harnesses and `user_spec.py` (the user's code, verbatim). Standard library
and torch only: nothing of the service is importable here.
"""

import ast
import builtins
import inspect
import json
import math
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

USER_FILE = "user_spec.py"
USER_MODULE = "user_spec"
HELPERS = ("get_inputs", "get_init_inputs")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
          "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}
# Modules whose output differs between training and eval mode: their presence is noted (the code is read in eval).
MODE_DEPENDENT = ("Dropout", "BatchNorm", "InstanceNorm", "AlphaDropout")


class Refused(Exception):
    """The user's code cannot be read; the message is the one-line reason the user sees."""


def dtype_name(dtype: torch.dtype) -> str:
    """Return `float32` for torch.float32."""
    return str(dtype).removeprefix("torch.")


def one_line(exc: BaseException) -> str:
    """Return `Type: first line of the message`, with the line of the user's code that raised it."""
    if isinstance(exc, SyntaxError) and exc.filename == USER_FILE and exc.lineno:
        return f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(USER_FILE)]
    return f"{text} (line {frames[-1].lineno}: {frames[-1].line})" if frames else text


def jsonable(value: Any) -> Any:
    """Return value as JSON data (tuples as lists, tensors and other objects as their repr)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    return repr(value)[:200]


def write_result(path: str, result: dict) -> None:
    """Write the result JSON: the service reads it, never the output."""
    with open(path, "w") as handle:
        json.dump(result, handle, indent=1)


def argument(flag: str, default: str | None = None) -> str | None:
    """Return the value after a command-line flag."""
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


# What pasted code assumes is imported; the runnable source the baseline keeps starts with it.
PRELUDE = "import math\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def load_user() -> tuple[types.ModuleType, str]:
    """Execute user_spec.py as a module with torch, nn, F and math already imported, as pasted code assumes.

    Return the module and the source that runs the same way on its own (the prelude, and a snippet wrapped).
    """
    with open(USER_FILE) as handle:
        source = handle.read()
    try:
        tree = ast.parse(source, USER_FILE)
    except SyntaxError as exc:
        raise Refused(f"the code does not parse: {one_line(exc)}") from None
    runnable = source
    if any(isinstance(node, ast.Return) for node in tree.body):
        tree = _wrap_snippet(tree)
        runnable = ast.unparse(tree) + "\n"
    module = types.ModuleType(USER_MODULE)
    module.__file__ = USER_FILE
    module.__dict__.update(torch=torch, nn=nn, F=F, math=math)
    sys.modules[USER_MODULE] = module
    try:
        exec(compile(tree, USER_FILE, "exec"), module.__dict__)  # noqa: S102  (the sandbox runs the user's code)
    except Exception as exc:
        raise Refused(f"importing the code failed: {one_line(exc)}") from None
    return module, PRELUDE + runnable


def _wrap_snippet(tree: ast.Module) -> ast.Module:
    """Turn statements ending in a top-level `return` into `def snippet(<free names>)`."""
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    known = stored | {"torch", "nn", "F", "math"} | {a.asname or a.name.split(".")[0] for i in imports for a in i.names}
    free: list[str] = []
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in known | set(free):
            if not hasattr(builtins, node.id):
                free.append(node.id)
    lines = [ast.unparse(node) for node in imports]
    lines.append(f"def snippet({', '.join(free)}):")
    lines += ["    " + line for node in body for line in ast.unparse(node).splitlines()]
    return ast.parse("\n".join(lines) + "\n", USER_FILE)


def find_entry(module: types.ModuleType, requested: str | None) -> tuple[str, str, Any]:
    """Return (kind, name, object): the class Model (or the one nn.Module), else the operator function."""
    defined = {name: value for name, value in vars(module).items()
               if getattr(value, "__module__", None) == USER_MODULE and not name.startswith("_")}
    if requested:
        if requested not in defined:
            raise Refused(f"the code defines no {requested}")
        value = defined[requested]
        return ("module" if isinstance(value, type) else "function"), requested, value
    classes = {n: v for n, v in defined.items() if isinstance(v, type) and issubclass(v, nn.Module)
               and v.forward is not nn.Module.forward}
    if "Model" in classes:
        return "module", "Model", classes["Model"]
    if len(classes) == 1:
        (name, value), = classes.items()
        return "module", name, value
    if classes:
        raise Refused(f"the code defines several modules ({', '.join(classes)}); name the one to read Model")
    functions = {n: v for n, v in defined.items() if inspect.isfunction(v) and n not in HELPERS}
    if len(functions) > 1:  # helpers called by the operator are not candidates
        roots = {n: v for n, v in functions.items()
                 if not any(n in other.__code__.co_names for m, other in functions.items() if m != n)}
        functions = roots or functions
    if len(functions) == 1:
        (name, value), = functions.items()
        return "function", name, value
    if functions:
        raise Refused(f"the code defines several functions ({', '.join(functions)}); say which one is the operator")
    raise Refused("the code defines no nn.Module with a forward and no function to read")


@dataclass
class Setup:
    """The entry ready to call: its parameters and the value of each, tensors and fixed values alike."""

    kind: str
    entry: str
    target: Callable[..., Any]
    model: nn.Module | None
    names: list[str]
    values: list[Any]
    init_args: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # where each value came from: get_inputs, declared, default
    runnable: str = ""  # the code as it runs on its own (see load_user)

    @property
    def tensors(self) -> dict[str, torch.Tensor]:
        """Return the tensor arguments by name, in order."""
        return {n: v for n, v in zip(self.names, self.values, strict=True) if isinstance(v, torch.Tensor)}

    @property
    def fixed(self) -> dict[str, Any]:
        """Return the arguments that are not tensors (traced as constants)."""
        return {n: v for n, v in zip(self.names, self.values, strict=True) if not isinstance(v, torch.Tensor)}

    def call(self) -> Any:
        """Run the entry on copies of the inputs (code that changes its inputs in place leaves them as they were)."""
        return self.target(*(v.clone() if isinstance(v, torch.Tensor) else v for v in self.values))


def prepare(declared: dict[str, dict], requested: str | None, seed: int, *, perturb: bool = False,
            ranges: dict[str, list[int]] | None = None, positive: tuple[str, ...] = (),
            budget_bytes: int | None = None) -> Setup:
    """Build the entry and its inputs: get_init_inputs/get_inputs when the code has them, else the declared ones."""
    module, runnable = load_user()
    kind, name, entry = find_entry(module, requested)
    torch.manual_seed(seed)
    model: nn.Module | None = None
    init_args: list[Any] = []
    notes: list[str] = []
    if kind == "module":
        if hasattr(module, "get_init_inputs"):
            init_args = list(_call_helper(module.get_init_inputs, "get_init_inputs"))
        try:
            model = entry(*init_args)
        except Exception as exc:
            raise Refused(f"{name}(*get_init_inputs()) failed: {one_line(exc)}") from None
        model.eval()
        if perturb:  # parameters left at their init (LayerNorm's ones and zeros) would hide a weight/bias swap
            with torch.no_grad():
                for parameter in model.parameters():
                    if parameter.is_floating_point():
                        parameter.add_(0.5 * torch.randn_like(parameter))
        target = model
        signature = inspect.signature(model.forward)
    else:
        target = entry
        signature = inspect.signature(entry)
    parameters = [p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
        raise Refused(f"{name} takes *args or **kwargs; write its inputs as named parameters")
    given = _given_inputs(module, budget_bytes, notes) if hasattr(module, "get_inputs") else []
    if len(given) > len(parameters):
        raise Refused(f"get_inputs() returns {len(given)} values but {name} takes {len(parameters)}")
    names, values, sources = [], [], {}
    for index, parameter in enumerate(parameters):
        names.append(parameter.name)
        if parameter.name in declared:
            example = given[index] if index < len(given) else None
            values.append(_tensor(parameter.name, declared[parameter.name], ranges, positive, example))
            sources[parameter.name] = "declared"
        elif index < len(given):
            values.append(given[index])
            sources[parameter.name] = "get_inputs"
        elif parameter.default is not inspect.Parameter.empty:
            values.append(parameter.default)
            sources[parameter.name] = "default"
        else:
            raise Refused(f"no shape for {parameter.name}: say its shape and dtype (e.g. {parameter.name} "
                          f"[128, 256] fp16) or add get_inputs()")
    for n, v in zip(names, values, strict=True):
        if isinstance(v, (list, tuple)) and any(isinstance(t, torch.Tensor) for t in v):
            raise Refused(f"{n} is a list of tensors; write each tensor as its own parameter")
    setup = Setup(kind, name, target, model, names, values, init_args, notes, sources, runnable)
    if model is not None:
        _match_dtype(setup)
    return setup


def _given_inputs(module: Any, budget_bytes: int | None, notes: list[str]) -> list[Any]:
    """Call get_inputs(); past the budget, with the batch-size global it reads made smaller (a check needs values,
    not the published size: KernelBench's ReLU draws 6 GiB)."""
    helper = module.get_inputs
    if budget_bytes is None:
        return list(_call_helper(helper, "get_inputs"))
    with torch.device("meta"):  # shapes and dtypes only: nothing is allocated
        shapes = [t for t in _call_helper(helper, "get_inputs") if isinstance(t, torch.Tensor)]
    total = sum(t.numel() * t.element_size() for t in shapes)
    largest = max(shapes, key=lambda t: t.numel(), default=None)
    if total <= budget_bytes or largest is None or largest.dim() == 0:
        return list(_call_helper(helper, "get_inputs"))
    batch = int(largest.shape[0])
    # Not a global the model was built with (`features = 64` beside `batch_size = 64`): its size must stay.
    init_code = getattr(getattr(module, "get_init_inputs", None), "__code__", None)
    built_with = set(init_code.co_names) if init_code is not None else set()
    names = [n for n in helper.__code__.co_names if n not in built_with
             and type(getattr(module, n, None)) is int and getattr(module, n) == batch]
    if not names:  # no global names the leading size: drawn as written (and refused if it cannot be allocated)
        return list(_call_helper(helper, "get_inputs"))
    smaller = max(1, batch * budget_bytes // total)
    saved = {n: getattr(module, n) for n in names}
    try:
        for name in names:
            setattr(module, name, smaller)
        given = list(_call_helper(helper, "get_inputs"))
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
    notes.append(f"checked with {names[0]} = {smaller} instead of {batch}: the published inputs hold "
                 f"{total / 2**30:.1f} GiB")
    return given


def _call_helper(helper: Callable[[], Any], name: str) -> Any:
    try:
        result = helper()
    except Exception as exc:
        raise Refused(f"{name}() failed: {one_line(exc)}") from None
    if not isinstance(result, (list, tuple)):
        raise Refused(f"{name}() must return a list")
    return result


def _tensor(name: str, spec: dict, ranges: dict[str, list[int]] | None, positive: tuple[str, ...],
            example: Any) -> torch.Tensor:
    """Draw a declared input: normal floats (positive where the op needs it), ints in their range, random bools."""
    shape, dtype = tuple(spec["shape"]), DTYPES[spec["dtype"]]
    if dtype == torch.bool:
        return torch.rand(shape) < 0.5
    if not dtype.is_floating_point:
        low, high = (ranges or {}).get(name) or _observed_range(example) or [0, 2]
        return torch.randint(low, high, shape, dtype=dtype)
    if name in positive:
        return (torch.rand(shape) * 3.75 + 0.25).to(dtype)
    return torch.randn(shape).to(dtype)


def _observed_range(example: Any) -> list[int] | None:
    if isinstance(example, torch.Tensor) and example.numel() and not example.is_floating_point():
        return [int(example.min()), int(example.max()) + 1]
    return None


def _match_dtype(setup: Setup) -> None:
    """Cast the module to the one float dtype of its inputs, as a kernel in that dtype would hold its weights."""
    assert setup.model is not None
    floats = {t.dtype for t in setup.tensors.values() if t.is_floating_point()}
    held = {t.dtype for t in [*setup.model.parameters(), *setup.model.buffers()] if t.is_floating_point()}
    if len(floats) == 1 and held and held != floats:
        (dtype,) = floats
        setup.model.to(dtype)
        setup.notes.append(f"the module's parameters are cast to {dtype_name(dtype)}, the dtype of its inputs")
    modes = sorted({type(m).__name__ for m in setup.model.modules() if type(m).__name__.startswith(MODE_DEPENDENT)})
    if modes:
        setup.notes.append(f"the module is read in eval mode (inference): {', '.join(modes)} behave accordingly")
