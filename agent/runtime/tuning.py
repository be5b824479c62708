"""Run a parameter search: many launch configurations of one kernel, measured in one sandboxed run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.generators.base import KernelFiles, LaunchConfig
from agent.runtime.harnesses import run_harness
from agent.spec import OpSpec

# The fastest configuration must beat the starting one by more than this to replace it (timing noise:
# on an H200 a search's 1-2% winner was measured slower by the full performance test).
SEARCH_MIN_GAIN = 0.02


class Trial(BaseModel):
    """One configuration's outcome: checked, then timed (geomean over the searched cases)."""

    config: LaunchConfig
    status: str  # ok | wrong | error
    ms: float | None = None
    case_ms: list[float] = []
    message: str = ""


class SearchResult(BaseModel):
    """Every configuration tried in a search, and the fastest correct one."""

    status: str  # pass | error | timeout | crashed
    trials: list[Trial] = []
    winner: LaunchConfig | None = None
    timer: str = ""
    cases: list[dict[str, Any]] = []
    message: str = ""
    seconds: float = 0.0

    def table(self) -> list[dict[str, Any]]:
        """Return the trials as rows for logs and report.json, fastest first."""
        ordered = sorted(self.trials, key=lambda t: (t.ms is None, t.ms or 0.0))
        return [{"config": t.config.label(), "status": t.status, "ms": t.ms, "message": t.message} for t in ordered]


def pick_winner(trials: list[Trial]) -> LaunchConfig | None:
    """Take the fastest correct configuration, unless it beats the first (the start) by no more than noise."""
    measured = [t for t in trials if t.status == "ok" and t.ms is not None]
    if not measured:
        return None
    fastest = min(measured, key=lambda t: t.ms or math.inf)
    start = trials[0]
    if start.status == "ok" and start.ms is not None and fastest.ms is not None:
        if fastest.ms * (1 + SEARCH_MIN_GAIN) > start.ms:
            return start.config  # within timing noise of the start: do not chase it
    return fastest.config


def search_cases(spec: OpSpec) -> list[tuple[int, int]]:
    """Pick the largest spec shape for each dtype case: the shapes that decide the speedup."""
    sizes = [math.prod(spec.output_shape(case)) for case in spec.shape_cases()]
    largest = max(range(len(sizes)), key=sizes.__getitem__)
    return [(largest, j) for j in range(len(spec.dtype_cases()))]


def search_configs(
    files: KernelFiles, spec: OpSpec, configs: list[LaunchConfig], workdir: Path, *, device: str, timeout_s: float,
    cases: list[tuple[int, int]] | None = None,
) -> SearchResult:
    """Check and time each configuration of the candidate in one sandboxed process; the fastest correct wins."""
    if not configs:
        return SearchResult(status="error", message="no configuration to measure")
    if len({c.schedule for c in configs}) != 1 or configs[0].schedule != files.config.schedule:
        raise ValueError("a search measures configurations of the candidate's own schedule only")
    plan = {
        "op": files.op,
        "configs": [c.constants() for c in configs],
        "cases": [list(case) for case in (cases or search_cases(spec))],
        "tolerances": {d: [t.rtol, t.atol] for d, t in spec.tolerances.items()},
    }
    run = run_harness(files.files, "tune_configs.py", plan, workdir, device=device, timeout_s=timeout_s,
                      trusted=files.trusted)
    if run.status != "pass":
        message = run.result.get("message") or run.stderr_tail[-500:]
        return SearchResult(status=run.status, message=str(message), seconds=run.seconds)
    trials = [
        Trial(config=config, status=t["status"], ms=t.get("ms"), case_ms=t.get("case_ms", []),
              message=t.get("message", ""))
        for config, t in zip(configs, run.result["trials"], strict=True)
    ]
    winner = pick_winner(trials)
    return SearchResult(status="pass", trials=trials, winner=winner, timer=run.result.get("timer", ""),
                        cases=run.result.get("cases", []), seconds=run.seconds,
                        message="" if winner else "no configuration passed the check")
