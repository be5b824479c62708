"""What the service's harnesses share: the plan-in, result-out main, the entry points, NaN-poisoned allocations.

Copied into the sandbox next to the harness that imports it (see agent/runtime/harnesses.py).
"""

import contextlib
import importlib
import json
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Any

# How many float64 copies of the inputs the GPU must have room for before the reference runs there.
_FLOAT64_COPIES = 12


class Refused(Exception):
    """A plan the harness will not run; the message is the reason the user reads."""


def main_with_plan(run: Callable[[dict], dict], passing: tuple[str, ...] = ("pass",)) -> int:
    """Read `--plan PATH`, run it, write the result to `--json PATH`; a crash is a result too."""
    plan_path = sys.argv[sys.argv.index("--plan") + 1]
    result_path = sys.argv[sys.argv.index("--json") + 1]
    with open(plan_path) as handle:
        plan = json.load(handle)
    try:
        result = run(plan)
    except Refused as exc:
        result = {"status": "error", "message": str(exc)}
    except Exception as exc:  # the generated modules may raise anything; it comes back as data
        result = {"status": "error", "message": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
    with open(result_path, "w") as handle:
        json.dump(result, handle, indent=1)
    return 0 if result["status"] in passing else 1


def import_entries(plan: dict) -> tuple[Callable, Callable]:
    """Import the kernel's and the reference's entry points; refuse a kernel whose device was fixed when written."""
    op = plan["op"]
    kernel = importlib.import_module(f"{op}_triton")
    reference = importlib.import_module(f"{op}_baseline")
    if str(kernel.DEVICE) != plan["device"]:  # the job's device, not what the model's file claims
        raise Refused(f"{op}_triton.DEVICE is {kernel.DEVICE!r} but the job runs on {plan['device']!r}: "
                      "resolve it at run time (KERNELGEN_DEVICE)")
    return getattr(kernel, op), getattr(reference, op)


@contextlib.contextmanager
def poisoned_allocations(torch: Any) -> Iterator[None]:
    """Fill every floating tensor torch.empty* hands out with NaN, so an unwritten element reads as NaN."""
    originals = {name: getattr(torch, name) for name in ("empty", "empty_like", "empty_strided")}

    def poisoning(original: Any) -> Any:
        def allocate(*args: Any, **kwargs: Any) -> Any:
            tensor = original(*args, **kwargs)
            if tensor.is_floating_point():
                tensor.fill_(float("nan"))
            return tensor

        return allocate

    for name, original in originals.items():
        setattr(torch, name, poisoning(original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(torch, name, original)


def random_inputs(torch: Any, names: list, shapes: dict, dtypes: dict, seed: int, device: str,
                  indices: dict | None = None) -> list:
    """Make the service's own inputs: standard normal, seeded, in each input's dtype, on the device.

    An index input ({name: [data input, dim, ignored value]}) is drawn in range of that dim, a fifth of it ignored.
    """
    # Drawn where the kernel runs: a CUDA generator fills a vocabulary-sized case in milliseconds, the CPU in seconds.
    where = device if str(device).startswith("cuda") else "cpu"
    generator = torch.Generator(device=where).manual_seed(seed)
    indices = indices or {}
    tensors = []
    for name in names:
        if name in indices:
            data, axis, ignored = indices[name]
            high = shapes[data][axis] if shapes[data] else 1
            values = torch.randint(0, max(1, high), shapes[name], generator=generator, device=where)
            if ignored is not None:
                values[torch.rand(shapes[name], generator=generator, device=where) < 0.2] = ignored
        else:
            values = torch.randn(shapes[name], generator=generator, device=where)
        tensors.append(values.to(getattr(torch, dtypes[name])).to(device))
    return tensors


def float64_reference(ref: Callable[..., Any], inputs: list, params: dict) -> Any:
    """Run the reference in float64 on the CUDA device when it has room, else on the CPU; the result stays there."""
    # On the GPU a spec-size reference takes milliseconds instead of seconds (a cross-entropy job spent ~20 s a
    # round on float64 references on the CPU). Index tensors keep their dtype.
    import torch

    device = inputs[0].device if inputs and isinstance(inputs[0], torch.Tensor) else torch.device("cpu")
    if device.type == "cuda":
        # The reference and the comparison hold a few float64 tensors of the inputs' size at once.
        needed = _FLOAT64_COPIES * 8 * sum(t.numel() for t in inputs if isinstance(t, torch.Tensor))
        if needed < torch.cuda.mem_get_info(device)[0]:
            try:
                return ref(*_float64_on(inputs, device), **params)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
    return ref(*_float64_on(inputs, torch.device("cpu")), **params)


def _float64_on(inputs: list, device: Any) -> list:
    return [t.detach().to(device).double() if t.is_floating_point() else t.detach().to(device) for t in inputs]
