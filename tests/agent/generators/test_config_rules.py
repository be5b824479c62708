"""A configuration to start from is checked before anything runs, and a bad one is refused naming the rule."""

import pytest

from agent.generators.base import LaunchConfig
from agent.generators.config_rules import config_from_label


@pytest.mark.parametrize(("label", "expected"), [
    ("flat: BLOCK_SIZE=256, NUM_WARPS=8", LaunchConfig(block_size=256, num_warps=8)),
    ("rows: BLOCK_M=4, BLOCK_N=256, NUM_WARPS=4", LaunchConfig(schedule="rows", block_m=4, block_size=256)),
    ("whole_row: BLOCK_M=2, NUM_WARPS=16", LaunchConfig(schedule="whole_row", block_m=2, num_warps=16)),
    ("looped_row: BLOCK_M=1, BLOCK_K=4096, NUM_WARPS=8",
     LaunchConfig(schedule="looped_row", block_size=4096, num_warps=8)),
    ("split_row: BLOCK_M=1, BLOCK_K=8192, PROGRAMS_PER_SM=2, NUM_WARPS=16",
     LaunchConfig(schedule="split_row", block_size=8192, programs_per_sm=2, num_warps=16)),
])
def test_every_schedule_can_be_started_from_its_label(label: str, expected: LaunchConfig) -> None:
    assert config_from_label(label) == expected


@pytest.mark.parametrize(("label", "rule"), [
    ("flat: BLOCK_SIZE=300", "BLOCK_SIZE=300: it must be a power of two (Triton's tl.arange and warp counts are); "
                             "the nearest are 256 and 512"),
    ("flat: NUM_WARPS=6", "NUM_WARPS=6: it must be a power of two"),
    ("flat: NUM_WARPS=64", "NUM_WARPS=64: it must be between 1 and 32"),
    ("flat: BLOCK_SIZE=0", "BLOCK_SIZE=0: it must be between 1 and 65536"),
    ("flat: BLOCK_M=2", "BLOCK_M is not a parameter of the flat schedule (its parameters: BLOCK_SIZE, NUM_WARPS)"),
    ("tiles: BLOCK_SIZE=256", "'tiles' is not a schedule; schedules: flat, rows, persistent, whole_row"),
    ("tiled: BLOCK_SIZE=256", "BLOCK_SIZE is not a parameter of the tiled schedule (its parameters: BLOCK_M"),
    ("flat: BLOCK_SIZE=big", "is not a configuration like 'flat: BLOCK_SIZE=256, NUM_WARPS=8'"),
    ("looped_row: BLOCK_M=64, BLOCK_K=4096", "a looped_row tile of 262144 elements is over the limit of 65536"),
])
def test_a_bad_configuration_is_refused_naming_the_rule(label: str, rule: str) -> None:
    with pytest.raises(ValueError) as raised:
        config_from_label(label)
    assert rule in str(raised.value)
