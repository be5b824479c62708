"""Every schedule the elementwise generator offers computes the same thing as PyTorch written here.

Kernels run in the Triton interpreter at small odd shapes: element counts that are
not multiples of the block, rows narrower than the row tile, persistent grids that
loop over several tiles per program.
"""

import difflib
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from agent.generators.base import LaunchConfig, Schedule
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.reader import read_spec
from agent.spec import OpSpec
from tests.agent.generators.kernels import load_triton_module

GENERATOR = ElementwiseGenerator()
BIAS_GELU = "fused bias-add + GELU, x [64, 1000] fp16, bias [1000]"
RESIDUAL = "y = residual + alpha * y_in with alpha = 0.5, residual and y_in float16 [2048, 1024]"
CHANNELS = "x * scale[c] + shift[c] for x NCHW [2, 3, 5, 7] fp32, scale and shift [3]"
EXP_1D = "exp of x [999] fp32"


def _per_channel(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    return x * scale[None, :, None, None] + shift[None, :, None, None]


# (spec text, expected in float64, shape cases {input: shape}, parameters passed to the kernel)
CASES: dict[str, tuple[str, Callable[..., torch.Tensor], list[dict[str, list[int]]], dict[str, float]]] = {
    "bias-gelu": (BIAS_GELU, lambda x, bias: F.gelu(x + bias),
                  [{"x": [5, 131], "bias": [131]}, {"x": [3, 2, 1000], "bias": [1000]}], {}),
    "residual": (RESIDUAL, lambda residual, y_in: residual + 0.25 * y_in,
                 [{"residual": [33, 65], "y_in": [33, 65]}, {"residual": [3, 5, 7], "y_in": [3, 5, 7]}],
                 {"alpha": 0.25}),
    "channels": (CHANNELS, _per_channel,
                 [{"x": [2, 3, 5, 7], "scale": [3], "shift": [3]}, {"x": [1, 3, 4, 9], "scale": [3], "shift": [3]}],
                 {}),
    "exp-1d": (EXP_1D, torch.exp, [{"x": [999]}, {"x": [257]}, {"x": [1]}], {}),
}
# Two configurations per schedule: small tiles (many programs, ragged tails) and one tile wider than the row.
CONFIGS: dict[Schedule, list[LaunchConfig]] = {
    "flat": [LaunchConfig(schedule="flat", block_size=128, num_warps=4),
             LaunchConfig(schedule="flat", block_size=1024, num_warps=4)],
    "rows": [LaunchConfig(schedule="rows", block_size=256, block_m=2, num_warps=4),  # wider than 131
             LaunchConfig(schedule="rows", block_size=64, block_m=4, num_warps=2)],
    # On the CPU the grid is PROGRAMS_PER_SM * cpu count, so 128-element tiles loop several times per program.
    "persistent": [LaunchConfig(schedule="persistent", block_size=128, num_warps=4, programs_per_sm=1),
                   LaunchConfig(schedule="persistent", block_size=1024, num_warps=8, num_stages=2)],
}
DTYPES = (torch.float32, torch.float16)
TOLERANCES = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2)}
OFFERED = [(name, schedule) for name, case in CASES.items()
           for schedule in GENERATOR.schedules(read_spec(case[0]))]


def _spec(text: str) -> OpSpec:
    return read_spec(text)


def _inputs(spec: OpSpec, shapes: dict[str, list[int]], dtype: torch.dtype, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(shapes[t.name], generator=generator, dtype=torch.float64) * 2).to(dtype)
            for t in spec.inputs]


def _message(where: str) -> Callable[[str], str]:
    return lambda message: f"{where}: {message}"


