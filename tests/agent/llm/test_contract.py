"""Model-written files that break the contract or let torch do the work are refused before they run."""

import pytest

from agent.llm.contract import check_files, check_role
from tests.agent.llm.answers import source

GOOD = {f"prefix_sum_{role}.py": source(role) for role in ("triton", "baseline", "accuracy", "performance")}
WRAPPER = '''def prefix_sum(x):
    """Return the inclusive prefix sum of x along its last dimension."""
    x = x.contiguous()'''


def _with_triton(text: str) -> dict[str, str]:
    return GOOD | {"prefix_sum_triton.py": text}


def test_the_scripted_files_keep_the_contract() -> None:
    assert check_files(GOOD, "prefix_sum") is None


@pytest.mark.parametrize(("change", "words"), [
    (lambda s: s.replace("import torch\n", "import torch\nfrom torch import cumsum\n", 1), "imports cumsum"),
    (lambda s: s.replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 1024\n_scan = torch.cumsum"), "torch.cumsum"),
    (lambda s: s.replace(WRAPPER, WRAPPER + '\n    return getattr(x, "cumsum")(-1)'), "getattr"),
    (lambda s: s.replace(WRAPPER, WRAPPER + "\n    x = x.flip(-1)"), ".flip()"),
    (lambda s: s.replace(WRAPPER, WRAPPER + "\n    x = x * 2"), "arithmetic on the tensor x"),
    (lambda s: s + "\nprefix_sum = lambda x: x\n", "rebinds prefix_sum"),
    (lambda s: s + "\nimport atexit\n", "imports atexit"),
    (lambda s: s + "\ntorch.isfinite = lambda t: t == t\n", "assigns into the module torch"),
    (lambda s: s + '\nsetattr(torch, "allclose", lambda *a, **k: True)\n', "calls setattr()"),
])
def test_torch_doing_the_work_or_patching_is_refused(change: object, words: str) -> None:
    changed = change(source("triton"))  # type: ignore[operator]
    assert changed != source("triton")
    problem = check_role("triton", _with_triton(changed), "prefix_sum")
    assert problem is not None and words in problem, problem


def test_a_reference_that_patches_torch_is_refused() -> None:
    baseline = source("baseline") + "\ntorch.testing.assert_close = lambda *a, **k: None\n"
    problem = check_role("baseline", GOOD | {"prefix_sum_baseline.py": baseline}, "prefix_sum")
    assert problem is not None and "assigns into the module torch" in problem


def test_a_reference_with_another_signature_is_refused() -> None:
    problem = check_role("baseline", GOOD | {"prefix_sum_baseline.py": source("baseline_dim")}, "prefix_sum")
    assert problem is not None and "identical parameter list" in problem


@pytest.mark.parametrize(("role", "change", "words"), [
    ("accuracy", lambda s: s.replace("from prefix_sum_baseline import prefix_sum as reference\n", ""),
     "must import prefix_sum_baseline"),
    ("performance", lambda s: s.replace("def make_inputs", "def inputs_of"), "must define make_inputs"),
    ("performance", lambda s: s.replace("do_bench", "time_it"), "do_bench"),
    ("accuracy", lambda s: s.replace("--json", "--out"), "--json"),
])
def test_tests_that_break_the_contract_are_refused(role: str, change: object, words: str) -> None:
    name = f"prefix_sum_{role}.py"
    problem = check_role(role, GOOD | {name: change(GOOD[name])}, "prefix_sum")  # type: ignore[operator]
    assert problem is not None and words in problem, problem


@pytest.mark.parametrize(("role", "line", "words"), [
    ("accuracy", "import os\nos.system('touch /tmp/x')", "uses os.system"),
    ("accuracy", "from os import fork", "imports os.fork"),
    ("accuracy", "import subprocess", "imports subprocess"),
    ("performance", "import ctypes.util", "imports ctypes"),
    ("accuracy", "from importlib import import_module", "imports importlib"),
    ("baseline", "import socket", "imports socket"),
    ("accuracy", "import os as o\no.execv('/bin/sh', ['sh'])", "uses os.execv"),
    ("accuracy", "m = __import__('subprocess')", "uses __import__"),
    ("triton", "x = ().__class__.__base__.__subclasses__()", "uses __subclasses__"),
    ("performance", "exec('print(1)')", "uses exec"),
])
def test_processes_sockets_and_native_code_are_refused_in_every_file(role: str, line: str, words: str) -> None:
    name = f"prefix_sum_{role}.py"
    problem = check_role(role, GOOD | {name: f"{line}\n{GOOD[name]}"}, "prefix_sum")
    assert problem is not None and words in problem and "may not start processes" in problem, problem


def test_torch_compile_and_os_paths_stay_allowed_in_tests() -> None:
    extra = "import os\nimport re\nHERE = os.path.dirname(__file__)\nPAT = re.compile('x')\n_c = getattr(os, 'sep')\n"
    performance = GOOD["prefix_sum_performance.py"] + "\n" + extra + "fast = torch.compile\n"
    assert check_files(GOOD | {"prefix_sum_performance.py": performance}, "prefix_sum") is None
