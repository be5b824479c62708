"""Stage 1: turn the request text into a validated OpSpec (offline parser first, then the LLM)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.llm.authoring import read_spec
from agent.llm.client import LlmError
from agent.parsing import parse_requirements
from agent.spec import OpSpec, SpecError
from agent.state import JobState
from storage import crud

NO_LLM_HINT = ("the offline generator writes fused elementwise and broadcast operators only; for other operators "
               "configure an OpenAI-compatible endpoint (KERNELGEN_LLM_BASE_URL and KERNELGEN_LLM_MODEL, see README)")


def requirements(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Parse the spec text; a spec nobody can read ends the job with the reason."""
    request, ctx, job_id = state["request"], runtime.context, state["job_id"]
    generator = ctx.llm.config.label() if ctx.llm is not None else "offline"
    crud.update_job(ctx.engine, job_id, generator=generator)
    try:
        spec = parse_requirements(request.spec_text)
    except SpecError as exc:
        if ctx.llm is None:
            return _reject(ctx, job_id, f"{exc}\n({NO_LLM_HINT})")
        ctx.report("requirements", f"not an offline family ({str(exc).splitlines()[0][:160]}); asking {generator}")
        try:
            reply = read_spec(ctx.llm, request.spec_text, str(exc))
        except LlmError as error:
            return _fail(ctx, job_id, generator, f"the LLM could not read the spec: {error}")
        if not reply.supported:
            return _reject(ctx, job_id, f"the model {ctx.llm.config.model} says it cannot write this operator: "
                           f"{reply.reason or 'no reason given'}")
        spec = reply.to_spec()
    try:
        spec = _with_overrides(spec, request.rounds, request.target_speedup)
    except ValueError as exc:
        return _reject(ctx, job_id, str(exc))
    inputs = ", ".join(f"{t.name} {t.shapes} {'/'.join(t.dtypes)}" for t in spec.inputs)
    semantics = spec.formula if spec.category == "custom" else f"{spec.output} = {spec.formula}"
    ctx.report("requirements", f"{spec.name} ({spec.category}): {semantics}; {inputs}")
    out_dir = request.out_dir or str(Path(request.out_root) / spec.name)
    crud.update_job(ctx.engine, job_id, op_name=spec.name, spec_json=spec.model_dump_json(), out_dir=out_dir)
    return {
        "spec": spec, "out_dir": out_dir, "status": "running", "generator": generator,
        "rounds": [], "done": [], "refusals": [], "best_round": None, "repair_attempts": 0,
        "max_repairs": ctx.llm.config.max_repairs if ctx.llm is not None else 0,
    }


def _with_overrides(spec: OpSpec, rounds: int | None, target: float | None) -> OpSpec:
    updates: dict[str, Any] = {}
    if rounds is not None:
        updates["max_rounds"] = max(1, min(rounds, 5))
    if target is not None:
        updates["target_speedup"] = target
    return spec.model_validate(spec.model_dump() | updates) if updates else spec


def _reject(ctx: JobContext, job_id: int, message: str) -> dict[str, Any]:
    ctx.report("requirements", f"cannot build a kernel from this spec:\n{message}")
    crud.update_job(ctx.engine, job_id, status="rejected", message=message)
    return {"status": "rejected", "message": message}


def _fail(ctx: JobContext, job_id: int, generator: str, message: str) -> dict[str, Any]:
    ctx.report("requirements", message)
    crud.update_job(ctx.engine, job_id, status="failed", message=message)
    return {"status": "failed", "message": message, "generator": generator}