@pytest.mark.parametrize(("name", "schedule"), OFFERED, ids=[f"{n}-{s}" for n, s in OFFERED])
def test_every_offered_schedule_matches_pytorch(name: str, schedule: Schedule, tmp_path: Path) -> None:
    text, expected, shape_cases, params = CASES[name]
    spec = _spec(text)
    checked = 0
    for index, config in enumerate(CONFIGS[schedule]):
        kernel = getattr(load_triton_module(GENERATOR.generate(spec, config), tmp_path / str(index)), spec.name)
        for seed, (shapes, dtype) in enumerate((s, d) for s in shape_cases for d in DTYPES):
            inputs = _inputs(spec, shapes, dtype, seed)
            got = kernel(*inputs, **params)
            want = expected(*[t.double() for t in inputs])
            where = f"{config.label()} {shapes} {dtype}"
            assert got.shape == want.shape, where
            assert got.dtype == dtype, where
            rtol, atol = TOLERANCES[dtype]
            torch.testing.assert_close(got.double(), want, rtol=rtol, atol=atol, msg=_message(where))
            checked += 1
    assert checked == len(CONFIGS[schedule]) * len(shape_cases) * len(DTYPES)


def test_schedules_offered_by_output_rank() -> None:
    for text in (BIAS_GELU, RESIDUAL, CHANNELS):
        assert GENERATOR.schedules(_spec(text)) == ["flat", "rows", "persistent"]
    assert GENERATOR.schedules(_spec(EXP_1D)) == ["flat", "persistent"]  # no rows of a 1-D output


def test_category_names_the_broadcast_pattern() -> None:
    assert GENERATOR.category(_spec(BIAS_GELU)) == "elementwise/row-broadcast"
    assert GENERATOR.category(_spec(RESIDUAL)) == "elementwise/same-shape"
    assert GENERATOR.category(_spec(EXP_1D)) == "elementwise/same-shape"
    assert GENERATOR.category(_spec(CHANNELS)) == "elementwise/broadcast"
    assert GENERATOR.category(_spec("relu(x - y), x [3, 1, 5] fp32, y [4, 5] fp32")) == "elementwise/broadcast"


@pytest.mark.parametrize("schedule", ["flat", "rows", "persistent"])
def test_config_change_within_a_schedule_changes_only_the_constants(schedule: Schedule) -> None:
    spec = _spec(BIAS_GELU)
    first, second = CONFIGS[schedule]
    one, two = GENERATOR.generate(spec, first), GENERATOR.generate(spec, second)
    for role in ("baseline", "accuracy", "performance"):
        assert one.source(role) == two.source(role), role
    changed = [line for line in difflib.ndiff(one.source("triton").splitlines(), two.source("triton").splitlines())
               if line[:2] in ("- ", "+ ")]
    assert changed
    removed = {m.group(1): int(m.group(2)) for line in changed if line.startswith("- ")
               if (m := re.fullmatch(r"- ([A-Z_]+) = (\d+)", line))}
    added = {m.group(1): int(m.group(2)) for line in changed if line.startswith("+ ")
             if (m := re.fullmatch(r"\+ ([A-Z_]+) = (\d+)", line))}
    assert len(removed) + len(added) == len(changed), changed  # nothing but constant lines differ
    assert removed == {k: v for k, v in first.constants().items() if second.constants()[k] != v}
    assert added == {k: v for k, v in second.constants().items() if first.constants()[k] != v}


def test_rows_wrapper_rejects_a_row_input_that_varies_along_other_dims(tmp_path: Path) -> None:
    spec = _spec(BIAS_GELU)
    rows = getattr(load_triton_module(GENERATOR.generate(spec, CONFIGS["rows"][0]), tmp_path / "rows"), spec.name)
    flat = getattr(load_triton_module(GENERATOR.generate(spec, CONFIGS["flat"][0]), tmp_path / "flat"), spec.name)
    x = torch.randn(2, 4, 6)
    for bias in (torch.randn(2, 4, 1), torch.randn(2, 1, 6), torch.randn(4, 6)):
        with pytest.raises(ValueError, match="bias must vary only along the last dimension"):
            rows(x, bias)
    # The flat schedule handles such broadcasts (one run of kept dimensions): the restriction belongs to row tiles.
    for bias in (torch.randn(2, 4, 1), torch.randn(4, 6)):
        torch.testing.assert_close(flat(x, bias).double(), F.gelu(x.double() + bias.double()), rtol=1e-4, atol=1e-4)
    # A leading 1 still varies along the last dimension only.
    bias = torch.randn(1, 1, 6)
    torch.testing.assert_close(rows(x, bias).double(), F.gelu(x.double() + bias.double()), rtol=1e-4, atol=1e-4)
