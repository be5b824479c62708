"""The row engine's pieces a user meets: which specs it takes, what it refuses and why, how it addresses inputs."""

from pathlib import Path

import pytest
import torch

from agent.generators.base import Schedule
from agent.generators.offline.dispatch import OfflineGenerator
from agent.generators.offline.rows.views import group_views, viewed_shape
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec, TensorSpec, safe_name
from tests.agent.generators.kernels import load_triton_module

H100 = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)


def test_a_layer_norm_weight_is_read_along_the_row_and_broadcast_over_rows() -> None:
    assert group_views((96,), (4, 96), 1, 2) == [(0, 1, 1), (1, 1, 96), (0, 1, 1)]
    assert group_views((4, 96), (4, 96), 1, 2) == [(96, 1, 4), (1, 1, 96), (0, 1, 1)]


def test_a_reduction_over_a_middle_dim_walks_it_by_stride_without_a_copy() -> None:
    assert [v[0] for v in group_views((64, 512, 1024), (64, 512, 1024), 1, 2)] == [512 * 1024, 1024, 1]


def test_a_per_channel_vector_wraps_around_the_rows_of_every_sample() -> None:
    # instance_norm's weight [C] over rows (n, c) of [N, C, H, W]: row r reads weight[r % C].
    assert group_views((1, 6, 1, 1), (4, 6, 5, 5), 2, 4)[0] == (1, 1, 6)
    # group_norm's weight [C] in the [N, G, C / G, S] view: outer (n, g) reads g * C / G, the row k reads k // S.
    iteration = viewed_shape((2, 8, 3, 5), "grouped", 4, 4)
    assert iteration == (2, 4, 2, 15)
    views = group_views(viewed_shape((8,), "channel", 4, 4), iteration, 2, 4)
    assert views[:2] == [(2, 1, 4), (1, 15, 2)]


def test_an_input_broadcast_along_a_dim_between_its_own_is_refused_with_its_shape() -> None:
    with pytest.raises(ValueError, match=r"\(3, 1, 5\)"):
        group_views((3, 1, 5), (3, 4, 5), 3, 3)


@pytest.mark.parametrize(("text", "reason"), [("F.mse_loss(a, b) a [8, 16] b [16]", "broadcast target"),
                                             ("torch.sum(x, dim=(0, 2)) x [3, 4, 5]", "not adjacent")])
def test_what_the_row_engine_cannot_write_is_refused_with_the_reason(text: str, reason: str) -> None:
    refusal = OfflineGenerator().refusal(read_spec(text))
    assert refusal is not None and reason in refusal


def test_shape_cases_of_different_ranks_are_refused_before_a_kernel_is_written() -> None:
    refusal = OfflineGenerator().refusal(read_spec("softmax over the last dim of x, shapes [8, 100] and [2, 3, 100]"))
    assert refusal is not None and "ranks [2, 3]" in refusal


def test_a_turned_off_engine_is_named_in_the_refusal() -> None:
    refusal = OfflineGenerator(["elementwise"]).refusal(read_spec("cumsum of x [8, 300] along the last dim"))
    assert refusal is not None and "scans" in refusal and "KERNELGEN_OFFLINE_ENGINES" in refusal


def test_long_rows_start_looped_and_short_rows_start_in_registers() -> None:
    generator = OfflineGenerator()
    assert generator.schedules(read_spec("softmax of x [64, 1000] along dim -1"))[0] == "whole_row"
    assert generator.schedules(read_spec("softmax of x [64, 50257] along dim -1")) == ["looped_row"]  # would spill


@pytest.mark.parametrize("text", ["softmax of x [64, 1000] along dim -1", "log_softmax of x [64, 50257] along dim -1",
                                  "logsumexp of x [9, 70] over dim -1",
                                  "F.cross_entropy(x, t) x [64, 32000] fp16 t [64]"])
def test_softmax_exponentials_are_ex2_of_the_difference_in_whole_and_looped_rows(text: str) -> None:
    # tl.exp keeps denormal results at extra instructions an element: up to 8% of a row's time (H200).
    generator = OfflineGenerator()
    spec = read_spec(text)
    schedule = generator.schedules(spec)[0]
    source = generator.generate(spec, generator.default_config(spec, schedule, H100)).files[f"{spec.name}_triton.py"]
    kernel = source[source.index("@triton.jit"):source.index("def group_views")]
    assert "tl.exp(" not in kernel
    assert "tl.exp2((" in kernel and " * 1.4426950408889634)" in kernel
    if schedule == "looped_row":  # the running sum's rescale by exp(old max - new max) too
        assert "tl.where(mask, tl.exp2((" in kernel and '0.0, tl.exp2((acc' in kernel


