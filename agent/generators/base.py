"""What every kernel generator produces, and the interface they share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel

from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec

FILE_ROLES = ("triton", "baseline", "accuracy", "performance")

# How the kernel maps work to programs. Switching schedule rewrites the kernel body: a logic edit.
Schedule = Literal["flat", "rows", "persistent", "whole_row", "looped_row", "split_row", "tiled", "flash"]
SCHEDULE_NOTES: dict[str, str] = {
    "flat": "1-D grid, one contiguous tile of BLOCK_SIZE elements per program",
    "rows": "2-D tiles of BLOCK_M x BLOCK_N over [rows, last dim], walked on a 1-D grid; row-broadcast "
            "inputs are loaded once per tile and kept in cache (evict_last)",
    "persistent": "a fixed grid of PROGRAMS_PER_SM programs per SM, each looping grid-stride over "
                  "tiles of BLOCK_SIZE elements (NUM_STAGES pipelines the loop)",
    "whole_row": "BLOCK_M rows per program, each row held whole in registers: one read of the input, every "
                 "reduction and the output in one pass",
    "looped_row": "BLOCK_M rows per program, walked in chunks of BLOCK_K: one loop per level of nested "
                  "reductions (a softmax's sum of exponentials rides with its running max: an online softmax), "
                  "then a loop that writes the output (rows of any length)",
    "split_row": "each row's BLOCK_K chunks dealt out to enough programs for PROGRAMS_PER_SM per SM, BLOCK_M rows "
                 "each, writing float32 partials; the last program of each row tile to finish (an atomic ticket) "
                 "folds them in a fixed order and finishes the rows (few, long rows: a whole-tensor sum, a column "
                 "sum of a tall matrix)",
    "tiled": "one BLOCK_M x BLOCK_N output tile per program, accumulated in float32 over BLOCK_K steps of the "
             "shared dim (NUM_STAGES-deep software pipeline), tiles visited in groups of GROUP_M rows of tiles so "
             "neighbouring programs share operand tiles in L2; the epilogue runs on the tile before its one store",
    "flash": "BLOCK_M queries of one (batch, head) a tile, walking the keys BLOCK_N at a time with a running max "
             "and sum (online softmax, FlashAttention's forward): the scores never reach memory; causal blocks past "
             "the diagonal are skipped; a program that fills its SM's shared memory (not causal) takes tile after "
             "tile",
}


class LaunchConfig(BaseModel):
    """A schedule and its tunable launch parameters (a parameter edit changes only the parameters)."""

    schedule: Schedule = "flat"
    block_size: int = 1024  # flat, persistent: elements per tile; rows: BLOCK_N; looped/split_row: BLOCK_K
    block_m: int = 1  # rows and the row schedules: rows per tile
    num_warps: int = 4
    num_stages: int = 1  # persistent, whole_row: software-pipelining depth of the tile loop
    programs_per_sm: int = 4  # persistent, split_row, pipelined whole_row: programs per streaming multiprocessor
    block_k: int = 32  # tiled: the shared dim's step
    group_m: int = 8  # tiled: rows of tiles visited together (L2 reuse of the operand tiles)

    @property
    def pipelined(self) -> bool:
        """Say whether whole rows are walked by a few programs per SM with their loads staged ahead."""
        return self.schedule == "whole_row" and self.num_stages > 1

    def constants(self) -> dict[str, int]:
        """Return the module constants of `_triton.py` that hold this configuration."""
        if self.schedule == "rows":
            return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_size, "NUM_WARPS": self.num_warps}
        if self.schedule == "whole_row":
            if self.pipelined:
                return {"BLOCK_M": self.block_m, "NUM_WARPS": self.num_warps, "NUM_STAGES": self.num_stages,
                        "PROGRAMS_PER_SM": self.programs_per_sm}
            return {"BLOCK_M": self.block_m, "NUM_WARPS": self.num_warps}
        if self.schedule == "looped_row":
            return {"BLOCK_M": self.block_m, "BLOCK_K": self.block_size, "NUM_WARPS": self.num_warps}
        if self.schedule == "split_row":
            return {"BLOCK_M": self.block_m, "BLOCK_K": self.block_size, "PROGRAMS_PER_SM": self.programs_per_sm,
                    "NUM_WARPS": self.num_warps}
        if self.schedule == "flash":
            return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_size, "NUM_WARPS": self.num_warps,
                    "NUM_STAGES": self.num_stages}
        if self.schedule == "tiled":
            return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_size, "BLOCK_K": self.block_k,
                    "GROUP_M": self.group_m, "NUM_WARPS": self.num_warps, "NUM_STAGES": self.num_stages}
        if self.schedule == "persistent":
            return {"BLOCK_SIZE": self.block_size, "NUM_WARPS": self.num_warps, "NUM_STAGES": self.num_stages,
                    "PROGRAMS_PER_SM": self.programs_per_sm}
        return {"BLOCK_SIZE": self.block_size, "NUM_WARPS": self.num_warps}

    def label(self) -> str:
        """Render as `flat: BLOCK_SIZE=..., NUM_WARPS=...` for logs and tables."""
        return f"{self.schedule}: " + ", ".join(f"{k}={v}" for k, v in self.constants().items())

    @classmethod
    def from_constants(cls, schedule: Schedule, constants: dict[str, int]) -> LaunchConfig:
        """Rebuild a configuration from its schedule and module constants."""
        block = constants.get({"rows": "BLOCK_N", "looped_row": "BLOCK_K", "split_row": "BLOCK_K",
                               "tiled": "BLOCK_N", "flash": "BLOCK_N"}.get(schedule, "BLOCK_SIZE"), 1024)
        return cls(
            schedule=schedule, block_size=block, block_m=constants.get("BLOCK_M", 1),
            num_warps=constants.get("NUM_WARPS", 4), num_stages=constants.get("NUM_STAGES", 1),
            programs_per_sm=constants.get("PROGRAMS_PER_SM", 4),
            **({"block_k": constants.get("BLOCK_K", 32), "group_m": constants.get("GROUP_M", 8)}
               if schedule == "tiled" else {}),
        )


def parse_label(label: str) -> LaunchConfig | None:
    """Read a configuration back from its label (as the pattern store keeps it); None if it is not one."""
    schedule, _, rest = label.partition(": ")
    if schedule not in SCHEDULE_NOTES or not rest:
        return None
    try:
        constants = {k: int(v) for k, v in (item.split("=") for item in rest.split(", "))}
    except ValueError:
        return None
    return LaunchConfig.from_constants(schedule, constants)  # type: ignore[arg-type]


class KernelFiles(BaseModel):
    """The four generated files of one version, by file name."""

    op: str
    files: dict[str, str]
    config: LaunchConfig
    origin: Literal["offline", "llm"] = "offline"  # who wrote the files: the templates or a model
    holds_user_code: bool = False  # the baseline embeds the person's own PyTorch (a code spec)

    @property
    def trusted(self) -> bool:
        """Tell whether every line came from our templates: only such files may run where bubblewrap cannot."""
        return self.origin == "offline" and not self.holds_user_code

    def name_of(self, role: str) -> str:
        """Return the file name of a role: triton, baseline, accuracy or performance."""
        return f"{self.op}_{role}.py"

    def source(self, role: str) -> str:
        """Return the source of a role's file."""
        return self.files[self.name_of(role)]


