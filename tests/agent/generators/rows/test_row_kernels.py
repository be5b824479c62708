"""Spec text in, a row-engine kernel out, checked in the interpreter against PyTorch written here.

Each case goes through the real reader and the offline generator, imports the generated `_triton.py`
under both schedules (row in registers, looped chunks) and compares it on fresh random inputs, in
float32 and a half type, on the spec's shape and odd shapes (rows of length 1, prime lengths).
"""

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from agent.generators.offline.dispatch import OfflineGenerator
from agent.generators.offline.rows.generator import row_length
from agent.generators.offline.rows.space import MAX_TILE_ELEMENTS
from agent.ir.edges import edge_cases
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec
from tests.agent.generators.kernels import load_triton_module

CPU = DeviceInfo(kind="cpu", name="cpu")
Reference = Callable[..., torch.Tensor]

CASES: list[Any] = [
    ("row sum of x [6, 70]", lambda x: x.sum(-1)),
    ("x [6, 70] 按行求和", lambda x: x.sum(-1)),
    ("torch.amax(x, dim=-1, keepdim=True), x [5, 40] fp32", lambda x: x.amax(-1, keepdim=True)),
    ("amin of x [7, 40] over dim 0", lambda x: x.amin(0)),
    ("prod of x [5, 12] along dim 1", lambda x: x.prod(1)),
    ("argmax of x [7, 33] along dim -1", lambda x: x.argmax(-1)),
    ("torch.argmin(x, dim=1) x [4, 9, 5]", lambda x: x.argmin(1)),
    ("mean over dim 1 of x [4, 30, 6]", lambda x: x.mean(1)),
    ("torch.sum(x, dim=(1, 2)) x [3, 5, 6, 7]", lambda x: x.sum((1, 2))),
    ("torch.var(x, dim=-1, correction=0) x [4, 50]", lambda x: x.var(-1, correction=0)),
    ("std of x [4, 60] along dim 1", lambda x: x.std(1)),
    ("torch.linalg.vector_norm(x, ord=3, dim=-1) x [5, 40]", lambda x: torch.linalg.vector_norm(x, 3, -1)),
    # Elementwise ops before a reduction: their helpers (_gelu_erf, _tanh) are emitted beside the row engine's.
    ("F.gelu(x).sum(dim=-1) x [5, 33] fp32", lambda x: F.gelu(x).sum(-1)),
    ("torch.softmax(torch.tanh(x), dim=-1) x [4, 17] fp32", lambda x: torch.softmax(torch.tanh(x), -1)),
    ("logsumexp of x [9, 70] over dim -1", lambda x: x.logsumexp(-1)),
    ("对 x [8, 100] 的最后一维做 softmax，fp16", lambda x: x.softmax(-1)),
    ("softmax over dim 1 of x [2, 50, 7]", lambda x: x.softmax(1)),
    ("log_softmax of x [6, 77] along dim -1", lambda x: x.log_softmax(-1)),
    ("softmin of x [4, 33] along dim 1", lambda x: F.softmin(x, 1)),
    ("layer norm：x [4, 96]，weight [96]，bias [96]，float32", lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b)),
    ("RMSNorm，x [4, 64] bf16，权重 w [64]", lambda x, w: F.rms_norm(x, (x.shape[-1],), w, eps=1e-6)),
    ("l2 normalize each row of x [12, 130]", lambda x: F.normalize(x, dim=-1)),
    ("F.cosine_similarity(a, b, dim=1) a [8, 64] b [8, 64]", lambda a, b: F.cosine_similarity(a, b, 1)),
    ("x [5, 40] 沿最后一维做 cumsum", lambda x: x.cumsum(-1)),
    ("cumprod of x [3, 50] along dim 1", lambda x: x.cumprod(1)),
    ("torch.cummax(x, dim=-1).values x [6, 90]", lambda x: x.cummax(-1).values),
    ("torch.cummin(x, dim=0).values x [30, 4]", lambda x: x.cummin(0).values),
    ("logcumsumexp of x [4, 65] along the last dim", lambda x: x.logcumsumexp(-1)),
    ("batch norm (inference) of x [4, 6, 5, 3], running_mean rm [6], running_var rv [6], weight w [6], bias b [6]",
     lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b, training=False)),
    ("F.batch_norm(x, rm, rv, training=False, eps=1e-3) x [9, 40] rm [40] rv [40] fp16",
     lambda x, rm, rv: F.batch_norm(x, rm, rv, training=False, eps=1e-3)),
    ("实例归一化 x [2, 4, 7, 7]", lambda x: F.instance_norm(x)),
    # A minute in the interpreter (bf16 statistics over many cases): the affine instance norm stands for it in CI.
    pytest.param("F.instance_norm(x, eps=1e-5) x [2, 3, 10] bf16", lambda x: F.instance_norm(x, eps=1e-5),
                 marks=pytest.mark.slow),
    ("instance norm with affine: x [2, 5, 6, 7], weight w [5], bias b [5]",
     lambda x, w, b: F.instance_norm(x, weight=w, bias=b)),
    ("F.group_norm(x, 4, w, b) x [3, 8, 5, 6] w [8] b [8]", lambda x, w, b: F.group_norm(x, 4, w, b)),
    ("组归一化，分组数 3，x [2, 6, 17] fp16，gamma [6]，beta [6]", lambda x, w, b: F.group_norm(x, 3, w, b)),
    ("group norm of x [4, 6] with 2 groups", lambda x: F.group_norm(x, 2)),
]


