"""The graph state of one job, and the record of one round."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel

from agent.diagnosis import Diagnosis, PatternHint
from agent.generators.base import KernelFiles, LaunchConfig
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec

JobStatus = Literal["running", "verified", "failed", "rejected"]
RoundEditType = Literal["initial", "parameter", "interface", "logic"]


class JobRequest(BaseModel):
    """What the caller asked for: the spec text and the run options."""

    spec_text: str
    out_dir: str | None = None  # the output folder; None puts it at out_root/<op name> (job-<id> if never read)
    out_root: str = "kernelgen_out"
    overwrite: bool = False  # reuse out_root/<op name> even where an earlier job's files are (else <op>-2, -3, ...)
    device: str = "auto"
    rounds: int | None = None  # overrides the spec's max rounds
    target_speedup: float | None = None  # overrides the spec's target
    initial_config: LaunchConfig | None = None  # start from a given (even poor) configuration
    llm: Literal["auto", "offline", "openai"] | None = None  # None: the configured default (KERNELGEN_LLM)


class RoundRecord(BaseModel):
    """One measured version: what changed, how it did, whether it was kept."""

    index: int
    edit_type: RoundEditType
    config: LaunchConfig
    reason: str
    accuracy_status: str
    accuracy: dict[str, Any] = {}
    performance_status: str = "not run"
    performance: dict[str, Any] = {}
    speedup: float | None = None
    pct_of_copy: float | None = None
    accepted: bool = False
    verdict: str = ""
    triton_source: str = ""
    diff: str = ""
    action: str = ""  # the pattern-store key of the change this round made
    base_index: int | None = None  # the version this round changed
    diagnosis: dict[str, Any] = {}  # the structured diagnosis that motivated the change
    search: dict[str, Any] = {}  # the configuration space and every configuration measured
    profile: dict[str, Any] = {}  # roofline placement and hardware counters of this version
    origin: str = "offline"  # who wrote this version: the offline templates or the LLM
    repair_of: int | None = None  # the failed version this round tries to repair


class JobState(TypedDict, total=False):
    """Everything the nodes pass along; nodes return the keys they change."""

    job_id: int
    request: JobRequest
    out_dir: str  # resolved once the op name is known
    spec: OpSpec
    device: DeviceInfo
    definition: str
    files: KernelFiles  # the version under test
    best_files: KernelFiles  # the best verified version so far
    pending: RoundRecord  # the round being measured
    rounds: list[RoundRecord]
    best_round: int | None
    proposal: Diagnosis | None  # the diagnosis whose action the next round carries out
    done: list[str]  # action keys already carried out or refused
    refusals: list[str]
    category: str  # the op category optimization patterns are filed under
    patterns: list[PatternHint]  # what earlier jobs on this device and category learned
    status: JobStatus
    message: str
    coverage: dict[str, Any]  # the shapes the kept version was checked on (agent.coverage.Coverage, dumped)
    generator: str  # offline, or openai:<model>
    last_files: KernelFiles  # the files of the round just logged (a repair starts from them)
    first_files: KernelFiles  # the first version's files (its reference is the job's until a version passes)
    repair_attempts: int  # repairs since the last version that passed accuracy
    max_repairs: int  # the LLM's repair budget per failing version (0 offline)
    llm_proposal: dict[str, Any] | None  # the model's diagnosis that the next (LLM) edit carries out
    llm_error: str  # why the LLM stopped answering: the job ends with its best version, if any
    stage_seconds: Annotated[list[dict[str, Any]], operator.add]  # each stage run's seconds (agent/stage_timing.py)
