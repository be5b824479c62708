"""Stage 5: judge the measured round, keep the best version, log it and teach the pattern store."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.coverage import checked_result, coverage_of
from agent.documents import render
from agent.log_figures import (
    bottleneck,
    code_change,
    failures,
    next_directions,
    shapes_run,
    successes,
    utilisation,
    why_not_timed,
)
from agent.output import write_artifact
from agent.state import JobState, RoundRecord
from agent.targets import limit_reached, standing
from storage import crud
from storage.models import OptimizationPattern, Round
from storage.patterns import Outcome

# A later round must beat the best by more than timing noise to replace it.
MIN_GAIN = 0.01


def log(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Decide whether the round is kept (regression guard), then record it everywhere."""
    ctx, spec, pending = runtime.context, state["spec"], state["pending"]
    rounds = list(state.get("rounds", []))
    best_index = state.get("best_round")
    best = rounds[best_index] if best_index is not None else None
    accepted, verdict = judge(pending, best)
    record = pending.model_copy(update={"accepted": accepted, "verdict": verdict})
    rounds.append(record)
    out_dir, job_id, files = state["out_dir"], state["job_id"], state["files"]
    # A server killed after this stage's writes but before its checkpoint runs it again: every write below is
    # then the same one again (the round upserted, the files replaced, the log's section rewritten in place). The
    # pattern store counts, so the round and its count are written in one transaction, and only by the first run.
    first, pattern = crud.record_round(ctx.engine, job_id, Round(
        job_id=job_id, index=record.index, edit_type=record.edit_type, config=record.config.label(),
        reason=record.reason, accuracy_status=record.accuracy_status,
        performance_status=record.performance_status, speedup=record.speedup, pct_of_copy=record.pct_of_copy,
        accepted=accepted, verdict=verdict,
        figures_json=json.dumps({"accuracy": record.accuracy, "performance": record.performance,
                                 "diagnosis": record.diagnosis, "search": record.search,
                                 "profile": record.profile, "origin": record.origin,
                                 "repair_of": record.repair_of}, default=str),
    ), _lesson(state, record, best))
    if not first:
        pattern = _known_pattern(ctx, state, record, best)
    if record.accuracy_status not in ("unchanged", "search failed"):
        write_artifact(ctx.engine, job_id, out_dir, f"rounds/round_{record.index}/{files.name_of('triton')}",
                       files.source("triton"), record.index)
    best_after = len(rounds) - 1 if accepted else best_index
    section = render("round.md.j2", **_round_context(state, ctx, rounds, best_after, best, pattern))
    previous = "" if not rounds[:-1] else log_before(_read_log(ctx, job_id), record.index)
    header = f"# Optimization log: `{spec.name}`\n\n" if not previous else ""
    write_artifact(ctx.engine, job_id, out_dir, "optimization_log.md", previous + header + section)
    ctx.report("log", f"round {record.index}: {verdict}")
    updates: dict[str, Any] = {"rounds": rounds, "pending": None, "last_files": files}
    if record.index == 0:
        updates["first_files"] = files
    if record.accuracy_status == "pass" or record.repair_of is None:
        updates["repair_attempts"] = 0  # the budget is per failing version: a new version starts a new chain
    if accepted:
        updates |= {"best_round": len(rounds) - 1, "best_files": files}
    elif best is not None:
        updates["files"] = state["best_files"]  # revert: the next round starts from the best version
    return updates


def _round_context(
    state: JobState, ctx: JobContext, rounds: list[RoundRecord], best_after: int | None, base: RoundRecord | None,
    pattern: OptimizationPattern | None,
) -> dict[str, Any]:
    """Gather what round.md.j2 shows of the round just judged (every figure from its own results)."""
    record, spec, files = rounds[-1], state["spec"], state["files"]
    figures = standing(rounds[0], record)
    pct, compile_speedup = figures["pct_of_roofline"], figures["speedup_vs_compile"]
    accuracy_shapes, timed_shapes = shapes_run(record)
    best_files = files if best_after == len(rounds) - 1 else state.get("best_files", files)
    attempts = 0 if record.accuracy_status == "pass" or record.repair_of is None else state.get("repair_attempts", 0)
    repairs_left = (state.get("generator", "offline") != "offline" and not state.get("llm_error")
                    and attempts < state.get("max_repairs", 0))
    next_lines = next_directions(
        rounds, best_after, spec, origin=best_files.origin, schedules=ctx.generator.schedules(spec)
        if best_files.origin == "offline" else [], row_broadcast=state.get("category", "").endswith("row-broadcast"),
        done=set(state.get("done", [])), patterns=state.get("patterns", []), repairs_left=repairs_left)
    return {
        "r": record, "base": base, "target": spec.target_speedup, "device": state["device"].name, "fmt": _fmt,
        "pattern": pattern, "coverage": _coverage(record), "compile_speedup": compile_speedup,
        "pct_of_roofline": pct, "target_met": _target_met(record, spec.target_speedup, pct, compile_speedup),
        "accuracy_shapes": accuracy_shapes, "timed_shapes": timed_shapes, "not_timed": why_not_timed(record),
        "figures": utilisation(record), "bottleneck": bottleneck(record),
        "change": code_change(record, files.name_of("triton")), "triton_file": files.name_of("triton"),
        "success": successes(record, base), "failure": failures(record, base), "next": next_lines,
    }