def test_the_search_space_of_a_long_row_drops_tiles_that_would_spill() -> None:
    space = OfflineGenerator().config_space(read_spec("softmax of x [4096, 32000] along dim -1 fp16"), "whole_row",
                                            H100)
    assert space.kept and "register spills" in space.summary()
    assert all(c.num_warps >= 16 for c in space.kept)


@pytest.mark.parametrize(("text", "whole", "looped"), [
    ("torch.mean(x, dim=1) x [64, 512, 1024] fp32", 32, 32),  # 32 fp32 lanes read each row's 128-byte line
    ("torch.sum(x, dim=1) x [64, 512, 1024] bf16", 32, 64),  # the whole-row default holds 32 half lanes
    ("torch.softmax(x, dim=1) x [32, 1000, 256] bf16", 16, 32),  # 64 lanes would leave 128 programs for 132 SMs
])
def test_the_search_space_of_a_strided_reduction_reads_whole_lines(text: str, whole: int, looped: int) -> None:
    spec = read_spec(text)
    for schedule, lanes in (("whole_row", whole), ("looped_row", looped)):
        space = OfflineGenerator().config_space(spec, schedule, H100)
        assert space.kept and "uncoalesced loads" in space.summary()
        assert min(c.block_m for c in space.kept) == lanes, schedule
    # The looped row steps a few rows at a time down the reduced dim, as torch.compile's kernel does.
    assert any(c.block_size <= 16 for c in OfflineGenerator().config_space(spec, "looped_row", H100).kept)


def test_a_strided_whole_row_search_keeps_its_default_where_a_long_row_leaves_room_for_few_lanes() -> None:
    spec = read_spec("torch.mean(x, dim=1) x [64, 2048, 1024] fp32")  # 8 lanes of 2048 fill a 16384-element tile
    space = OfflineGenerator().config_space(spec, "whole_row", H100)
    assert OfflineGenerator().default_config(spec, "whole_row", H100) in space.kept
    assert "uncoalesced loads" in space.summary()  # 1, 2 and 4 lanes are still dropped


def test_a_small_strided_reduction_keeps_narrow_lanes_to_fill_the_sms() -> None:
    space = OfflineGenerator().config_space(read_spec("amax of x [2, 300, 48] over dim 1"), "whole_row", H100)
    assert "uncoalesced loads" not in space.summary()


@pytest.mark.parametrize(("text", "lanes"), [
    ("torch.mean(x, dim=1) x [8, 4096, 4096] fp32", 32),  # a whole row of 4096 would hold 4 lanes: 16-byte runs
    ("torch.amax(x, dim=1) x [16, 2048, 1024] fp16", 64),
])
def test_a_long_strided_row_read_once_starts_looped_over_128_byte_runs(text: str, lanes: int) -> None:
    spec, generator = read_spec(text), OfflineGenerator()
    assert generator.schedules(spec)[0] == "looped_row"
    config = generator.default_config(spec, "looped_row", H100)
    assert (config.block_m, config.block_size, config.num_warps) == (lanes, 64, 8)
    assert config in generator.config_space(spec, "looped_row", H100).kept


def test_a_strided_softmax_keeps_whole_rows_that_it_reads_once() -> None:
    spec = read_spec("torch.softmax(x, dim=1) x [16, 2048, 1024] fp32")
    assert OfflineGenerator().schedules(spec)[0] == "whole_row"
    assert OfflineGenerator().default_config(spec, "whole_row", H100).block_m == 8


def test_a_short_strided_row_takes_one_128_byte_line_per_row_on_few_warps() -> None:
    spec = read_spec("torch.sum(x, dim=1) x [256, 128, 1024] fp32")
    assert OfflineGenerator().schedules(spec)[0] == "whole_row"
    config = OfflineGenerator().default_config(spec, "whole_row", H100)
    assert (config.block_m, config.num_warps) == (32, 4)


@pytest.mark.parametrize(("text", "schedule", "lanes", "warps"), [
    ("torch.sum(x, dim=1) x [4096, 128, 8] fp32", "whole_row", 8, 4),  # 8 inner positions: no masked lanes
    ("torch.sum(x, dim=1) x [3, 300, 40] fp32", "looped_row", 1, 2),  # 120 lanes for 132 SMs: 64 values, 64 threads
])
def test_a_strided_default_holds_no_idle_lanes_or_threads(text: str, schedule: Schedule, lanes: int,
                                                           warps: int) -> None:
    config = OfflineGenerator().default_config(read_spec(text), schedule, H100)
    assert (config.block_m, config.num_warps) == (lanes, warps)


