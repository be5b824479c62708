"""What a model would answer for the prefix-sum scenarios: JSON specs and files in fenced blocks."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).parent / "data" / "prefix_sum"
SPEC_TEXT = ("Inclusive prefix sum (cumsum) along the last dimension of x, shapes [8, 1000] and [3, 4096], "
             "float32 and float16")

SPEC = {
    "supported": True, "name": "prefix_sum", "description": "inclusive scan along the last dimension",
    "semantics": "out[..., i] = sum(x[..., j] for j <= i) along the last dimension",
    "inputs": [{"name": "x", "shapes": [[8, 1000], [3, 4096]], "dtypes": ["float32", "float16"]}],
    "params": [], "output": "out", "output_shapes": [[8, 1000], [3, 4096]],
    "edge_cases": [{"x": [1, 1]}, {"x": [5, 1023]}, {"x": [2, 3, 17]}], "flops_per_output": 1,
}
DEFINITION = {
    "constraints": ["x is made contiguous; any rank, the scan runs over the last dimension"],
    "complexity": "O(n) work per row, n / BLOCK_SIZE sequential tiles per row",
    "strategy": ["one program per row", "tl.cumsum within a tile, a float32 carry across tiles",
                 "masked loads and stores on the last partial tile"],
    "risks": ["float16 accumulation error on long rows: accumulate in float32"],
}


# Scripted variants of the files in data/: (file, text replaced, replacement). Each must change its file.
VARIANTS = {
    "triton_masking_bug": ("triton", "        mask = cols < n_cols\n", "        mask = cols < n_cols - 1\n"),
    "triton_arange_300": ("triton", "BLOCK_SIZE = 1024\n", "BLOCK_SIZE = 300\n"),  # tl.arange raises
    "triton_dim": ("triton", '''def prefix_sum(x):
    """Return the inclusive prefix sum of x along its last dimension."""
''', '''def prefix_sum(x, dim: int = -1):
    """Return the inclusive prefix sum of x along dim (the last dimension only)."""
    if dim not in (-1, x.dim() - 1):
        raise ValueError(f"prefix_sum scans the last dimension only, not dim={dim}")
'''),
    "baseline_dim": ("baseline", '''def prefix_sum(x):
    """Return torch.cumsum of x along its last dimension, in x's dtype."""
    return torch.cumsum(x, dim=-1)''', '''def prefix_sum(x, dim: int = -1):
    """Return torch.cumsum of x along dim, in x's dtype."""
    return torch.cumsum(x, dim=dim)'''),
}


def source(name: str) -> str:
    """Return one of the scripted files, or a variant of one."""
    if name in VARIANTS:
        base, old, new = VARIANTS[name]
        text = source(base)
        assert old in text, f"variant {name}: {old!r} is not in {base}.py"
        return text.replace(old, new)
    return (DATA / f"{name}.py").read_text()


def fenced(*files: tuple[str, str], prose: str = "Here is the file.") -> str:
    """Wrap files the way models answer: prose, then each file's name and a ```python block."""
    parts = [prose]
    for name, code in files:
        parts.append(f"**{name}**\n```python\n{code}```")
    return "\n\n".join(parts)


def spec_json() -> str:
    """Return the requirements answer."""
    return json.dumps(SPEC)


def definition_json() -> str:
    """Return the definition answer."""
    return json.dumps(DEFINITION)


def first_version(triton: str = "triton") -> list[tuple[str, str]]:
    """Return (stage, answer) pairs that write the four files, the kernel from data/<triton>.py."""
    return [
        ("triton", fenced(("prefix_sum_triton.py", source(triton)))),
        ("baseline", fenced(("prefix_sum_baseline.py", source("baseline")))),
        ("accuracy", fenced(("prefix_sum_accuracy.py", source("accuracy")))),
        ("performance", fenced(("prefix_sum_performance.py", source("performance")))),
    ]
