"""Code and JSON come out of the many ways models format answers."""

import pytest

from agent.llm.fences import ExtractionError, extract_code, extract_files, extract_json

KERNEL = "import triton\n\n\ndef relu(x):\n    return x\n"
BASELINE = "import torch\n\n\ndef relu(x):\n    return torch.relu(x)\n"
NAMES = ["relu_triton.py", "relu_baseline.py"]


@pytest.mark.parametrize("answer", [
    f"Here it is:\n\n**relu_triton.py**\n```python\n{KERNEL}```\nDone.",
    f"### `relu_triton.py`\n```py\n{KERNEL}```",
    f"```python title=\"relu_triton.py\"\n{KERNEL}```",
    f"```python\n# relu_triton.py\n{KERNEL}```",
    f"~~~python\n{KERNEL}~~~",
    f"```\n{KERNEL}```",
    f"<think>maybe ```python\nbroken(\n``` no</think>\n```python\n{KERNEL}```",
    f"```python\n{KERNEL}",  # the answer was cut off before the closing fence
    KERNEL,  # a bare file with no fences
])
def test_the_kernel_is_found_however_it_is_fenced(answer: str) -> None:
    assert "def relu(x):" in extract_code(answer, "relu_triton.py")
    assert "```" not in extract_code(answer, "relu_triton.py")


def test_several_named_files_are_told_apart() -> None:
    answer = f"**relu_baseline.py**\n```python\n{BASELINE}```\n\n**relu_triton.py**\n```python\n{KERNEL}```"
    files = extract_files(answer, NAMES)
    assert files == {"relu_triton.py": KERNEL, "relu_baseline.py": BASELINE}


def test_a_longer_fence_keeps_an_inner_fence_in_the_code() -> None:
    code = 'DOC = """\n```\nexample\n```\n"""\n\n\ndef relu(x):\n    return x\n'
    assert extract_code(f"````python\n{code}````", "relu_triton.py") == code


def test_of_several_unnamed_blocks_the_largest_that_parses_is_taken() -> None:
    answer = f"```python\nrelu(x)\n```\nand the file:\n```python\n{KERNEL}```\n```bash\npython run.py\n```"
    assert extract_code(answer, "relu_triton.py") == KERNEL


def test_an_answer_without_code_says_what_was_found() -> None:
    with pytest.raises(ExtractionError, match="no Python code block for relu_triton.py"):
        extract_code("I would use a 1-D grid with BLOCK_SIZE 1024.", "relu_triton.py")
    with pytest.raises(ExtractionError, match="1 fenced block"):
        extract_code("```bash\npip install triton\n```", "relu_triton.py")


@pytest.mark.parametrize("answer", [
    '{"name": "relu", "n": 2}',
    '```json\n{"name": "relu", "n": 2}\n```',
    'Sure. The spec is {"name": "relu", "n": 2} as asked.',
    '<think>{"name": "wrong"}</think>{"name": "relu", "n": 2}',
])
def test_json_is_found_bare_fenced_or_in_prose(answer: str) -> None:
    assert extract_json(answer) == {"name": "relu", "n": 2}


def test_no_json_is_an_error() -> None:
    with pytest.raises(ExtractionError, match="no JSON object"):
        extract_json('Sure! {"name": "relu", "inputs": [')
