"""Figures of one optimization-log round: shapes that ran, utilisation, the code change, and its lessons."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agent.coverage import checked_result, coverage_of
from agent.diagnosis import PatternHint, diagnose_version
from agent.documents import shown_shapes
from agent.generators.base import Schedule
from agent.roofline import Placement
from agent.spec import OpSpec
from agent.state import RoundRecord
from agent.targets import stalled, vs_compile

NOT_MEASURED = "not measured on this device"
# Changed lines shown per side of a round's code change; the full file is kept under rounds/.
MAX_CODE_LINES = 24
# ncu counters shown in the utilisation table: (counter, what it measures, format).
COUNTERS = (
    ("dram_pct", "DRAM throughput (% of peak)", "{:.1f}%"),
    ("l2_hit_pct", "L2 cache hit rate", "{:.1f}%"),
    ("occupancy_pct", "Achieved occupancy (warps resident / maximum)", "{:.1f}%"),
    ("sm_throughput_pct", "Compute: SM throughput (% of peak)", "{:.1f}%"),
    ("registers_per_thread", "Registers per thread", "{:.0f}"),
)
SPILLS = "Register spills (local memory loads / stores)"
# Counters the table shows by name or that only feed other rows (the grid size, the local loads behind spills).
_SHOWN = {key for key, _, _ in COUNTERS} | {"grid_size", "block_size", "local_loads", "local_stores", "spilled"}


class Figure(BaseModel):
    """One row of the utilisation table: what, its value, and where the value came from."""

    name: str
    value: str
    source: str


class CodeChange(BaseModel):
    """The changed lines of `_triton.py` between the round's base version and its result."""

    file: str
    before_label: str
    after_label: str
    before: list[str]
    after: list[str]
    hidden: int  # changed lines left out (both sides) to keep the log short
    others: list[str] = []  # the other files the round changed (a model's logic or interface edit)
    others_diff: str = ""  # their unified diff, shown folded


def why_not_timed(record: RoundRecord) -> str:
    """Say why a round has no timing: the device cannot time, accuracy failed, or the test did not complete."""
    if record.performance_status == "skipped":
        reason = str(record.performance.get("reason") or record.performance.get("message") or "")
        return f"{NOT_MEASURED}: {reason.removeprefix('not measured: ')}" if reason else NOT_MEASURED
    if record.accuracy_status != "pass":
        return "not measured: the version did not pass accuracy"
    message = str(record.performance.get("message") or record.performance.get("reason") or "")[:200]
    return f"not measured: the performance test ended {record.performance_status}" + (f" ({message})"
                                                                                       if message else "")


def shapes_run(record: RoundRecord) -> tuple[str, str]:
    """Say which shapes the accuracy test ran and which the performance test timed (each from its own result)."""
    checked = checked_result(record.accuracy)
    if not checked.get("cases") and not checked.get("skipped"):
        accuracy = "none (the accuracy test did not run its cases)"
    else:
        coverage = coverage_of(checked)
        ran = "; ".join(shown_shapes(s) for s in coverage.ran) or "no spec shape"
        accuracy = f"{ran}, beside {coverage.edge_cases} odd-shape case(s)"
        if coverage.skipped:
            reasons = "; ".join(dict.fromkeys(str(s.get("reason", "")) for s in coverage.skipped))
            accuracy += f"; not run: {'; '.join(shown_shapes(s['shapes']) for s in coverage.skipped)} ({reasons})"
    timed = [c for c in record.performance.get("cases", []) if isinstance(c, dict) and "shapes" in c]
    if record.performance_status == "pass" and timed:
        performance = "; ".join(dict.fromkeys(shown_shapes(c["shapes"]) for c in timed))
    else:
        performance = why_not_timed(record)
    return accuracy, performance