def _target_met(record: RoundRecord, target: float | None, pct: float | None, compile_speedup: float | None) -> str:
    """Say whether this version meets the target: the stated speedup, or else the limit; why, when it was not timed."""
    if record.speedup is None:
        return why_not_timed(record)
    if target is None and pct is None:
        return "not known: the version was timed but not placed on the roofline"
    if target is not None:
        return "yes" if record.speedup >= target else "no"
    assert pct is not None
    return "yes" if limit_reached(pct, compile_speedup) else "no"


def _coverage(record: RoundRecord) -> str:
    """Say which shapes this round's verdict covers (our own check's, for model-written files)."""
    checked = checked_result(record.accuracy)
    return coverage_of(checked).line() if checked.get("cases") else ""


def judge(pending: RoundRecord, best: RoundRecord | None) -> tuple[bool, str]:
    """Keep a round only if it passed accuracy and beat the best version by more than noise."""
    if pending.accuracy_status == "unchanged":
        return False, "the search's fastest configuration is the current one: nothing to apply"
    if pending.accuracy_status == "search failed":
        return False, f"no configuration passed the search's check: {pending.search.get('message', '')}"
    if pending.accuracy_status != "pass":
        return False, f"failed accuracy ({pending.accuracy_status}): reverted, the best version stays"
    if best is None:
        return True, "first verified version: kept"
    if pending.speedup is None or best.speedup is None:
        return False, "not measured, so it cannot beat the best version: reverted"
    suspect = [c for c in pending.performance.get("cases", []) if isinstance(c, dict) and c.get("suspect")]
    if suspect and pending.origin == "llm":
        return False, f"timing suspect ({suspect[0]['suspect']}): not kept"
    gain, what = pending.speedup / best.speedup - 1, "speedup"
    kernel_times = _kernel_time(pending), _kernel_time(best)
    if pending.edit_type == "interface" and None not in kernel_times:
        # The reference was rewritten with the signature: compare kernel time, which it cannot inflate.
        gain, what = kernel_times[1] / kernel_times[0] - 1, "kernel time"  # type: ignore[operator]
    if gain > MIN_GAIN:
        return True, f"{100 * gain:+.1f}% ({what}) over v{best.index}: kept as the new best"
    if gain < -MIN_GAIN:
        return False, f"{100 * gain:+.1f}% ({what}) against v{best.index}: slower, reverted"
    return False, (f"{100 * gain:+.1f}% ({what}) against v{best.index} (within the {100 * MIN_GAIN:.0f}% noise): "
                   "reverted")


def _kernel_time(record: RoundRecord) -> float | None:
    """Return the geometric mean of the kernel's times over the measured cases."""
    raw = [c.get("triton_ms") for c in record.performance.get("cases", []) if isinstance(c, dict)]
    times = [float(t) for t in raw if isinstance(t, int | float) and t > 0]
    if not times or len(times) != len(raw):
        return None
    return math.exp(sum(math.log(t) for t in times) / len(times))


def _lesson(state: JobState, record: RoundRecord, best: RoundRecord | None) -> Outcome | None:
    """Say what the round teaches the pattern store: its outcome under its change, device and op category."""
    if not record.action or best is None:
        return None
    measured = record.speedup is not None and best.speedup is not None and record.accuracy_status == "pass"
    gain = record.speedup / best.speedup - 1 if measured and record.speedup and best.speedup else None
    if record.accuracy_status == "unchanged":
        gain = 0.0
    return crud.outcome(
        category=state.get("category", "unknown"), device=state["device"].name,
        bottleneck=str(record.diagnosis.get("bottleneck", "unknown")), change=record.action,
        edit_type=record.edit_type, params_before=best.config.label(), params_after=record.config.label(),
        gain=gain, helped=record.accepted, speedup_after=record.speedup if measured else None, job_id=state["job_id"],
    )


def _known_pattern(
    ctx: JobContext, state: JobState, record: RoundRecord, best: RoundRecord | None,
) -> OptimizationPattern | None:
    """Return the pattern a first run of this stage taught (for the log's section), without counting again."""
    if not record.action or best is None:
        return None
    bottleneck = str(record.diagnosis.get("bottleneck", "unknown"))
    rows = crud.list_patterns(ctx.engine, device=state["device"].name, category=state.get("category", "unknown"))
    return next((p for p in rows if p.bottleneck == bottleneck and p.change == record.action), None)


def log_before(text: str, index: int) -> str:
    """Return the log up to round `index`'s section: what it was before that round was first logged."""
    found = re.search(rf"^## Round {index}:", text, flags=re.MULTILINE)
    return text[:found.start()] if found else text


def _read_log(ctx: JobContext, job_id: int) -> str:
    for artifact in crud.list_artifacts(ctx.engine, job_id):
        if artifact.name == "optimization_log.md":
            return artifact.content
    return ""


def _fmt(value: float | None, pattern: str) -> str:
    return "not measured" if value is None else pattern.format(value)
