"""The spec-reader corpus is sound on its own: it loads, has the agreed mix, and every reference evaluates."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
import torch
from corpus_loader import (
    CODE_REFERENCE,
    FAMILIES,
    Case,
    CorpusError,
    code_of,
    load_corpus,
    make_inputs,
    reference_output,
    shrink_map,
    shrink_shapes,
)

CASES = load_corpus()
READ_CASES = [c for c in CASES if c.expect == "read"]

VERBATIM = (
    "SiLU (x * sigmoid(x)) on x [37, 53], float32.",
    "QuickGELU: x * sigmoid(1.702 * x) for x in bf16, shape [30, 64].",
    "Elementwise exp on x, a 128x256 float32 matrix.",
    "hardtanh with min_val=-0.5 and max_val=0.5 on float32 x [30, 50]",
    "实现 SiLU 激活算子（x * sigmoid(x)），输入 x 为 float16，形状 [3, 40, 50]。",
    "Softplus activation log(1 + exp(x)) for float32 x with shape [100, 77]",
    "Clamp x to the range [-2.5, 2.5] and then multiply by 0.5. x is float32 of shape [101, 37]",
    "First clamp x into [-1, 1], then multiply the result by 3",
    "Take the absolute value of x and then its square root",
    "squared ReLU (relu(x)**2)",
    "(a + b) * c",
    "maximum(x, y) + minimum(x, y) * 0.1",
    "Multiply each row i of x by s[i]",
    "Sigmoid of a 2-D float32 tensor x with 1000 rows and 513 columns",
    "y = torch.nn.functional.hardsigmoid(x), x: torch.float32 [64, 33]",
    "ReLU on a float32 tensor x of shape [1000, 1000]",
    "fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]",
    "对形状为 [1024, 1024] 的 float16 张量 x 做 ReLU",
    "SwiGLU: out = silu(gate) * up, gate and up [4096, 11008] bf16",
)

NAMESPACE = {"torch", "F", "math"}


def test_corpus_size_and_mix() -> None:
    """Check the totals, the language and style mix, and the number of refusals."""
    assert len(CASES) >= 170
    assert sum(c.lang in ("zh", "mixed") for c in CASES) >= 60
    assert sum(c.style == "user" for c in CASES) * 2 >= len(CASES)
    assert sum(c.expect == "refuse" for c in CASES) >= 20


def test_every_family_is_read() -> None:
    """Check each family has cases the reader must read."""
    families = Counter(c.family for c in READ_CASES)
    assert set(FAMILIES) <= set(families), set(FAMILIES) - set(families)


@pytest.mark.parametrize("text", VERBATIM)
def test_verbatim_spec_present(text: str) -> None:
    """Check the specs misread before are in the corpus word for word."""
    assert any(text in c.spec for c in CASES), text


def test_specs_are_unique() -> None:
    """Check no spec text appears twice."""
    texts = Counter(c.spec.strip() for c in CASES)
    assert [t for t, n in texts.items() if n > 1] == []


@pytest.mark.parametrize("case", [c for c in READ_CASES if not c.is_code], ids=lambda c: c.id)
def test_reference_names_are_declared(case: Case) -> None:
    """Check an expression reference uses exactly the declared inputs and params, and parses as one expression."""
    tree = ast.parse(case.reference or "", mode="eval")
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    declared = {i.name for i in case.inputs} | set(case.params)
    assert used - NAMESPACE - declared == set(), "undeclared names"
    assert declared - used == set(), "declared but unused"


@pytest.mark.parametrize("case", [c for c in READ_CASES if c.is_code], ids=lambda c: c.id)
def test_code_parameters_match_inputs(case: Case) -> None:
    """Check a code spec's inputs are its forward's (or function's) parameters, in order."""
    tree = ast.parse(code_of(case))
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    if "forward" in functions and any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body):
        args = [a.arg for a in functions["forward"].args.args][1:]
    else:
        (target,) = [f for name, f in functions.items() if name not in {"get_inputs", "get_init_inputs"}]
        args = [a.arg for a in target.args.args]
        args = args[: len(args) - len(target.args.defaults)]
    assert args == [i.name for i in case.inputs]


@pytest.mark.parametrize("case", READ_CASES, ids=lambda c: c.id)
def test_reference_evaluates_on_shrunk_shapes(case: Case) -> None:
    """Check each shape case's reference gives a finite result on shrunk shapes for two seeds."""
    for index in range(case.shape_cases):
        shapes = shrink_shapes(case, index)
        assert all(d <= 128 for shape in shapes.values() for d in shape), shapes
        for seed in (0, 1):
            inputs = make_inputs(case, shapes, seed)
            result = reference_output(case, inputs, seed)
            if not isinstance(result, torch.Tensor):
                result = torch.as_tensor(result)
            assert result.numel() > 0
            if result.is_floating_point():
                assert torch.isfinite(result).all(), f"non-finite result for shape case {index}, seed {seed}"


def test_shrink_keeps_equal_sizes_equal_and_different_sizes_different() -> None:
    """Check the shrink map is injective, keeps small dims and keeps divisibility by powers of two."""
    for case in READ_CASES:
        for index in range(case.shape_cases):
            mapping = shrink_map(case, index)
            assert len(set(mapping.values())) == len(mapping)
            for size, small in mapping.items():
                assert 16 < small <= 128
                for power in (2, 4, 8, 16, 32):
                    assert (size % power == 0) == (small % power == 0), (size, small)


def test_float_inputs_are_float64_and_positive_ones_positive() -> None:
    """Check make_inputs draws float64 by default, positive inputs above zero and ints within their range."""
    for case in READ_CASES:
        inputs = make_inputs(case, shrink_shapes(case), seed=3)
        for spec in case.inputs:
            tensor = inputs[spec.name]
            if spec.dtypes[0] == "int64":
                assert tensor.dtype == torch.int64 and int(tensor.min()) >= spec.low
            elif spec.dtypes[0] == "bool":
                assert tensor.dtype == torch.bool
            else:
                assert tensor.dtype == torch.float64
                if spec.positive:
                    assert float(tensor.min()) > 0


def test_code_references_hold_code() -> None:
    """Check code references sit in the code file and every code spec yields source."""
    for case in READ_CASES:
        if case.reference == CODE_REFERENCE:
            assert case.source == "code_specs.toml"
            assert code_of(case).strip()


def test_refusals_explain_themselves() -> None:
    """Check every refusal says why and carries no reading."""
    for case in CASES:
        if case.expect == "refuse":
            assert case.why and case.reference is None and case.inputs == []


def test_loader_rejects_broken_cases(tmp_path: Path) -> None:
    """Check the loader refuses unknown keys, duplicate ids and a read case without a reference."""
    good = (
        '[[case]]\nid = "a"\nlang = "en"\nstyle = "user"\nfamily = "elementwise"\nspec = "relu x [4]"\n'
        'expect = "read"\nreference = "torch.relu(x)"\ninputs = [{ name = "x", shape = [4], dtype = "float32" }]\n'
    )
    (tmp_path / "one.toml").write_text(good, encoding="utf-8")
    assert [c.id for c in load_corpus(tmp_path)] == ["a"]
    for broken in (
        good + 'colour = "red"\n',
        good + good,
        good.replace('reference = "torch.relu(x)"\n', ""),
        good.replace('"float32"', '"int8"'),
        good.replace("shape = [4]", "shape = [0]"),
        good.replace('lang = "en"', 'lang = "zh"'),
    ):
        (tmp_path / "one.toml").write_text(broken, encoding="utf-8")
        with pytest.raises(CorpusError):
            load_corpus(tmp_path)
