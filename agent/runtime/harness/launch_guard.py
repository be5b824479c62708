"""The launch guard: the entry point's result must come from its Triton kernels, not from torch beside them.

Copied into the sandbox next to the harnesses (see agent/runtime/harnesses.py). While the entry point runs, a
TorchDispatchMode records every aten op outside a kernel launch, and each launch records the storages of the
tensors it was given. A result fails when torch computed outside a launch (anything but allocation, views, copies,
casts and metadata), when no kernel ran, when a returned tensor's memory was never handed to a kernel, or when
torch wrote into it after a kernel did (a copy of what torch computed is not the kernel's work).
"""

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any

# aten ops a wrapper may run outside its launches: allocation, views, copies and casts, metadata.
MOVES = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "zero_", "fill_", "full", "new_full", "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided",
    "as_strided_", "expand", "permute", "transpose", "transpose_", "t", "t_", "squeeze", "squeeze_", "unsqueeze",
    "unsqueeze_", "select", "slice", "narrow", "split", "split_with_sizes", "unbind", "chunk", "diagonal", "unfold",
    "alias", "detach", "detach_", "clone", "contiguous", "_to_copy", "copy_", "resize_", "view_as", "flatten",
    "unflatten", "movedim", "set_", "is_same_size", "_has_compatible_shallow_copy_type", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset", "dim", "is_contiguous", "stride", "size", "numel", "promote_types",
    "result_type", "can_cast",
})
# Where a kernel runs (the interpreter copies its arguments with torch inside, the autotuner benchmarks: neither is
# the wrapper's doing). The autotuner also runs the model's own hooks: those are recorded like the wrapper.
LAUNCHERS = (("triton.runtime.jit", "JITFunction", "run"),
             ("triton.runtime.interpreter", "InterpretedFunction", "run"),
             ("triton.runtime.autotuner", "Autotuner", "run"), ("triton.runtime.autotuner", "Heuristics", "run"))
# A compiled kernel is launched through the runner its __getitem__ returns.
RUNNERS = (("triton.compiler.compiler", "CompiledKernel", "__getitem__"),)
AUTOTUNER = ("triton.runtime.autotuner", "Autotuner")


class Record:
    """What the entry point did: its launches, the storages they were given, torch's compute and writes."""

    def __init__(self) -> None:
        self.launches = 0
        self.depth = 0
        self.events = 0  # launches and torch's writes outside them, in order
        self.compute: list[str] = []
        self.launched: dict[int, int] = {}  # storage address -> the event that ended the last launch given it
        self.written: dict[int, int] = {}  # storage address -> torch's last write into it outside a launch


@contextlib.contextmanager
def launch_guard(torch: Any) -> Iterator[Record]:
    """Record what the entry point does while it runs: launches, the memory they get, torch's ops beside them."""
    from torch.utils._python_dispatch import TorchDispatchMode

    record = Record()

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            """Note an op outside a launch: its name when it computes, its target when it writes."""
            if record.depth == 0:
                name = func.overloadpacket.__name__
                if name not in MOVES and name not in record.compute:
                    record.compute.append(name)
                if func._schema.is_mutable and args and isinstance(args[0], torch.Tensor):
                    record.events += 1
                    record.written[_storage(args[0])] = record.events
            return func(*args, **(kwargs or {}))

    patched: list[tuple[Any, str, Any]] = []
    try:
        for module_name, class_name, attr in LAUNCHERS:
            _patch(patched, module_name, class_name, attr, lambda original: _launching(original, record, torch))
        for module_name, class_name, attr in RUNNERS:
            _patch(patched, module_name, class_name, attr,
                   lambda original: lambda kernel, grid: _launching(original(kernel, grid), record, torch))
        _patch(patched, *AUTOTUNER, "run", lambda original: _with_hooks_recorded(original, record))
        with Recorder():
            yield record
    finally:
        for owner, attr, original in reversed(patched):
            setattr(owner, attr, original)


def launch_refusal(record: Record, result: Any, torch: Any) -> str | None:
    """Say why a result did not come from a Triton kernel, or None when it did."""
    if record.compute:
        ops = ", ".join(f"aten.{name}" for name in record.compute[:5])
        return (f"the entry point computed with torch outside its Triton kernels ({ops}): the result is not the "
                "kernel's")
    if record.launches == 0:
        return "the entry point launched no Triton kernel: the result is not a kernel's"
    for tensor in _tensors(result, torch):
        if tensor.numel() == 0:
            continue
        storage = _storage(tensor)
        if storage not in record.launched:
            return ("the entry point returned memory no Triton kernel was given (torch made the result beside the "
                    "launch): the result is not the kernel's")
        if record.written.get(storage, 0) > record.launched[storage]:
            return ("torch wrote into the result after the kernel did (a copy or fill of what torch computed): the "
                    "result is not the kernel's")
    return None


def _launching(original: Callable, record: Record, torch: Any) -> Callable:
    """Wrap a launcher: count the outermost launch and, when it ends, the storages of its tensor arguments."""
    def launch(*args: Any, **kwargs: Any) -> Any:
        outermost = record.depth == 0
        record.depth += 1
        try:
            return original(*args, **kwargs)
        finally:
            record.depth -= 1
            if outermost:
                record.launches += 1
                record.events += 1
                for value in (*args, *kwargs.values()):
                    base = getattr(value, "base", value)  # a TMA descriptor holds its tensor as .base
                    if isinstance(base, torch.Tensor):
                        record.launched[_storage(base)] = record.events
    return launch


def _with_hooks_recorded(launcher: Callable, record: Record) -> Callable:
    """Wrap the (already counting) autotuner run so the model's own pre and post hooks run recorded."""
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        for config in getattr(self, "configs", []):
            if getattr(config, "pre_hook", None) is not None:
                config.pre_hook = _outside_launch(config.pre_hook, record)
        for attr in ("pre_hook", "post_hook"):
            if getattr(self, f"user_defined_{attr}", False):
                setattr(self, attr, _outside_launch(getattr(self, attr), record))
        return launcher(self, *args, **kwargs)
    return run


def _outside_launch(hook: Callable, record: Record) -> Callable:
    """Run a hook at launch depth 0, so the guard sees what it does; wrapped once."""
    if getattr(hook, "_guarded", False):
        return hook

    def guarded(*args: Any, **kwargs: Any) -> Any:
        depth, record.depth = record.depth, 0
        try:
            return hook(*args, **kwargs)
        finally:
            record.depth = depth
    guarded._guarded = True  # type: ignore[attr-defined]
    return guarded


def _patch(patched: list, module_name: str, class_name: str, attr: str, wrap: Callable) -> None:
    """Replace a class attribute with its wrapped self, remembering the original."""
    try:
        owner = getattr(importlib.import_module(module_name), class_name, None)
    except ImportError:
        return
    if owner is not None and attr in vars(owner):
        original = vars(owner)[attr]
        setattr(owner, attr, wrap(original))
        patched.append((owner, attr, original))


def _storage(tensor: Any) -> int:
    """Return the address of a tensor's memory (its views share it)."""
    return int(tensor.untyped_storage().data_ptr())


def _tensors(value: Any, torch: Any) -> list:
    """Return the tensors a result holds: itself, or those of a tuple or list."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in _tensors(v, torch)]
    return []
