"""What every kernel generator produces, and the interface they share."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel

from agent.spec import OpSpec

FILE_ROLES = ("triton", "baseline", "accuracy", "performance")


class LaunchConfig(BaseModel):
    """Tunable launch parameters of a kernel (a parameter edit changes only these)."""

    block_size: int = 1024
    num_warps: int = 4

    def label(self) -> str:
        """Render as BLOCK_SIZE=..., NUM_WARPS=... for logs and tables."""
        return f"BLOCK_SIZE={self.block_size}, NUM_WARPS={self.num_warps}"


class KernelFiles(BaseModel):
    """The four generated files of one version, by file name."""

    op: str
    files: dict[str, str]
    config: LaunchConfig

    def name_of(self, role: str) -> str:
        """Return the file name of a role: triton, baseline, accuracy or performance."""
        return f"{self.op}_{role}.py"

    def source(self, role: str) -> str:
        """Return the source of a role's file."""
        return self.files[self.name_of(role)]


class Generator(Protocol):
    """A source of kernels: the offline templates now, an LLM later."""

    def generate(self, spec: OpSpec, config: LaunchConfig) -> KernelFiles:
        """Write the four files for a spec at a launch configuration."""
        ...

    def candidate_configs(self, spec: OpSpec) -> list[LaunchConfig]:
        """List launch configurations worth trying, best guess first."""
        ...
