"""Loss specs in, row-engine kernels out, checked in the interpreter against PyTorch written here.

Class targets are drawn in range with some entries set to the ignored index; each case runs under both
schedules, in float32 and a half type, on the spec's shape and an odd one.
"""

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from agent.generators.offline.dispatch import OfflineGenerator
from agent.ir.edges import edge_cases
from agent.ir.index_inputs import index_inputs
from agent.reader import read_spec
from agent.reader.agreement import positive_inputs
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec
from tests.agent.generators.kernels import load_triton_module, run_accuracy_file

CPU = DeviceInfo(kind="cpu", name="cpu")
Reference = Callable[..., torch.Tensor]

CASES: list[tuple[str, Reference]] = [
    ("cross entropy, logits [6, 40], labels [6]", lambda x, t: F.cross_entropy(x, t)),
    ("交叉熵 logits [5, 33] bf16，标签 y [5]，reduction='sum'", lambda x, t: F.cross_entropy(x, t, reduction="sum")),
    ("per-token cross-entropy of x [7, 50] fp16 with targets [7]",
     lambda x, t: F.cross_entropy(x, t, reduction="none")),
    ("F.cross_entropy(x, t, weight=w, label_smoothing=0.2, ignore_index=3) x [5, 11] t [5] w [11]",
     lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.2, ignore_index=3)),
    ("cross entropy of logits [3, 10, 6] with target [3, 6]", lambda x, t: F.cross_entropy(x, t)),
    ("F.cross_entropy(x, p, label_smoothing=0.1) x [6, 20] p [6, 20]",
     lambda x, p: F.cross_entropy(x, p, label_smoothing=0.1)),
    ("负对数似然 logp [8, 30] fp16，标签 y [8]", lambda x, t: F.nll_loss(x, t)),
    ("F.nll_loss(logp, t, weight=w, reduction='none') logp [8, 30] t [8] w [30]",
     lambda x, t, w: F.nll_loss(x, t, weight=w, reduction="none")),
    ("mse loss of pred [16, 100] and target [16, 100]", lambda a, b: F.mse_loss(a, b)),
    ("均方误差 pred [33, 17] bf16, target [33, 17], 不归约", lambda a, b: F.mse_loss(a, b, reduction="none")),
    ("F.l1_loss(a, b, reduction='sum') a [9, 20] b [9, 20]", lambda a, b: F.l1_loss(a, b, reduction="sum")),
    ("smooth l1 loss beta 0.5 of x [10, 30] and y [10, 30]", lambda a, b: F.smooth_l1_loss(a, b, beta=0.5)),
    ("huber loss delta 2 of x [10, 30] and y [10, 30], reduction none",
     lambda a, b: F.huber_loss(a, b, delta=2.0, reduction="none")),
    ("F.kl_div(logq, p, reduction='batchmean') logq [8, 50] p [8, 50]",
     lambda a, b: F.kl_div(a, b, reduction="batchmean")),
    ("KL散度 input [8, 50] target [8, 50] log_target=True, reduction='sum'",
     lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True)),
    ("sigmoid 交叉熵 logits [16, 40], 标签 y [16, 40]", lambda a, b: F.binary_cross_entropy_with_logits(a, b)),
]


def _inputs(spec: OpSpec, shapes: dict[str, list[int]], dtype: str, seed: int) -> list[torch.Tensor]:
    torch.manual_seed(seed)
    indices = index_inputs(spec.expr, spec.input_types(shapes, spec.dtype_cases()[0]))
    positive = positive_inputs(spec.expr)
    tensors = []
    for t in spec.inputs:
        if t.name in indices:
            found = indices[t.name]
            values = torch.randint(0, found.high(shapes), shapes[t.name])
            values[torch.rand(shapes[t.name]) < 0.25] = found.ignored if found.ignored is not None else 0
            tensors.append(values)
        elif t.name in positive:
            tensors.append((torch.rand(shapes[t.name]) + 0.01).to(getattr(torch, dtype)))
        else:
            tensors.append(torch.randn(shapes[t.name]).to(getattr(torch, dtype)))
    return tensors


@pytest.mark.parametrize(("text", "reference"), CASES, ids=[c[0] for c in CASES])
def test_loss_kernel_matches_pytorch_in_both_schedules(text: str, reference: Reference, tmp_path: Path) -> None:
    spec = read_spec(text)
    generator = OfflineGenerator()
    assert generator.refusal(spec) is None
    first = spec.shape_cases()[0]
    shape_cases = [first, *edge_cases(spec.expr, first, spec.dtype_cases()[0],
                                      {p.name: p.value for p in spec.params})[:1]]
    half = next((d for d in spec.dtype_cases()[0].values() if d not in ("float32", "int64")), "float16")
    for schedule in ("whole_row", "looped_row"):
        config = generator.default_config(spec, schedule, CPU)
        if schedule == "looped_row":
            config = config.model_copy(update={"block_size": 16})  # several chunks even on small rows
        kernel = getattr(load_triton_module(generator.generate(spec, config), tmp_path / schedule), spec.name)
        for index, shapes in enumerate(shape_cases):
            for dtype in ("float32", half):
                inputs = _inputs(spec, shapes, dtype, index)
                got = kernel(*inputs)
                want = reference(*[t.double() if t.is_floating_point() else t for t in inputs])
                where = f"{schedule} {shapes} {dtype}"
                assert got.shape == want.shape and got.dtype == inputs[0].dtype, where
                tolerance = 1e-4 if dtype == "float32" else 2e-2
                torch.testing.assert_close(got.double(), want, rtol=tolerance, atol=tolerance, equal_nan=True,
                                           msg=lambda m, where=where: f"{where}: {m}")


def test_a_loss_reduced_to_one_number_inside_a_larger_formula_is_refused_with_the_way_out() -> None:
    refusal = OfflineGenerator().refusal(read_spec("out = mse_loss(x, y) * 2.0, x [8, 16], y [8, 16]"))
    assert refusal is not None and "reduction='none'" in refusal


def test_the_accuracy_file_draws_ignored_targets_and_catches_a_kernel_that_counts_them(tmp_path: Path) -> None:
    spec = read_spec("cross entropy, logits [6, 40] fp16, labels [6]")
    generator = OfflineGenerator()
    files = generator.generate(spec, generator.default_config(spec, "whole_row", CPU))
    for name, source in files.files.items():
        (tmp_path / name).write_text(source)
    verdict = run_accuracy_file(tmp_path, spec.name)
    assert verdict["status"] == "pass" and verdict["cases_run"] >= 10
    kernel = tmp_path / f"{spec.name}_triton.py"
    assert kernel.read_text().count("!= -100.0") == 1
    kernel.write_text(kernel.read_text().replace("!= -100.0", "!= -99.0"))  # ignored rows would count
    assert run_accuracy_file(tmp_path, spec.name)["status"] == "fail"