def utilisation(record: RoundRecord) -> list[Figure]:
    """List the utilisation figures of a version: timing against the roofline, then the profiler's counters."""
    roofline = record.profile.get("roofline") or {}
    if record.performance_status != "pass" or record.speedup is None:
        missing = NOT_MEASURED if record.performance_status == "skipped" else "not measured"
        names = ["Memory bandwidth (% of the measured copy bandwidth)", "Share of the roofline bound",
                 "Parallelism (programs launched per SM)", *(name for _, name, _ in COUNTERS), SPILLS]
        return [Figure(name=n, value=missing, source="- (see the main bottleneck line)") for n in names]
    worst = roofline.get("worst") or {}
    figures = [Figure(name="Memory bandwidth (% of the measured copy bandwidth)",
                      value=f"{record.pct_of_copy:.1f}%" + (f" ({worst['gbs']:.0f} GB/s)" if "gbs" in worst else "")
                      if record.pct_of_copy is not None else "not reported",
                      source="`_performance.py`, worst case")]
    figures.append(Figure(name="Share of the roofline bound",
                          value=f"{worst['pct_of_roofline']:.1f}%" if "pct_of_roofline" in worst else "not placed",
                          source="agent/roofline.py, worst case"))
    counters: dict[str, Any] = record.profile.get("counters") or {}
    tiles, sms = roofline.get("tiles"), roofline.get("multiprocessors")
    parallel = (f"{tiles:,} programs on {sms} SMs ({tiles / sms:.1f} per SM)" if tiles and sms
                else f"{tiles:,} programs" if tiles else "not known")
    figures.append(Figure(name="Parallelism (programs launched per SM)", value=parallel,
                          source="ncu grid size" if "grid_size" in counters else "launch arithmetic of the wrapper"))
    tool = record.profile.get("tool", "profiler")
    absent = (f"not reported by {tool}" if record.profile.get("status") == "measured"
              else f"not measured: {record.profile.get('message') or 'no profiler ran'}")
    for key, name, pattern in COUNTERS:
        value = counters.get(key)
        figures.append(Figure(name=name, value=absent if value is None else pattern.format(value),
                              source=tool if value is not None else "-"))
    loads, stores = counters.get("local_loads"), counters.get("local_stores")
    spills = absent if loads is None and stores is None else (
        "none" if not (loads or stores) else f"{loads or 0:.0f} loads, {stores or 0:.0f} stores")
    figures.append(Figure(name=SPILLS, value=spills, source="-" if spills == absent else tool))
    # Counters of other profilers (msprof on Ascend) have their own names: shown as they come.
    figures += [Figure(name=key, value=f"{value:.4g}", source=tool) for key, value in sorted(counters.items())
                if key not in _SHOWN and isinstance(value, int | float)]
    return figures


def bottleneck(record: RoundRecord) -> str:
    """Name what bounds the version, with the evidence, or say it was not measured."""
    roofline = record.profile.get("roofline")
    if roofline:
        return f"**{roofline['bound']}-bound**: {roofline['why']}"
    return why_not_timed(record) if record.speedup is None else "not placed on the roofline (no profile)"


def code_change(record: RoundRecord, triton_name: str) -> CodeChange | None:
    """Pick the changed lines of `_triton.py` out of the round's unified diff (None when no file changed)."""
    parts = _files_of(record.diff)
    mine = parts.pop(triton_name, [])
    if not mine and not parts:
        return None
    before = [line for line in mine[2:] if line.startswith("-")]
    after = [line for line in mine[2:] if line.startswith("+")]
    hidden = max(0, len(before) - MAX_CODE_LINES) + max(0, len(after) - MAX_CODE_LINES)
    return CodeChange(file=triton_name, before_label=_label(mine[:1], f"v{record.base_index}"),
                      after_label=_label(mine[1:2], f"v{record.index}"), before=before[:MAX_CODE_LINES],
                      after=after[:MAX_CODE_LINES], hidden=hidden, others=list(parts),
                      others_diff="\n".join(line for lines in parts.values() for line in lines))


def _files_of(diff: str) -> dict[str, list[str]]:
    """Split a unified diff into each file's part (its ---/+++ header first), keyed by the name after the label."""
    parts: dict[str, list[str]] = {}
    lines = diff.splitlines()
    current: list[str] = []
    for number, line in enumerate(lines):
        if line.startswith("--- ") and number + 1 < len(lines) and lines[number + 1].startswith("+++ "):
            current = parts.setdefault(line[4:].split("/", 1)[-1], [])
        current.append(line)
    return parts


def _label(header: list[str], default: str) -> str:
    """Return the version label of a ---/+++ header line (`v3/relu_triton.py` gives v3)."""
    return header[0][4:].split("/")[0] if header else default


def gain_over(record: RoundRecord, base: RoundRecord | None) -> float | None:
    """Return the round's speedup change against its base version (None when either was not timed)."""
    if base is None or record.speedup is None or not base.speedup:
        return None
    return record.speedup / base.speedup - 1.0


