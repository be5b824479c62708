"""Run one TritonBench-T reference and its test out of process; record the first call and reference outputs.

Run as a script (stdlib and torch only): `python probe.py ENTRY_HINT OUT_DIR SEEDS < reference.py`, or
`python probe.py serve` (torch imported once, a forked child per job: see serve()). Each job writes
OUT_DIR/capture.json (the first call's arguments, or why there is none) and OUT_DIR/reference.pt (per seed: the
fresh inputs, in the order of capture.json's tensors, and the benchmark function's output on them).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import resource
import signal
import sys
import time
import types
from pathlib import Path
from typing import Any

SPLIT = re.compile(r"^#{20,}\s*$", re.M)
MEMORY_BYTES = 6 << 30
CPU_SECONDS = 30


def cpu_source(source: str) -> str:
    """Point the benchmark's code at the CPU: `'cuda'` devices become `'cpu'`, `.cuda()` goes."""
    source = re.sub(r"""(['"])cuda(:\d+)?\1""", "'cpu'", source)
    source = re.sub(r"\.cuda\(\)", "", source)
    return re.sub(r"torch\.cuda\.synchronize\(\)", "None", source)


def split_source(source: str) -> tuple[str, str]:
    """Return (reference, test): the file's parts before and after its line of `#`."""
    parts = SPLIT.split(source, maxsplit=1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def entry_name(reference: str, test: str, hint: str) -> str:
    """The benchmark function: the hinted def if there is one, else the first def the test calls, else the last."""
    defs = [n.name for n in ast.parse(reference).body if isinstance(n, ast.FunctionDef)]
    if hint in defs:
        return hint
    called = [n.func.id for n in ast.walk(ast.parse(test)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    return next((c for c in called if c in defs), defs[-1] if defs else hint)


def without_redefinition(test: str, name: str) -> str:
    """Drop the test part's own top-level `def name` (some tests repeat the reference), so the wrapper stays."""
    tree = ast.parse(test)
    tree.body = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == name)]
    return ast.unparse(tree)


def plain(value: Any) -> Any:
    """A JSON value for a non-tensor argument (repr for what JSON has no form of)."""
    import torch

    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, torch.Size):
        return list(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    return repr(value)


def describe(value: Any) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {"dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape)}
    if value.numel() and not value.is_complex():
        out["min"] = float(value.min().item()) if value.dtype != torch.bool else 0.0
        out["max"] = float(value.max().item()) if value.dtype != torch.bool else 1.0
    return out


def capture_call(fn: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The call's tensors (in signature order, lists of tensors flattened) and its other arguments."""
    import torch

    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    tensors: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for name, value in bound.arguments.items():
        param = sig.parameters[name]
        if isinstance(value, torch.Tensor):
            if name != "out":
                tensors.append({"name": name, "arg": name, "index": None} | describe(value))
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
            tensors += [{"name": f"{name}{i}", "arg": name, "index": i} | describe(v) for i, v in enumerate(value)]
        elif isinstance(value, dict) and param.kind == param.VAR_KEYWORD:
            others += [{"name": k, "value": plain(v), "differs": True} for k, v in value.items()]
        else:
            default = param.default
            differs = default is param.empty or not _same(value, default)
            others.append({"name": name, "value": plain(value), "differs": differs,
                           "kind": "positional" if param.kind == param.VAR_POSITIONAL else "argument"})
    return {"tensors": tensors, "others": others}


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b) or (a is None and b is None)
    except Exception:
        return False


def random_inputs(tensors: list[dict[str, Any]], seed: int) -> list[Any]:
    """Fresh inputs of the captured shapes: randn (rand + 0.1 where the test's tensor was >= 0), ints in the test's
    range, random bools; floats in float64."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    made = []
    for t in tensors:
        dtype = getattr(torch, t["dtype"])
        shape = t["shape"]
        if dtype == torch.bool:
            made.append(torch.rand(shape, generator=gen) < 0.5)
        elif dtype.is_floating_point:
            x = torch.rand(shape, generator=gen, dtype=torch.float64) + 0.1 if t.get("min", -1.0) >= 0 else \
                torch.randn(shape, generator=gen, dtype=torch.float64)
            made.append(x)
        elif dtype.is_complex:
            made.append(torch.randn(shape, generator=gen, dtype=dtype))
        else:
            low, high = int(t.get("min", 0)), int(t.get("max", 4))
            made.append(torch.randint(low, high + 1, shape, generator=gen, dtype=dtype))
    return made


def call_with(fn: Any, capture: dict[str, Any], args: tuple, kwargs: dict, inputs: list[Any]) -> Any:
    """Call fn as the test's first call did, with its tensors replaced by inputs (lists rebuilt)."""
    import torch

    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    by_arg: dict[str, list[tuple[int | None, Any]]] = {}
    for t, x in zip(capture["tensors"], inputs, strict=True):
        by_arg.setdefault(t["arg"], []).append((t["index"], x))
    for name, items in by_arg.items():
        if items[0][0] is None:
            bound.arguments[name] = items[0][1].clone()
        else:
            rebuilt = [x.clone() for _, x in items]
            bound.arguments[name] = tuple(rebuilt) if isinstance(bound.arguments[name], tuple) else rebuilt
    if isinstance(bound.arguments.get("out"), torch.Tensor):
        del bound.arguments["out"]
    return fn(*bound.args, **bound.kwargs)


def as_output(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return tuple(as_output(v) for v in value)
    if isinstance(value, (bool, int, float)):
        return torch.tensor(value)
    raise TypeError(f"the benchmark function returns {type(value).__name__}")


def same_output(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and all(
            same_output(x, y) for x, y in zip(a, b, strict=True))
    return a.shape == b.shape and bool(torch.equal(a, b) or torch.allclose(
        a.double(), b.double(), rtol=1e-6, atol=1e-6, equal_nan=True))


def run_one(source: str, hint: str, out_dir: Path, seeds: list[int]) -> None:
    """Probe one reference in this (child) process, limited in memory and CPU time; write capture.json."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    result: dict[str, Any] = {"ok": False}
    try:
        result |= probe(source, hint, out_dir, seeds)
    except BaseException as exc:  # the benchmark's code: anything it raises means "no reference"
        result["error"] = f"{type(exc).__name__}: {exc}"[:500]
    (out_dir / "capture.json").write_text(json.dumps(result, indent=1), encoding="utf-8")


def serve() -> None:
    """Import torch once, then fork a child per job: a JSON line {source, hint, out_dir, seeds, timeout} on stdin
    is answered by a line {"status": "done" | "timeout" | "exit N"} once the child ends or is killed."""
    import torch

    torch.set_num_threads(1)
    for line in sys.stdin:
        job = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:  # the child: the benchmark's code runs here only
            try:
                os.setsid()
                quiet = os.open(os.devnull, os.O_WRONLY)
                os.dup2(quiet, 1)  # the test's prints must not reach the protocol on stdout
                run_one(Path(job["source"]).read_text(encoding="utf-8"), job["hint"], Path(job["out_dir"]),
                        job["seeds"])
            finally:
                os._exit(0)
        status = _wait(pid, float(job["timeout"]))
        print(json.dumps({"status": status}), flush=True)


def _wait(pid: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            return "done" if code == 0 else f"exit {code}"
        time.sleep(0.02)
    os.killpg(pid, signal.SIGKILL)  # the child's own process group (setsid): it and whatever it started
    os.waitpid(pid, 0)
    return "timeout"


def main() -> None:
    if sys.argv[1:] == ["serve"]:
        serve()
        return
    hint, out_dir, seeds = sys.argv[1], Path(sys.argv[2]), [int(s) for s in sys.argv[3].split(",")]
    run_one(sys.stdin.read(), hint, out_dir, seeds)


def probe(source: str, hint: str, out_dir: Path, seeds: list[int]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    reference, test = split_source(cpu_source(source))
    name = entry_name(reference, test, hint)
    module = types.ModuleType(hint)  # some tests import the function from a module named like the file
    sys.modules[hint] = module
    namespace = module.__dict__
    torch.manual_seed(0)
    exec(compile(reference, f"<{name} reference>", "exec"), namespace)
    fn = namespace[name]
    first: dict[str, Any] = {}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if first:
            return fn(*args, **kwargs)
        first["capture"] = capture_call(fn, args, kwargs)
        held = [(a.clone() if isinstance(a, torch.Tensor) else a) for a in args]
        first["held"] = (tuple(held), {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()})
        return fn(*args, **kwargs)

    namespace[name] = wrapper
    test_error = None
    if test.strip():
        try:
            exec(compile(without_redefinition(test, name), f"<{name} test>", "exec"), namespace)
        except Exception as exc:
            test_error = f"{type(exc).__name__}: {exc}"[:300]
    if not first:
        return {"entry": name, "error": test_error or "the test never calls the function"}
    capture = first["capture"]
    args, kwargs = first["held"]
    runs = []
    try:
        runs = [reference_run(fn, capture, args, kwargs, seed, random_inputs(capture["tensors"], seed))
                for seed in seeds]
    except Exception:  # fresh inputs break it (a Cholesky factor, binomial counts): the test's own inputs then
        run = reference_run(fn, capture, args, kwargs, seeds[0], tensor_arguments(fn, args, kwargs))
        runs = [run | {"inputs_from": "the test's own first call"}]
    torch.save(runs, out_dir / "reference.pt")
    return {"ok": True, "entry": name, "test_error": test_error, **capture,
            "precision": [r["precision"] for r in runs], "random": any(r["random"] for r in runs),
            "inputs_from": runs[0].get("inputs_from", "fresh random inputs")}


def reference_run(fn: Any, capture: dict[str, Any], args: tuple, kwargs: dict, seed: int,
                  inputs: list[Any]) -> dict[str, Any]:
    """The benchmark function's output on inputs, in float64 where it takes it, else in the test's dtypes."""
    import torch

    try:
        return _reference_run(fn, capture, args, kwargs, seed, inputs, "float64")
    except Exception:
        inputs = [x.to(getattr(torch, t["dtype"])) for t, x in zip(capture["tensors"], inputs, strict=True)]
        return _reference_run(fn, capture, args, kwargs, seed, inputs, "captured")


def _reference_run(fn: Any, capture: dict[str, Any], args: tuple, kwargs: dict, seed: int, inputs: list[Any],
                   precision: str) -> dict[str, Any]:
    import torch

    torch.manual_seed(seed)
    output = as_output(call_with(fn, capture, args, kwargs, inputs))
    torch.manual_seed(seed + 1000)
    again = as_output(call_with(fn, capture, args, kwargs, inputs))
    return {"seed": seed, "inputs": inputs, "output": output, "precision": precision,
            "random": not same_output(output, again)}


def tensor_arguments(fn: Any, args: tuple, kwargs: dict) -> list[Any]:
    """The call's own tensors, in capture_call's order (floats in float64)."""
    import torch

    bound = inspect.signature(fn).bind(*args, **kwargs)
    found: list[Any] = []
    for name, value in bound.arguments.items():
        if isinstance(value, torch.Tensor) and name != "out":
            found.append(value)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
            found += list(value)
    return [x.to(torch.float64) if x.is_floating_point() else x for x in found]


if __name__ == "__main__":
    main()