class ConfigSpace(Protocol):
    """A pruned, ranked list of configurations and how it was pruned."""

    kept: list[LaunchConfig]

    def summary(self) -> str:
        """Say how the space was pruned, in one line."""
        ...


class Generator(Protocol):
    """A source of kernels: the offline templates now, an LLM later."""

    def refusal(self, spec: OpSpec) -> str | None:
        """Say why this generator cannot write the spec (naming the IR nodes it does not lower); None if it can."""
        ...

    def generate(self, spec: OpSpec, config: LaunchConfig) -> KernelFiles:
        """Write the four files for a spec at a launch configuration."""
        ...

    def category(self, spec: OpSpec) -> str:
        """Name the op category that optimization patterns are filed under."""
        ...

    def interpreter_max_elements(self, spec: OpSpec) -> int:
        """Return the largest case, in output elements, that the Triton interpreter checks for the spec's kernel."""
        ...

    def schedules(self, spec: OpSpec) -> list[Schedule]:
        """List the schedules this generator can write for the spec, the default first."""
        ...

    def default_config(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo) -> LaunchConfig:
        """Return the usual best configuration of a schedule."""
        ...

    def config_space(
        self, spec: OpSpec, schedule: Schedule, device: DeviceInfo, preferred: Sequence[LaunchConfig] = (),
    ) -> ConfigSpace:
        """List the configurations of a schedule worth measuring (pruned by shape and hardware), preferred first."""
        ...