def successes(record: RoundRecord, base: RoundRecord | None) -> list[str]:
    """Say what worked in the round: the accuracy pass, the kept change, the search's winner."""
    found = []
    checked = checked_result(record.accuracy)
    if record.accuracy_status == "pass":
        run, failed = checked.get("cases_run", 0), checked.get("cases_failed", 0)
        found.append(f"v{record.index} passed accuracy on {run - failed}/{run} cases"
                     + (f" (max abs error {checked['max_abs_err']:.2e})"
                        if isinstance(checked.get("max_abs_err"), int | float) else ""))
    gain = gain_over(record, base)
    if record.accepted and gain is not None and base is not None:
        found.append(f"`{record.config.label()}` ({record.action or record.edit_type}) is {100 * gain:+.1f}% "
                     f"over v{base.index}: the new best version")
    elif record.accepted:
        found.append(f"v{record.index} is the best version so far")
    winner = record.search.get("winner")
    if winner:
        found.append(f"the search's fastest correct configuration of {len(record.search.get('trials', []))} "
                     f"measured: `{winner}`")
    return found


def failures(record: RoundRecord, base: RoundRecord | None) -> list[str]:
    """Say what did not work in the round and why: accuracy, no gain, configurations that failed the check."""
    found = []
    if record.accuracy_status not in ("pass", "unchanged"):
        message = str(checked_result(record.accuracy).get("message") or "")[:200]
        found.append(f"{record.accuracy_status}: {record.verdict}" + (f" ({message})" if message else ""))
    gain = gain_over(record, base)
    if record.accuracy_status == "pass" and not record.accepted and base is not None:
        found.append(f"{'not timed' if gain is None else f'{100 * gain:+.1f}%'} against v{base.index}: "
                     f"{record.verdict}")
    if record.accuracy_status == "unchanged":
        found.append(record.verdict)
    bad = [t for t in record.search.get("trials", []) if isinstance(t, dict) and t.get("status") != "ok"]
    if bad:
        first = str(bad[0].get("message") or bad[0].get("status"))[:120]
        found.append(f"{len(bad)} of {len(record.search['trials'])} searched configurations did not pass the "
                     f"check (first: `{bad[0].get('config')}`: {first})")
    return found


def next_directions(
    rounds: list[RoundRecord], best_index: int | None, spec: OpSpec, *, origin: str, schedules: list[Schedule],
    row_broadcast: bool, done: set[str], patterns: list[PatternHint], repairs_left: bool,
) -> list[str]:
    """Say where the loop goes after this round, from the best version's figures (what diagnosis will read)."""
    record = rounds[-1]
    if repairs_left and record.accuracy_status not in ("pass", "unchanged", "search failed"):
        return [f"the model repairs v{record.index} next, given its failure ({record.accuracy_status})"]
    if best_index is None:
        return [f"no version has passed accuracy yet: v{record.index}'s failure is what the next version must fix"
                + ("" if origin == "llm" else " (the offline generator does not repair kernels: the job ends)")]
    best = rounds[best_index]
    directions = []
    if best.performance_status == "skipped":
        directions.append(f"time v{best.index} on an accelerator: speed, bandwidth, roofline share and hardware "
                          f"counters are {NOT_MEASURED}, so the loop ends after accuracy")
        coverage = coverage_of(checked_result(best.accuracy))
        if coverage.skipped:
            directions.append("check the spec shapes not run here on an accelerator: "
                              + "; ".join(shown_shapes(s["shapes"]) for s in coverage.skipped))
        return directions
    roofline = best.profile.get("roofline")
    if best.speedup is None or not roofline:
        return [f"v{best.index} stays the best version, but it was not timed ({why_not_timed(best)}): "
                "no figures to diagnose, so the loop ends"]
    if len([r for r in rounds if r.repair_of is None]) > spec.max_rounds:
        return [f"all {spec.max_rounds} optimization rounds are used: the job ends with v{best.index}"]
    no_gain = stalled(rounds)
    if no_gain is not None:
        return [f"{no_gain}: the job ends with v{best.index}"]
    placement = Placement.model_validate(roofline)
    if origin == "llm":
        return [f"the model diagnoses v{best.index} next: {placement.bound}-bound ({placement.why})"]
    diagnosis = diagnose_version(
        placement, best.profile.get("counters") or {}, speedup=best.speedup, target=spec.target_speedup,
        current=best.config, schedules=schedules, row_broadcast=row_broadcast, done=done, patterns=patterns,
        compile_speedup=vs_compile(rounds[0], best))
    if diagnosis.action is None:
        return [f"stop with v{best.index}: {diagnosis.stop_reason}"]
    return [f"v{best.index} is {diagnosis.bottleneck}-bound: next `{diagnosis.action.key}` "
            f"({diagnosis.action.expected_edit} edit), expected {diagnosis.predicted_gain}"]