def test_a_long_strided_row_with_too_few_lanes_for_the_sms_keeps_its_whole_row_first() -> None:
    # 120 lanes cannot give 132 SMs a 128-byte run each, so the looped row would read 4-byte runs too.
    assert OfflineGenerator().schedules(read_spec("torch.mean(x, dim=1) x [3, 2500, 40] fp32"))[0] == "whole_row"


def test_an_ascend_search_keeps_narrow_strided_lanes_as_nothing_was_measured_there() -> None:
    ascend = DeviceInfo(kind="npu", name="Ascend 910B", multiprocessors=24)
    space = OfflineGenerator().config_space(read_spec("torch.mean(x, dim=1) x [64, 512, 1024] fp32"), "whole_row",
                                            ascend)
    assert space.kept and "uncoalesced loads" not in space.summary()


def test_a_configuration_that_helped_before_is_measured_first_once() -> None:
    spec = read_spec("softmax of x [256, 1000] along dim -1 fp16")
    space = OfflineGenerator().config_space(spec, "looped_row", H100)
    known = space.kept[-1]
    again = OfflineGenerator().config_space(spec, "looped_row", H100, preferred=[known, known])
    assert again.kept[0] == known and again.kept.count(known) == 1
    assert len(again.kept) == len(space.kept)


def test_an_operator_named_after_a_python_builtin_is_renamed_by_the_reader_and_refused_in_a_spec() -> None:
    assert read_spec("row sum of x [4, 8]").name == "reduce_sum"
    assert safe_name("abs") == "abs_op"
    with pytest.raises(ValueError, match="reduce_max"):
        OpSpec(name="max", formula="amax(x, dim=-1)",
               inputs=[TensorSpec(name="x", shapes=[[4, 8]], dtypes=["float32"])])


@pytest.mark.parametrize(("text", "passes"), [("softmax of x [64, 50257] along dim -1", 2),
                                              ("log_softmax of x [64, 50257] along dim -1", 2),
                                              ("cross entropy, logits [64, 50257], labels [64]", 1),
                                              ("F.cross_entropy(x, t, label_smoothing=0.1) x [64, 50257] t [64]", 1),
                                              ("layer norm of x [64, 50000]", 3)])
def test_a_looped_row_takes_the_softmax_sum_in_the_same_pass_as_its_max(text: str, passes: int) -> None:
    spec = read_spec(text)
    generator = OfflineGenerator()
    files = generator.generate(spec, generator.default_config(spec, "looped_row", H100))
    source = files.files[files.name_of("triton")]
    assert source.count("for k0 in range(n_full, n_reduce + row_shift, BLOCK_K):") == passes  # a partial chunk each
    # The chunks inside the row, unmasked (from the first chunk's end where the row starts off a 16-byte boundary).
    assert sum(source.count(f"for k0 in range({start}, n_full, BLOCK_K):") for start in ("0", "n_first")) == passes


def test_a_looped_scan_reads_every_chunk_through_its_mask() -> None:
    # Unmasked chunks inside the row gave a cumsum wrong sums on an H200: scans keep the one masked loop.
    spec = read_spec("torch.cumsum(x, dim=-1) x [64, 50000] fp32")
    generator = OfflineGenerator()
    files = generator.generate(spec, generator.default_config(spec, "looped_row", H100))
    source = files.files[files.name_of("triton")]
    assert "n_full" not in source and source.count("for k0 in range(") == 1


def test_a_vocabulary_row_read_once_when_looped_starts_looped() -> None:
    generator = OfflineGenerator()
    assert generator.schedules(read_spec("cross entropy, logits [4096, 32000] fp16, labels [4096]"))[0] == "looped_row"
    assert generator.schedules(read_spec("cross entropy, logits [64, 1000], labels [64]"))[0] == "whole_row"
    assert generator.schedules(read_spec("softmax of x [64, 32000] along dim -1"))[0] == "whole_row"  # two passes


def test_a_group_norm_of_few_long_groups_starts_looped_and_of_many_starts_whole() -> None:
    generator = OfflineGenerator()
    few = read_spec("F.group_norm(x, 32, w, b) x [8, 256, 64, 64] w [256] b [256] fp16")  # 256 rows of 32768
    many = read_spec("F.group_norm(x, 32, w, b) x [64, 256, 32, 32] w [256] b [256] fp16")  # 2048 rows of 8192
    assert generator.schedules(few)[0] == "looped_row"
    assert generator.schedules(many)[0] == "whole_row"


