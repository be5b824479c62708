"""Stage 4d: apply the proposed change, producing a candidate version."""

from __future__ import annotations

import difflib
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.state import JobState, RoundRecord


def edit(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Regenerate the files at the proposed configuration and diff against the best version."""
    ctx, spec, proposal, best = runtime.context, state["spec"], state["proposal"], state["best_files"]
    assert proposal is not None
    files = ctx.generator.generate(spec, proposal.config)
    name = files.name_of("triton")
    diff = "".join(difflib.unified_diff(
        best.source("triton").splitlines(keepends=True), files.source("triton").splitlines(keepends=True),
        fromfile=f"v{state['best_round']}/{name}", tofile=f"v{len(state['rounds'])}/{name}",
    ))
    pending = RoundRecord(
        index=len(state["rounds"]), edit_type="parameter", config=proposal.config, reason=proposal.reason,
        accuracy_status="not run", triton_source=files.source("triton"), diff=diff,
    )
    ctx.report("edit", f"round {pending.index}: {proposal.config.label()}")
    return {"files": files, "pending": pending, "proposal": None,
            "tried": [*state.get("tried", []), proposal.config.label()]}
