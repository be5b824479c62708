"""Looped rows that start off a 16-byte boundary, read from the boundary below: same values, nothing else read.

Rows of an odd length (a vocabulary of 50257) start at every offset modulo 16 bytes, so the compiler can only load
them an element at a time; the looped row instead reads each row from the boundary below its start and masks the
neighbours' elements out (H100, log_softmax over [4096, 50257] bf16 ran at 44% of the copy bandwidth with
element loads). These run the kernels in the Triton interpreter, in chunks much shorter than the rows.
"""

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from agent.generators.offline.dispatch import OfflineGenerator
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from tests.agent.generators.kernels import load_triton_module

CPU = DeviceInfo(kind="cpu", name="cpu")


def _looped(text: str, tmp_path: Path, block_size: int = 64) -> tuple[Callable[..., torch.Tensor], object]:
    generator = OfflineGenerator()
    spec = read_spec(text)
    config = generator.default_config(spec, "looped_row", CPU).model_copy(
        update={"block_size": block_size, "block_m": 1})
    module = load_triton_module(generator.generate(spec, config), tmp_path)
    return getattr(module, spec.name), module


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_odd_rows_read_from_the_boundary_below_give_pytorchs_values(dtype: torch.dtype, tmp_path: Path) -> None:
    log_softmax, module = _looped("log_softmax over the last dim of x [8, 203] fp32", tmp_path)
    torch.manual_seed(0)
    x = (torch.randn(8, 203) * 3).to(dtype)
    assert module.row_vector(1, 1, (x,)) == 16 // x.element_size()  # the shifted reads are the ones tested
    # Extremes at the rows' edges, where a neighbour's elements share the first and last 16 bytes: the maximum
    # of row 3 is its first element, row 4 ends in +inf, row 6 starts with a NaN; none may leak into another row.
    x[3, 0], x[4, -1], x[6, 0] = 80.0, float("inf"), float("nan")
    got, want = log_softmax(x), torch.log_softmax(x.double(), dim=-1)
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.double(), want, rtol=tolerance, atol=tolerance, equal_nan=True)
    assert torch.isfinite(got[[0, 1, 2, 3, 5, 7]]).all() and torch.isnan(got[6]).all()


@pytest.mark.parametrize(("text", "shape", "reference"), [
    ("log_softmax over the last dim of x [16, 3] bf16", (16, 3), lambda x: torch.log_softmax(x, -1)),  # < 16 bytes
    ("log_softmax over the last dim of x [8, 11] bf16", (8, 11), lambda x: torch.log_softmax(x, -1)),  # in one chunk
    ("torch.cumsum(x, dim=-1) x [8, 203] bf16", (8, 203), lambda x: torch.cumsum(x, -1)),  # a scan: stored as is
    ("layer norm of x [8, 203] bf16", (8, 203), lambda x: F.layer_norm(x, (x.shape[-1],))),  # three passes
])
def test_every_element_of_a_shifted_row_is_written_once_with_its_value(text: str, shape: tuple[int, int],
                                                                       reference: Callable[..., torch.Tensor],
                                                                       tmp_path: Path) -> None:
    kernel, module = _looped(text, tmp_path, block_size=16)
    torch.manual_seed(2)
    x = torch.randn(shape).to(torch.bfloat16)
    assert module.row_vector(1, 1, (x,)) == 8  # rows start at every offset of a 16-byte group
    got, want = kernel(x), reference(x.double())
    torch.testing.assert_close(got.double(), want, rtol=2e-2, atol=2e-2 * max(1.0, shape[-1] ** 0.5))


def test_a_one_pass_loss_picks_the_labels_logit_at_its_column_in_shifted_rows(tmp_path: Path) -> None:
    cross_entropy, module = _looped("F.cross_entropy(x, t, reduction='none') x [8, 203] bf16 t [8]", tmp_path)
    torch.manual_seed(1)
    x = torch.randn(8, 203).to(torch.bfloat16)
    t = torch.tensor([0, 202, 1, 201, 100, 7, 0, 202])  # the first and last columns of rows at every offset
    assert module.row_vector(1, 1, (x,)) == 8
    got, want = cross_entropy(x, t), F.cross_entropy(x.double(), t, reduction="none")
    torch.testing.assert_close(got.double(), want, rtol=2e-2, atol=2e-2)


def test_rows_are_read_as_they_are_where_the_16_bytes_around_them_are_not_all_the_tensors(tmp_path: Path) -> None:
    _, module = _looped("log_softmax over the last dim of x [8, 203] fp32", tmp_path)
    whole = torch.randn(8, 203, dtype=torch.bfloat16)
    assert module.row_vector(1, 1, (whole,)) == 8
    # The last row ends 2 bytes into a 16-byte block the storage does not reach (6 x 203 x 2 = 2436 bytes).
    assert module.row_vector(1, 1, (torch.randn(6, 203, dtype=torch.bfloat16),)) == 1
    # A tensor that starts 2 bytes past a boundary.
    off = torch.randn(8 * 203 + 1, dtype=torch.bfloat16)[1:].view(8, 203)
    assert module.row_vector(1, 1, (off,)) == 1
    # Rows that already start on boundaries, and several rows per program (one shift per row would not do).
    assert module.row_vector(8, 1, (torch.randn(8, 208, dtype=torch.bfloat16),)) == 1
    assert module.row_vector(1, 2, (whole,)) == 1