def test_a_row_a_whole_tile_would_mostly_pad_is_read_once_and_its_looped_chunks_fit_it() -> None:
    generator = OfflineGenerator()
    padded = read_spec("softmax over the last dim of x [8192, 5000] fp16")  # an 8192 tile, 39% idle
    assert generator.schedules(padded) == ["whole_row", "looped_row"]
    assert generator.default_config(padded, "looped_row", H100).block_size == 1024  # 5 chunks, the last 88% full
    assert generator.schedules(read_spec("softmax over the last dim of x [8192, 4096] fp16"))[0] == "whole_row"


@pytest.mark.parametrize(("text", "looped"), [
    ("F.normalize(x, dim=-1) x [8192, 4096] fp32", True),
    ("F.rms_norm(x, (4096,), w) x [8192, 4096] w [4096] fp32", True),
    ("F.normalize(x, dim=-1) x [4096, 8192] fp32", True),
    ("softmax over the last dim of x [8192, 4096] fp32", False),  # exponentials in the loop: slower looped
    ("F.layer_norm(x, (4096,), w, b) x [8192, 4096] w [4096] b [4096] fp32", False),  # three passes
    ("F.normalize(x, dim=-1) x [8192, 4096] bf16", False),  # half type
    ("F.normalize(x, dim=-1) x [8192, 5000] fp32", False),  # 2048-element chunks would pad a fifth of the row
    ("torch.var(x, dim=-1) x [8192, 4096] fp32", False),  # one value a row
])
def test_an_fp32_row_reduced_once_and_written_back_rereads_it_from_l2(text: str, looped: bool) -> None:
    generator = OfflineGenerator()
    spec = read_spec(text)
    assert (generator.schedules(spec)[0] == "looped_row") == looped
    if looped:
        config = generator.default_config(spec, "looped_row", H100)
        assert (config.block_size, config.num_warps) == (2048, 16)
        kernel = generator.generate(spec, config).files[f"{spec.name}_triton.py"]
        first, second = kernel.index('eviction_policy="evict_last"'), kernel.index('eviction_policy="evict_first"')
        assert first < second  # the first pass keeps the row in L2 for the second


@pytest.mark.parametrize(("text", "warps"), [
    ("torch.sum(x, dim=-1) x [8192, 4096] fp32", 16),  # reduced once, to one value a row
    ("F.normalize(x, dim=-1) x [8192, 4096] fp32", 16),  # reduced once, 4-byte elements
    ("F.rms_norm(x, (4096,), w) x [8192, 4096] w [4096] bf16", 8),  # reduced once, half type
    ("F.layer_norm(x, (4096,), w, b) x [8192, 4096] w [4096] b [4096] fp16", 8),  # mean, then variance
    ("F.instance_norm(x, weight=w, bias=b) x [8, 256, 64, 64] w [256] b [256] fp32", 8),
    ("softmax over the last dim of x [8192, 8192] fp32", 16),  # a 32 KB row keeps 16
])
def test_a_row_written_after_costly_reductions_takes_fewer_warps(text: str, warps: int) -> None:
    generator = OfflineGenerator()
    spec = read_spec(text)
    assert generator.default_config(spec, "whole_row", H100).num_warps == warps


@pytest.mark.parametrize(("text", "chunk", "warps"), [
    ("cross entropy, logits [8192, 32000] fp16, labels [8192]", 4096, 4),
    ("F.cross_entropy(x, t) x [8192, 32000] fp32 t [8192]", 4096, 8),
    # 50257 columns: a 4096-element chunk would leave the last one 27% full; 2048 leaves it 54% full.
    ("F.cross_entropy(x, t, reduction='none') x [8192, 50257] bf16 t [8192]", 2048, 4),
    ("F.cross_entropy(x, t, label_smoothing=0.1) x [4096, 50257] fp32 t [4096]", 2048, 4),
])
def test_a_one_pass_vocabulary_row_takes_chunks_that_waste_little_of_the_last(text: str, chunk: int,
                                                                              warps: int) -> None:
    config = OfflineGenerator().default_config(read_spec(text), "looped_row", H100)
    assert (config.block_size, config.num_warps) == (chunk, warps)


