"""Stage 4d': measure the candidate schedule's configuration space in one sandboxed run; keep the fastest."""

from __future__ import annotations

import difflib
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.runtime.tuning import search_configs
from agent.state import JobState


def search(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Check and time the pruned configurations; render the winner, or record that nothing beat the best."""
    ctx, spec, pending, files = runtime.context, state["spec"], state["pending"], state["files"]
    best = state["best_files"]
    proposal = state.get("proposal")
    known = proposal.action.preferred if proposal is not None and proposal.action is not None else []
    space = ctx.generator.config_space(spec, pending.config.schedule, state["device"], preferred=known)
    # The starting configuration is measured too: it is what the search has to beat.
    configs = [pending.config, *(c for c in space.kept if c != pending.config)]
    workdir = ctx.work_dir / f"job-{state['job_id']}" / f"round-{pending.index}-search"
    with ctx.accelerators.hold(state["device"].kind):
        result = search_configs(files, spec, configs, workdir, device=state["device"].kind,
                                timeout_s=ctx.performance_timeout_s)
    record = {"space": space.summary(), "timer": result.timer, "status": result.status,
              "cases": result.cases, "trials": result.table(), "seconds": round(result.seconds, 1),
              "winner": result.winner.label() if result.winner else None, "message": result.message}
    ctx.report("search", f"round {pending.index}: {space.summary()}; measured {len(result.trials)} in "
               f"{result.seconds:.0f} s: " + (f"fastest {result.winner.label()}" if result.winner
                                              else f"{result.status}: {result.message}"))
    if result.winner is None:
        return {"proposal": None,
                "pending": pending.model_copy(update={"accuracy_status": "search failed", "search": record})}
    candidate = ctx.generator.generate(spec, result.winner)
    if candidate.files == best.files:
        return {"proposal": None, "pending": pending.model_copy(update={
            "accuracy_status": "unchanged", "search": record, "config": result.winner})}
    name = candidate.name_of("triton")
    diff = "".join(difflib.unified_diff(
        best.source("triton").splitlines(keepends=True), candidate.source("triton").splitlines(keepends=True),
        fromfile=f"v{pending.base_index}/{name}", tofile=f"v{pending.index}/{name}",
    ))
    return {"proposal": None, "files": candidate, "pending": pending.model_copy(update={
        "config": result.winner, "search": record, "triton_source": candidate.source("triton"), "diff": diff})}
