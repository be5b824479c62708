"""Check a launch configuration a person asks to start from, before anything runs, naming the rule it breaks."""

from __future__ import annotations

from agent.generators.base import SCHEDULE_NOTES, LaunchConfig, parse_label

# The most each launch parameter may be (keeps a kernel's tiles a sane size).
CONFIG_BOUNDS = {"BLOCK_SIZE": 1 << 16, "BLOCK_M": 1 << 10, "BLOCK_N": 1 << 16, "BLOCK_K": 1 << 16,
                 "NUM_WARPS": 32, "NUM_STAGES": 8, "PROGRAMS_PER_SM": 64, "GROUP_M": 64}
# tl.arange takes a power-of-two length, and a program runs a power-of-two number of warps.
POWERS_OF_TWO = ("BLOCK_SIZE", "BLOCK_M", "BLOCK_N", "BLOCK_K", "NUM_WARPS")
# Elements in one program's tile: past this, registers spill or the compiler refuses.
MAX_TILE = 1 << 16
EXAMPLE = "flat: BLOCK_SIZE=256, NUM_WARPS=8"


def config_from_label(label: str) -> LaunchConfig:
    """Read a label like `flat: BLOCK_SIZE=256, NUM_WARPS=8`; ValueError naming the rule a bad one breaks."""
    text = label.strip()
    schedule, _, rest = text.partition(": ")
    if schedule not in SCHEDULE_NOTES:
        raise ValueError(f"{schedule or text!r} is not a schedule; schedules: {', '.join(SCHEDULE_NOTES)} "
                         f"(a configuration looks like '{EXAMPLE}')")
    config = parse_label(text)
    if config is None:
        raise ValueError(f"{text!r} is not a configuration like '{EXAMPLE}': NAME=integer pairs after the schedule")
    given = {key: int(value) for key, value in (item.split("=") for item in rest.split(", "))}
    allowed = config.constants()
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(f"{', '.join(unknown)} is not a parameter of the {schedule} schedule "
                         f"(its parameters: {', '.join(allowed)})")
    for key, value in given.items():
        if not 1 <= value <= CONFIG_BOUNDS[key]:
            raise ValueError(f"{key}={value}: it must be between 1 and {CONFIG_BOUNDS[key]}")
        if key in POWERS_OF_TWO and value & (value - 1):
            raise ValueError(f"{key}={value}: it must be a power of two (Triton's tl.arange and warp counts are); "
                             f"the nearest are {_lower_power(value)} and {2 * _lower_power(value)}")
    tile = _tile_elements(config)
    if tile > MAX_TILE:
        raise ValueError(f"a {schedule} tile of {tile} elements is over the limit of {MAX_TILE} per program")
    return config


def _lower_power(value: int) -> int:
    return 1 << (value.bit_length() - 1)


def _tile_elements(config: LaunchConfig) -> int:
    """Count the elements one program's tile holds."""
    if config.schedule in ("rows", "looped_row", "split_row", "tiled", "flash"):
        return config.block_m * config.block_size
    if config.schedule == "whole_row":
        return 0  # the wrapper caps rows per program by the row length
    return config.block_size