def _shapes(spec_text: str) -> tuple[OpSpec, list[dict[str, list[int]]]]:
    spec = read_spec(spec_text)
    first = spec.shape_cases()[0]
    edges = edge_cases(spec.expr, first, spec.dtype_cases()[0], {p.name: p.value for p in spec.params})
    return spec, [first, *edges[:2]]


@pytest.mark.parametrize(("text", "reference"), CASES,
                         ids=[(c.values if hasattr(c, "values") else c)[0] for c in CASES])
def test_row_kernel_matches_pytorch_in_both_schedules(text: str, reference: Reference, tmp_path: Path) -> None:
    spec, shape_cases = _shapes(text)
    generator = OfflineGenerator()
    assert generator.refusal(spec) is None
    half = next((d for d in spec.dtype_cases()[0].values() if d != "float32"), "float16")
    for schedule in ("whole_row", "looped_row"):
        config = generator.default_config(spec, schedule, CPU)
        if schedule == "looped_row":
            config = config.model_copy(update={"block_size": 16})  # several chunks even on small rows
        module = load_triton_module(generator.generate(spec, config), tmp_path / schedule)
        kernel = getattr(module, spec.name)
        for index, shapes in enumerate(shape_cases):
            if schedule == "whole_row" and row_length(generator.rows.graph(spec), shapes) > MAX_TILE_ELEMENTS:
                continue  # the looped schedule's (the whole_row wrapper refuses such rows, tested elsewhere)
            if schedule == "looped_row" and max(math.prod(s) for s in shapes.values()) > 1 << 15:
                continue  # 16-element chunks over many rows: minutes in the interpreter
            # Past 2^18 elements one dtype (float32) is enough: a [65, 127, 129] norm in two dtypes took 100 s.
            big = max(math.prod(s) for s in shapes.values()) > 1 << 18
            for dtype in ("float32",) if big else ("float32", half):
                torch.manual_seed(index)
                inputs = [torch.randn(shapes[t.name]).to(getattr(torch, dtype)) for t in spec.inputs]
                if spec.expr.op == "batch_norm":  # a running variance is positive
                    inputs[2] = inputs[2].abs() + 0.1
                got = kernel(*inputs)
                want = reference(*[t.double() for t in inputs])
                assert got.shape == want.shape, (schedule, shapes)
                if want.dtype == torch.int64:
                    assert got.dtype == torch.int64
                    assert torch.equal(got, want), (schedule, shapes, dtype)
                    continue
                tolerance = 1e-4 if dtype == "float32" else 2e-2
                scale = max(1.0, float(torch.tensor(float(max(1, inputs[0].numel() // max(1, want.numel())))).sqrt()))
                assert got.dtype == inputs[0].dtype
                where = f"{schedule} {shapes} {dtype}"
                torch.testing.assert_close(got.double(), want, rtol=tolerance, atol=tolerance * scale,
                                           equal_nan=True, msg=lambda m, where=where: f"{where}: {m}")
