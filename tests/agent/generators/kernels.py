"""Helpers for tests that import generated kernels (in the interpreter)."""

import importlib.util
import itertools
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import torch

from agent.generators.base import KernelFiles

_counter = itertools.count()
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def load_triton_module(files: KernelFiles, folder: Path) -> ModuleType:
    """Write the four files and import `<op>_triton.py` under a unique module name."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in files.files.items():
        (folder / name).write_text(source)
    path = folder / files.name_of("triton")
    unique = f"generated_{next(_counter)}_{files.op}"
    spec = importlib.util.spec_from_file_location(unique, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    spec.loader.exec_module(module)
    return module


def run_accuracy_file(folder: Path, op: str) -> dict:
    """Run the generated `<op>_accuracy.py` in its folder and return its JSON verdict."""
    done = subprocess.run([sys.executable, f"{op}_accuracy.py", "--json", "result.json"], cwd=folder,
                          capture_output=True, text=True, timeout=600)
    assert (folder / "result.json").exists(), done.stdout + done.stderr
    return json.loads((folder / "result.json").read_text())
