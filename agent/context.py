"""What every node may use besides the state: storage, settings, a progress sink."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine

from agent.generators.base import Generator
from agent.generators.offline.dispatch import OfflineGenerator
from agent.llm.client import LlmClient
from agent.runtime.accelerators import AcceleratorSlots


def _quiet(stage: str, message: str) -> None:
    """Drop progress messages (the default when nobody listens)."""


@dataclass
class JobContext:
    """Run-time dependencies of a job, handed to nodes by LangGraph."""

    engine: Engine
    work_dir: Path
    accuracy_timeout_s: float = 900.0
    performance_timeout_s: float = 900.0
    profile_timeout_s: float = 300.0
    generator: Generator = field(default_factory=OfflineGenerator)
    report: Callable[[str, str], None] = _quiet
    # Held while kernels run (accuracy, timing, search, profiling): one job per accelerator, and each run sees only
    # the one it holds; jobs run at once (the service, `kernelgen batch`) share one.
    accelerators: AcceleratorSlots = field(default_factory=lambda: AcceleratorSlots(1))
    # The job's LLM endpoint; None: the offline generator alone (it rejects what it does not know).
    llm: LlmClient | None = None