def test_two_pass_vocabulary_rows_start_in_64_kb_fp32_or_16_kb_half_chunks() -> None:
    generator = OfflineGenerator()
    h100 = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)
    fp32 = generator.default_config(read_spec("softmax over the last dim of x [2048, 50257] fp32"), "looped_row", h100)
    bf16 = generator.default_config(read_spec("log_softmax over the last dim of x [4096, 50257] bf16"), "looped_row",
                                    h100)
    assert (fp32.block_size, fp32.num_warps) == (16384, 32)
    assert (bf16.block_size, bf16.num_warps) == (8192, 16)


@pytest.mark.parametrize(("text", "reference"), [
    ("softmax over the last dim of x [5, 200] fp32", lambda x: torch.softmax(x, -1)),  # two passes, a tile stored
    ("torch.cumsum(x, dim=-1) x [5, 200] bf16", lambda x: torch.cumsum(x, -1)),  # a carry between chunks
    ("layer norm of x [5, 192] fp32", lambda x: F.layer_norm(x, (x.shape[-1],))),  # three passes, no partial chunk
    ("logsumexp of x [5, 200] over dim -1 bf16", lambda x: torch.logsumexp(x, -1)),  # one value per row
])
def test_chunks_inside_an_aligned_row_read_unmasked_and_its_last_chunk_masked(text: str, reference, tmp_path: Path
                                                                             ) -> None:
    kernel, module = _looped(text, tmp_path, block_size=64)
    torch.manual_seed(3)
    shape = read_spec(text).shape_cases()[0]["x"]
    dtype = torch.bfloat16 if "bf16" in text else torch.float32
    x = (torch.randn(shape) * 3).to(dtype)
    x[1, -1], x[2, 0] = 60.0, -float("inf")  # the maximum in the partial chunk; a -inf in a chunk inside the row
    assert module.row_vector(module.launch_plan((tuple(x.shape),), (x.dtype,))[-1], 1, (x,)) == 1  # not shifted
    got, want = kernel(x), reference(x.double())
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.double(), want, rtol=tolerance, atol=tolerance * max(1.0, shape[-1] ** 0.5),
                               equal_nan=True)  # a row normalized with a -inf in it is NaN, as in PyTorch


def test_a_loss_over_aligned_rows_sums_the_chunks_inside_the_row_and_the_last_one(tmp_path: Path) -> None:
    cross_entropy, _ = _looped("F.cross_entropy(x, t) x [6, 200] fp32 t [6]", tmp_path, block_size=64)
    torch.manual_seed(4)
    x, t = torch.randn(6, 200) * 4, torch.tensor([0, 63, 64, 191, 192, 199])  # labels at the chunks' edges
    torch.testing.assert_close(cross_entropy(x, t), F.cross_entropy(x.double(), t).float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("text", "unmasked_loops"), [
    ("log_softmax over the last dim of x [4096, 50257] bf16", 2),  # written back: both passes
    ("F.cross_entropy(x, t, reduction='none') x [8192, 50257] bf16 t [8192]", 1),  # reduced online only
    ("logsumexp of x [4096, 50257] over dim -1 bf16", 0),  # a value per row folded into tile accumulators
    ("F.cross_entropy(x, t, label_smoothing=0.1) x [4096, 50257] fp32 t [4096]", 0),  # (slower unmasked)
])
def test_a_shifted_rows_chunks_after_its_first_are_unmasked_where_that_was_faster(text: str,
                                                                                   unmasked_loops: int) -> None:
    generator = OfflineGenerator()
    spec = read_spec(text)
    config = generator.default_config(spec, "looped_row", DeviceInfo(kind="cuda", name="NVIDIA H100",
                                                                     multiprocessors=132))
    source = generator.generate(spec, config).files[f"{spec.name}_triton.py"]
    inside = source.split("for k0 in range(n_first, n_full, BLOCK_K):")
    assert len(inside) - 1 == unmasked_loops
    assert all("k_mask = tl.full([BLOCK_K], 1, tl.int1)" in loop.split("for k0 in")[0] for loop in inside[1:])
    if not unmasked_loops:  # every chunk masked, as the loop over the row's chunks then starts at 0
        assert "    n_full = 0" in source and "n_head" not in source


@pytest.mark.parametrize("length", [9, 23, 24, 40, 47])
def test_rows_of_every_offset_sum_each_element_once_across_first_inside_and_last_chunks(length: int,
                                                                                        tmp_path: Path) -> None:
    # 16-element chunks over rows starting at each of the eight offsets of a 16-byte group: rows inside two
    # chunks, rows whose last 16-byte boundary ends an inside chunk exactly, rows with a partial last chunk.
    log_softmax, module = _looped(f"log_softmax over the last dim of x [8, {length}] bf16", tmp_path, block_size=16)
    cross_entropy, _ = _looped(f"F.cross_entropy(x, t, reduction='none') x [8, {length}] bf16 t [8]", tmp_path,
                               block_size=16)
    torch.manual_seed(length)
    x = (torch.randn(8, length) * 3).to(torch.bfloat16)
    x[:, 0], x[:, -1] = 40.0, -30.0  # a neighbour's extremes next to every row's ends
    assert module.row_vector(1, 1, (x,)) == 8
    t = torch.tensor([0, length - 1, 7, 8, 15, 16, length // 2, 1]).clamp(max=length - 1)
    torch.testing.assert_close(log_softmax(x).double(), torch.log_softmax(x.double(), -1), rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(cross_entropy(x, t).double(), F.cross_entropy(x.double(), t, reduction="none"),
                               rtol=2e-2, atol=2e-2)
