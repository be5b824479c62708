"""Stage 1: read the spec into an OpSpec (the offline reader; with an LLM, the model's reading beside it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.llm.authoring import read_spec as model_read
from agent.llm.client import LlmError
from agent.output import fresh_folder
from agent.reader import read_spec
from agent.reader.compare import disagreement
from agent.spec import OpSpec, SpecError
from agent.state import JobState
from storage import crud

NO_LLM_HINT = ("without an LLM the offline reader and generator serve this job; for operators they do not cover, "
               "configure an OpenAI-compatible endpoint (KERNELGEN_LLM_BASE_URL and KERNELGEN_LLM_MODEL, see README)")


def requirements(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Read the spec; a spec that needs an answer ends the job with the question, never with a guess."""
    request, ctx, job_id = state["request"], runtime.context, state["job_id"]
    generator = ctx.llm.config.label() if ctx.llm is not None else "offline"
    crud.update_job(ctx.engine, job_id, generator=generator)
    try:
        spec: OpSpec | None = read_spec(request.spec_text, work_dir=Path(ctx.work_dir) / f"job-{job_id}" / "read")
        question = ""
    except SpecError as exc:
        spec, question = None, str(exc)
    if ctx.llm is not None:
        found = _with_model(ctx, job_id, generator, request.spec_text, spec, question)
        if "status" in found:
            return found
        spec = found["spec"]
    elif spec is None:
        return _reject(ctx, job_id, f"{question}\n({NO_LLM_HINT})")
    assert spec is not None
    try:
        spec = _with_overrides(spec, request.rounds, request.target_speedup)
    except ValueError as exc:
        return _reject(ctx, job_id, str(exc))
    if spec.reading is not None:
        ctx.report("requirements", spec.reading.render())
    else:
        inputs = ", ".join(f"{t.name} {t.shapes} {'/'.join(t.dtypes)}" for t in spec.inputs)
        ctx.report("requirements", f"{spec.name} ({spec.category}): {spec.formula}; {inputs}")
    out_dir = request.out_dir
    if not out_dir:
        base = Path(request.out_root) / spec.name
        out_dir = str(fresh_folder(base, request.overwrite))
        if out_dir != str(base):  # never over an earlier job's files without a word
            ctx.report("requirements", f"{base} holds an earlier job's files: this job writes to {out_dir} "
                                       "(--force writes over them)")
    crud.update_job(ctx.engine, job_id, op_name=spec.name, spec_json=spec.model_dump_json(), out_dir=out_dir)
    return {
        "spec": spec, "out_dir": out_dir, "status": "running", "generator": generator,
        "rounds": [], "done": [], "refusals": [], "best_round": None, "repair_attempts": 0,
        "max_repairs": ctx.llm.config.max_repairs if ctx.llm is not None else 0,
    }


def _with_model(ctx: JobContext, job_id: int, generator: str, text: str, spec: OpSpec | None,
                question: str) -> dict[str, Any]:
    """Ask the model for its reading; compare it with the offline one and show a disagreement as a question."""
    assert ctx.llm is not None
    note = question if spec is None else ""  # the model reads on its own: showing ours would invite agreement
    if spec is None:
        ctx.report("requirements", f"the offline reader asks: {question.splitlines()[0][:160]}; asking {generator}")
    try:
        reply = model_read(ctx.llm, text, note)
    except LlmError as error:
        if spec is None:
            return _fail(ctx, job_id, generator, f"the LLM could not read the spec: {error}")
        refusal = ctx.generator.refusal(spec)
        if refusal is not None:  # the model would write the kernel too: no use going on without it
            return _fail(ctx, job_id, generator, f"the LLM could not read the spec: {error}; read offline as "
                                                 f"{spec.formula}, but {refusal}")
        ctx.report("requirements", f"the model's reading is not available ({error}); the offline reading is used")
        return {"spec": spec}
    if not reply.supported:
        if spec is None:
            return _reject(ctx, job_id, f"the model {ctx.llm.config.model} says it cannot write this operator: "
                                        f"{reply.reason or 'no reason given'}")
        ctx.report("requirements", f"the model says it cannot write this operator ({reply.reason}); the offline "
                                   "reading is used")
        return {"spec": spec}
    model_spec = reply.to_spec()
    if spec is None:
        return {"spec": model_spec}
    differs = disagreement(spec, model_spec)
    if differs:
        message = (f"the offline reader and the model {ctx.llm.config.model} read this spec differently: {differs}. "
                   "Which reading is right? Restate the spec to settle it (a formula settles it best).")
        return _reject(ctx, job_id, message)
    assert spec.reading is not None
    agreed = "the model's reading agrees" if model_spec.category != "custom" else \
        "the model described the operator in words only; the offline reading is used"
    name = spec.name if spec.reading.named or not model_spec.name.isidentifier() else model_spec.name
    reading = spec.reading.model_copy(update={"notes": [*spec.reading.notes, agreed], "op": name})
    return {"spec": spec.model_copy(update={"reading": reading, "name": name})}


def _with_overrides(spec: OpSpec, rounds: int | None, target: float | None) -> OpSpec:
    updates: dict[str, Any] = {}
    if rounds is not None:
        updates["max_rounds"] = max(1, min(rounds, 5))
    if target is not None:
        updates["target_speedup"] = target
    if not updates:
        return spec
    reading = spec.reading.model_copy(update=updates) if spec.reading else None  # the block shows what will run
    return spec.model_validate(spec.model_dump() | updates | {"reading": reading})


def _reject(ctx: JobContext, job_id: int, message: str) -> dict[str, Any]:
    ctx.report("requirements", f"cannot build a kernel from this spec:\n{message}")
    crud.update_job(ctx.engine, job_id, status="rejected", message=message)
    return {"status": "rejected", "message": message}


def _fail(ctx: JobContext, job_id: int, generator: str, message: str) -> dict[str, Any]:
    ctx.report("requirements", message)
    crud.update_job(ctx.engine, job_id, status="failed", message=message)
    return {"status": "failed", "message": message, "generator": generator}