@pytest.mark.parametrize(("text", "hinted"), [
    ("torch.sum(x, dim=-1) x [8192, 4096] fp32", True),  # read once, nothing written back: streamed past L2
    ("F.normalize(x, dim=-1) x [8192, 4096] fp32", False),  # written back as a tile: no hint (faster on H100/H200)
])
def test_only_a_whole_row_reduced_to_values_streams_its_loads_past_l2(text: str, hinted: bool) -> None:
    generator = OfflineGenerator()
    spec = read_spec(text)
    files = generator.generate(spec, generator.default_config(spec, "whole_row", H100)).files
    assert ('eviction_policy="evict_first"' in files[f"{spec.name}_triton.py"]) == hinted


def test_a_loss_at_class_indices_loads_the_target_logit_instead_of_comparing_every_column() -> None:
    generator = OfflineGenerator()
    for text in ("cross entropy, logits [4096, 32000] fp16, labels [4096]",
                 "F.nll_loss(x, t, weight=w) x [64, 1000] t [64] w [1000]"):
        spec = read_spec(text)
        for schedule in generator.schedules(spec):
            files = generator.generate(spec, generator.default_config(spec, schedule, H100))
            kernel = files.files[files.name_of("triton")]
            assert "ks[None, :].to(tl.float32)" not in kernel, (text, schedule)
            assert "& (at" in kernel, (text, schedule)  # the gather is masked to indices inside the row


def test_a_per_channel_vector_divides_by_compile_time_constants() -> None:
    spec = read_spec("F.group_norm(x, 32, w, b) x [8, 256, 64, 64] w [256] b [256] fp16")
    generator = OfflineGenerator()
    kernel = generator.generate(spec, generator.default_config(spec, "looped_row", H100))
    source = kernel.files[kernel.name_of("triton")]
    assert "w_dk: tl.constexpr, w_qk: tl.constexpr" in source


def test_a_whole_row_kernel_refuses_a_row_longer_than_its_tile_and_names_the_schedule_that_takes_it(
        tmp_path: Path) -> None:
    spec = read_spec("instance norm of x [2, 4, 7, 7]")
    generator = OfflineGenerator()
    files = generator.generate(spec, generator.default_config(spec, "whole_row", H100))
    assert "rows longer than the whole_row schedule holds" in files.files[files.name_of("accuracy")]
    kernel = getattr(load_triton_module(files, tmp_path), spec.name)
    with pytest.raises(ValueError, match="looped_row schedule takes rows of any length"):
        kernel(torch.randn(1, 1, 200, 200))


def test_a_per_channel_weight_is_wrapped_when_only_a_later_shape_case_has_a_batch(tmp_path: Path) -> None:
    # With N=1 the weight spans the whole outer group; with N=3 it repeats over it: both cases must run.
    spec = read_spec("group norm with 4 groups, weight w [8], bias b [8], x fp32, shapes (1, 8, 5, 6) / (3, 8, 5, 6)")
    generator = OfflineGenerator()
    kernel = getattr(load_triton_module(generator.generate(spec, generator.default_config(spec, "whole_row", H100)),
                                        tmp_path), spec.name)
    for batch in (1, 3):
        x, w, b = torch.randn(batch, 8, 5, 6), torch.randn(8), torch.randn(8)
        torch.testing.assert_close(kernel(x, w, b), torch.nn.functional.group_norm(x, 4, w, b), rtol=1e-4, atol=1e-4)


def test_a_launch_constant_set_between_calls_changes_the_next_launch(tmp_path: Path) -> None:
    # The configuration search sets the module's constants between trials: a tile cached per shape alone would
    # time the first trial's tile under every later label.
    generator = OfflineGenerator()
    spec = read_spec("softmax over the last dim of x [64, 3000] fp32")
    config = generator.default_config(spec, "looped_row", H100).model_copy(update={"block_size": 1024})
    module = load_triton_module(generator.generate(spec, config), tmp_path)
    x = torch.randn(5, 3000)
    torch.testing.assert_close(module.softmax(x), x.softmax(-1))
    assert module.launch_sizes.cache_info().currsize == 1
    module.BLOCK_K = 256
    torch.testing.assert_close(module.softmax(x), x.softmax(-1))
    assert module.launch_sizes.cache_info().currsize == 2
    assert module.launch_sizes(5, 3000, 1, (module.BLOCK_M, 256, module.NUM_WARPS))[0] == 256
    assert module.launch_sizes(5, 3000, 1, (module.BLOCK_M, 1024, module.NUM_WARPS))[0] == 1024
