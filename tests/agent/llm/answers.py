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


# Scripted variants of the files in data/: (file, text replaced, replacement, more pairs...). Each must change its
# file.
VARIANTS: dict[str, tuple[str, ...]] = {
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
    # Cheats: each must end unverified, as a first version or as a repair.
    "triton_class_method": ("triton_masking_bug", "def prefix_sum(x):\n", """class _Finisher:
    \"\"\"Finish the scan.\"\"\"

    def run(self, x):
        \"\"\"Return the finished rows.\"\"\"
        return torch.cumsum(x, dim=-1)


def prefix_sum(x):
""", "    return out\n", "    return _Finisher().run(x)\n"),
    "triton_imports_baseline": ("triton_masking_bug", "import torch\n",
                                "import torch\nfrom prefix_sum_baseline import prefix_sum as _reference\n",
                                "    return out\n", "    return _reference(x)\n"),
    "triton_copy": ("triton", "scanned = tl.cumsum(values, axis=0) + carry", "scanned = values"),
    "baseline_clone": ("baseline", "return torch.cumsum(x, dim=-1)", "return x.clone()"),
    "triton_drops_tail": ("triton", "        mask = cols < n_cols\n", "        mask = cols < n_cols // 8 * 8\n"),
    "accuracy_no_edges": ("accuracy", 'EDGE_CASES = [{"x": [1, 1]}, {"x": [5, 1023]}, {"x": [2, 3, 17]}]',
                          "EDGE_CASES = []"),
    # One case that compares nothing, reported as a pass.
    "accuracy_lying": ("accuracy", "    for shapes in SPEC_CASES + EDGE_CASES:\n",
                       '    cases.append({"shapes": SPEC_CASES[0], "dtypes": DTYPE_CASES[0], "seed": 0,\n'
                       '                  "status": "pass", "max_abs_err": 0.0, "max_rel_err": 0.0})\n'
                       "    for shapes in []:\n"),
}


def source(name: str) -> str:
    """Return one of the scripted files, or a variant of one."""
    if name in VARIANTS:
        base, *pairs = VARIANTS[name]
        text = source(base)
        for old, new in zip(pairs[::2], pairs[1::2], strict=True):
            assert old in text, f"variant {name}: {old!r} is not in {base}.py"
            text = text.replace(old, new)
        return text
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


def first_version(triton: str = "triton", **roles: str) -> list[tuple[str, str]]:
    """Return (stage, answer) pairs that write the four files: the kernel from data/<triton>.py, the other roles
    from their own file or the variant named for them (baseline="baseline_clone")."""
    chosen = {"triton": triton, "baseline": "baseline", "accuracy": "accuracy", "performance": "performance"} | roles
    return [(role, fenced((f"prefix_sum_{role}.py", source(name)))) for role, name in chosen.items()]
