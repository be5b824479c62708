"""find_code tells code specs from prose and formulas, and separates the code from the prose around it."""

from __future__ import annotations

import time

import pytest
from conftest import CODE_CASES

from agent.reader.code import CodeSource, find_code

KERNELBENCH = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.elu(x, alpha=self.alpha)

batch_size = 16
dim = 16384

def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]

def get_init_inputs():
    return [1.0]
'''


def test_kernelbench_file_is_a_module() -> None:
    """Check a whole KernelBench file is code of kind module, verbatim, with no prose."""
    found = find_code(KERNELBENCH)
    assert found == CodeSource(KERNELBENCH, "", "module")


def test_plain_function() -> None:
    """Check a one-line def is a function spec."""
    found = find_code("def f(x): return F.gelu(x) * 2")
    assert found is not None and found.kind == "function" and found.source.startswith("def f(x)")


def test_fenced_block_inside_prose() -> None:
    """Check a ```python block is the code and the text around it the prose (dtypes, targets)."""
    text = "make this fast, bf16, x [4096, 1024]:\n```python\ndef f(x):\n    return F.silu(x) * 2\n```\ntarget 2x"
    found = find_code(text)
    assert found is not None
    assert found.source == "def f(x):\n    return F.silu(x) * 2\n"
    assert found.kind == "function"
    assert "bf16" in found.prose and "target 2x" in found.prose and "def" not in found.prose


@pytest.mark.parametrize("fence", ["```py", "```", "~~~python", "```python3"])
def test_fence_spellings(fence: str) -> None:
    """Check ```py, a bare ``` and ~~~ fences are read too."""
    body = "class M(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    found = find_code(f"please:\n{fence}\n{body}{fence[:3]}")
    assert found is not None and found.kind == "module" and found.prose == "please:"


def test_fenced_snippet_with_top_level_return() -> None:
    """Check a fenced statement list ending in return is code (the harness wraps it in a function)."""
    found = find_code("x [8, 8] fp16\n```python\nh = x * torch.sigmoid(x)\nreturn h\n```")
    assert found is not None and found.kind == "function" and found.source.endswith("return h\n")


def test_code_after_a_shape_line() -> None:
    """Check prose lines before an unfenced def stay prose."""
    found = find_code("x: [4096, 4096] fp16\ndef f(x):\n    return x * torch.sigmoid(x)\n")
    assert found is not None
    assert found.source == "def f(x):\n    return x * torch.sigmoid(x)\n"
    assert found.prose == "x: [4096, 4096] fp16"


def test_code_followed_by_prose() -> None:
    """Check prose after unfenced code is cut off at the last line that parses."""
    found = find_code("import torch\ndef f(x):\n    return x.exp()\n\nThe output is [8, 8], fp32 please.")
    assert found is not None
    assert found.source == "import torch\ndef f(x):\n    return x.exp()\n"
    assert found.prose == "The output is [8, 8], fp32 please."


def test_fenced_code_that_does_not_parse_is_still_code() -> None:
    """Check a broken fenced def is returned, so the sandbox can name the syntax error and its line."""
    found = find_code("```python\ndef f(x)\n    return x\n```")
    assert found is not None and found.source == "def f(x)\n    return x\n"


@pytest.mark.parametrize("text", [
    "y = torch.nn.functional.hardsigmoid(x), x: torch.float32 [64, 33]",
    "y = x * torch.sigmoid(x)",
    "ReLU on a float32 tensor x of shape [1000, 1000]",
    "SwiGLU: out = silu(gate) * up, gate and up [4096, 11008] bf16",
    "x [1024, 8192] fp16: a, b = x.chunk(2, dim=-1); out = F.silu(a) * b",
    "```\nx: [4096] fp16\n```",
    "```cuda\n__global__ void f() {}\n```",
    "Implement `def gelu(x)` for fp16.",
])
def test_formulas_and_prose_are_not_code(text: str) -> None:
    """Check formulas, prose and non-Python fences are not code specs."""
    assert find_code(text) is None


def test_text_with_its_fences_stripped_still_reads() -> None:
    """Check code is found after agent.reader.text.normalize turned the ``` fences into spaces."""
    text = "x is [2048, 8192] bf16.\n\n  python\ndef swiglu(x):\n    return F.silu(x)\n  \n\nThe output is fp32.\n"
    found = find_code(text)
    assert found is not None and found.source == "def swiglu(x):\n    return F.silu(x)\n"
    assert "python" in found.prose and "fp32" in found.prose


def test_every_corpus_code_spec_is_found() -> None:
    """Check each corpus code spec yields code whose kind matches its Model or function."""
    for case in CODE_CASES:
        found = find_code(case.spec)
        assert found is not None, case.id
        assert found.kind == ("module" if "class Model" in case.spec else "function"), case.id


def test_lines_of_unclosed_calls_end_as_prose_in_bounded_time() -> None:
    # Every line looks like the start of code and none closes: each start and end was tried (minutes at 400 lines).
    text = "\n".join(f"y{i} = foo(" + "a, " * 40 for i in range(399))
    started = time.perf_counter()
    assert find_code(text) is None
    assert time.perf_counter() - started < 20


def test_code_after_many_prose_lines_that_look_like_assignments_is_still_found() -> None:
    prose = "\n".join(f"x = the input tensor, note {i}" for i in range(200))
    found = find_code(f"{prose}\n{KERNELBENCH}\nshapes as in get_inputs")
    assert found is not None and found.kind == "module"
    assert found.source.startswith("import torch\n") and "note 199" in found.prose
