"""Last stage: put the best version in the output folder, with report.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.coverage import MODEL_REFERENCE_NOTE, Coverage, checked_result, coverage_of, reference_of
from agent.output import write_artifact
from agent.stage_timing import summarize
from agent.state import JobState
from agent.targets import standing, target_text
from storage import crud


def finalize(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Write the best four files and report.json; a rejected spec writes nothing."""
    ctx, job_id = runtime.context, state["job_id"]
    status = state.get("status", "failed")
    if status == "running":
        status = "verified" if state.get("best_round") is not None else "failed"
    if "spec" not in state or "out_dir" not in state:
        status = "failed" if status == "failed" else "rejected"
        updates: dict[str, Any] = {}
        if status == "failed":  # the spec could not be read (the model or its endpoint failed): say why, on disk too
            request = state["request"]
            out_dir = request.out_dir or str(Path(request.out_root) / f"job-{job_id}")
            report = {"status": status, "message": state.get("message", ""), "spec_text": request.spec_text,
                      "generator": state.get("generator", "offline"), "llm": _llm_report(ctx, job_id)}
            write_artifact(ctx.engine, job_id, out_dir, "report.json", json.dumps(report, indent=1, default=str))
            updates["out_dir"] = out_dir
        ctx.report("finalize", f"{status}: no kernel was written")
        crud.update_job(ctx.engine, job_id, status=status, message=state.get("message", ""), **updates)
        return {"status": status}
    if status == "rejected":  # read, but refused at generation: the reading and the reason stay with the job
        report = _report(state, status) | {"generator": state.get("generator", "offline"), "llm": None}
        write_artifact(ctx.engine, job_id, state["out_dir"], "report.json", json.dumps(report, indent=1, default=str))
        ctx.report("finalize", f"{status}: no kernel was written; the reading is in {state['out_dir']}")
        crud.update_job(ctx.engine, job_id, status=status, message=state.get("message", ""))
        return {"status": status}
    out_dir = state["out_dir"]
    coverage = best_coverage(state)
    message = state.get("message", "")
    if status == "verified" and coverage is not None and coverage.shapes == "reduced":
        message = f"{message}; {coverage.line()}" if message else coverage.line()
    reference = reference_of(state["spec"])
    if status == "verified" and reference == "model-written":
        message = f"{message}; {MODEL_REFERENCE_NOTE}" if message else MODEL_REFERENCE_NOTE
    best_files = state.get("best_files")
    if best_files is not None:
        for name, source in best_files.files.items():
            write_artifact(ctx.engine, job_id, out_dir, name, source)
    generator = written_by(state)
    report = _report(state, status) | {"generator": generator, "message": message, "reference": reference,
                                       "coverage": coverage.model_dump() if coverage else None,
                                       "llm": _llm_report(ctx, job_id)}
    write_artifact(ctx.engine, job_id, out_dir, "report.json", json.dumps(report, indent=1, default=str))
    device = state.get("device")
    ctx.report("finalize", f"{status}: {out_dir}")  # before the final status: a reader that sees it has every event
    crud.update_job(
        ctx.engine, job_id, status=status, message=message, best_round=state.get("best_round"),
        device=device.name if device else None, coverage=coverage.shapes if coverage else None, generator=generator,
    )
    return {"status": status, "message": message} | ({"coverage": coverage.model_dump()} if coverage else {})


def written_by(state: JobState) -> str:
    """Name who wrote the files the job keeps: the model, or the offline generator even when a model read the spec."""
    rounds, best = state.get("rounds", []), state.get("best_round")
    configured = state.get("generator", "offline")
    if best is not None and best < len(rounds):
        return configured if rounds[best].origin == "llm" else "offline"
    if rounds:  # nothing kept: whoever wrote the versions that failed
        return configured if any(r.origin == "llm" for r in rounds) else "offline"
    return configured


def best_coverage(state: JobState) -> Coverage | None:
    """Return what the kept version was checked on: our own check's cases for model-written files."""
    best = state.get("best_round")
    rounds = state.get("rounds", [])
    if best is None or best >= len(rounds):
        return None
    return coverage_of(checked_result(rounds[best].accuracy))


def _report(state: JobState, status: str) -> dict[str, Any]:
    spec, rounds, best = state["spec"], state.get("rounds", []), state.get("best_round")
    best_files = state.get("best_files")
    device = state.get("device")
    return {
        "op": spec.name,
        "entry_point": f"{spec.name}_triton.{spec.name}",
        "formula": spec.formula if spec.category == "custom" else f"{spec.output} = {spec.formula}",
        "understood": spec.reading.model_dump() if spec.reading else None,
        "files": sorted(best_files.files) if best_files else [],
        "device": device.model_dump() if device else None,
        "status": status,
        "message": state.get("message", ""),
        "target_speedup": spec.target_speedup,
        "target": target_text(spec.target_speedup),
        "best_round": state.get("best_round"),
        "best": standing(rounds[0], rounds[best]) if rounds and best is not None and best < len(rounds) else None,
        "rounds": [r.model_dump(exclude={"triton_source"}) for r in rounds],
        "refused_edits": state.get("refusals", []),
        "spec": spec.model_dump(),
        "stage_seconds": summarize(state.get("stage_seconds", [])),  # where the job's time went, stage by stage
    }


def _llm_report(ctx: JobContext, job_id: int) -> dict[str, Any] | None:
    """Tokens and latency per LLM call and in total (None for an offline job)."""
    if ctx.llm is None:
        return None
    calls = crud.list_llm_calls(ctx.engine, job_id)
    return {
        "base_url": ctx.llm.config.base_url, "model": ctx.llm.config.model,
        "structured_mode": ctx.llm.structured_mode, "totals": crud.llm_usage(ctx.engine, job_id),
        "calls": [c.model_dump(include={"stage", "attempt", "response_format", "prompt_tokens", "completion_tokens",
                                        "latency_ms", "status", "error"}) for c in calls],
    }
