"""Diagnosis rules: measured figures → bottleneck → the next change, or a reason to stop.

The rules follow the seed's table: low bandwidth → block sizes and memory access;
poor parallelism → grid layout and smaller tiles; latency → pipelining; and the
optimization patterns this device and category have taught us reorder the options.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from agent.generators.base import LaunchConfig, Schedule, parse_label
from agent.roofline import Placement
from agent.targets import limit_reached

# Within this share of the roofline a version has little left to gain: stop.
NEAR_ROOFLINE_PCT = 95.0
# The row engine's schedules (reductions, softmax, norms, scans) follow their own order.
ROW_SCHEDULES = ("whole_row", "looped_row", "split_row")


class PatternHint(BaseModel):
    """What the pattern store remembers of one change on this device and op category."""

    change: str
    times_applied: int
    times_helped: int
    mean_gain: float | None
    best_speedup: float | None
    params_after: str


class Action(BaseModel):
    """A change the loop can make: search a schedule's configurations, switching schedule first if needed."""

    key: str  # stable name the pattern store files outcomes under
    schedule: Schedule
    expected_edit: Literal["parameter", "logic"]
    preferred: list[LaunchConfig] = []  # configurations that helped before: measured first


class Diagnosis(BaseModel):
    """The structured reading of a version: bottleneck, evidence, proposed change, predicted gain."""

    bottleneck: str
    evidence: dict[str, Any]
    action: Action | None  # None: stop
    change: str  # the proposed change (or why nothing more is proposed), in words
    predicted_gain: str
    stop_reason: str | None = None


def search_key(schedule: str) -> str:
    """Name a parameter search of one schedule."""
    return f"parameter search ({schedule})"


def switch_key(current: str, schedule: str) -> str:
    """Name a schedule switch (a logic edit, followed by a search of the new schedule)."""
    return f"schedule {current} -> {schedule}"


def evidence_of(placement: Placement, counters: dict[str, float]) -> dict[str, Any]:
    """Collect the figures a diagnosis rests on (the worst case, plus hardware counters)."""
    worst = placement.worst
    figures: dict[str, Any] = {
        "case": f"{worst.shapes} {'/'.join(sorted(set(worst.dtypes.values())))}",
        "triton_ms": round(worst.triton_ms, 5), "gbs": round(worst.gbs, 1),
        "pct_of_copy": round(worst.pct_of_copy, 1), "pct_of_roofline": round(worst.pct_of_roofline, 1),
        "intensity_flop_per_byte": round(worst.intensity, 3),
        "ridge_flop_per_byte": round(placement.ridge, 1) if placement.ridge else None,
        "tiles": placement.tiles, "multiprocessors": placement.multiprocessors,
    }
    return figures | {f"ncu_{k}": round(v, 2) for k, v in counters.items()}


def diagnose_version(
    placement: Placement, counters: dict[str, float], *, speedup: float, target: float | None,
    current: LaunchConfig, schedules: list[Schedule], row_broadcast: bool,
    done: set[str], patterns: list[PatternHint], compile_speedup: float | None = None,
) -> Diagnosis:
    """Name the best version's bottleneck and pick the next untried action, or stop (target met, or the limit)."""
    evidence = evidence_of(placement, counters) | {"speedup": round(speedup, 3), "target": target} | (
        {"speedup_vs_compile": round(compile_speedup, 3)} if compile_speedup is not None else {})
    bottleneck = placement.bound
    done_why = good_enough(speedup, target, placement.worst.pct_of_roofline, compile_speedup)
    if done_why is not None:
        return _stop(bottleneck, evidence, done_why)
    options = [a for a in _rule_order(bottleneck, current.schedule, schedules, row_broadcast) if a[0].key not in done]
    if bottleneck == "latency/launch":
        options = [a for a in options if a[0].expected_edit == "parameter"]
    if not options:
        return _stop(bottleneck, evidence, "every schedule and parameter search the offline generator knows "
                     "was tried for this bottleneck")
    merged = merge_patterns(patterns)
    options = _by_patterns(options, merged)
    action, why, expected = options[0]
    hint = merged.get(action.key)
    hint = hint if hint is not None and hint.times_helped else None
    if hint is not None:
        known = parse_label(hint.params_after)
        action.preferred = [known] if known is not None and known.schedule == action.schedule else []
        expected += (f"; on this device and category it helped {hint.times_helped} of {hint.times_applied} times"
                     + (f", mean {100 * hint.mean_gain:+.1f}%" if hint.mean_gain is not None else "")
                     + (f", reaching x{hint.best_speedup:.2f}" if hint.best_speedup else ""))
    pct = placement.worst.pct_of_roofline
    gap = f"at most {100 * (100.0 / pct - 1.0):+.0f}% (the gap to the roofline)" if pct > 0 else "gap unknown"
    predicted = f"{expected}; {gap}"
    return Diagnosis(bottleneck=bottleneck, evidence=evidence, action=action, change=why, predicted_gain=predicted)


def good_enough(speedup: float, target: float | None, pct_of_roofline: float,
                compile_speedup: float | None) -> str | None:
    """Say why the best version needs no further round (target met, the limit, near the roofline), or None."""
    if target is not None and speedup >= target:
        return f"target met: x{speedup:.3f} ≥ x{target}"
    at_limit = limit_reached(pct_of_roofline, compile_speedup) if target is None else None
    if at_limit is not None:
        return at_limit
    if pct_of_roofline >= NEAR_ROOFLINE_PCT:
        return (f"within {100 - NEAR_ROOFLINE_PCT:.0f}% of the roofline ({pct_of_roofline:.1f}%): "
                "no schedule can gain much more")
    return None


def _stop(bottleneck: str, evidence: dict[str, Any], reason: str) -> Diagnosis:
    return Diagnosis(bottleneck=bottleneck, evidence=evidence, action=None, change="none: " + reason,
                     predicted_gain="none", stop_reason=reason)


def _rule_order(
    bottleneck: str, current: Schedule, schedules: list[Schedule], row_broadcast: bool,
) -> list[tuple[Action, str, str]]:
    search = (Action(key=search_key(current), schedule=current, expected_edit="parameter"),
              _SEARCH_WHY.get(bottleneck, _SEARCH_WHY["memory"]), "+5-30% (block size / warps)")
    # The generator put the looped row first: it reads the row once anyway, or the row is too long to hold.
    looped_first = current == "looped_row" and schedules[:1] == ["looped_row"]
    switches: dict[str, tuple[Action, str, str]] = {
        s: (Action(key=switch_key(current, s), schedule=s, expected_edit="logic"),
            *(_WHOLE_AFTER_LOOPED if s == "whole_row" and looped_first else (_SWITCH_WHY[s], _SWITCH_GAIN[s])))
        for s in schedules if s != current
    }
    if "rows" in switches and not row_broadcast:
        del switches["rows"]  # a 2-D tile only pays where an input is shared across rows
    order: list[str]
    if current in ROW_SCHEDULES:
        others = [s for s in schedules if s != current]
        # A memory-bound looped row re-reads its input once per reduction level: one pass in registers first,
        # unless the generator itself put the looped row first.
        rereads = current == "looped_row" and not looped_first
        if bottleneck == "under-utilized" and "split_row" in others:
            order = ["split_row", "search", *others]  # too few rows for the SMs: spread each row first
        elif bottleneck == "memory" and rereads:
            order = ["whole_row", "search", *others]
        else:
            order = ["search", *others]
    elif bottleneck == "compute":
        order = ["rows", "search", "persistent", "flat"]
    elif bottleneck == "under-utilized":
        order = ["search", "flat", "rows", "persistent"]
    else:
        order = ["search", "rows", "persistent", "flat"]
    order = list(dict.fromkeys(order))
    return [search if name == "search" else switches[name] for name in order if name == "search" or name in switches]


def merge_patterns(patterns: list[PatternHint]) -> dict[str, PatternHint]:
    """Fold the rows of one change (filed under several bottlenecks) into one: counts add, the best row leads."""
    merged: dict[str, PatternHint] = {}
    for p in sorted(patterns, key=lambda p: (p.times_helped == 0, -(p.best_speedup or 0.0))):
        first = merged.get(p.change)
        if first is None:
            merged[p.change] = p.model_copy()
        else:
            first.times_applied += p.times_applied
            first.times_helped += p.times_helped
    return merged


def _by_patterns(
    options: list[tuple[Action, str, str]], merged: dict[str, PatternHint],
) -> list[tuple[Action, str, str]]:
    """Put changes that helped before first (best speedup reached first); keep the rule order otherwise."""
    helped = {change: p for change, p in merged.items() if p.times_helped > 0}
    failed = {change for change, p in merged.items() if p.times_applied >= 2 and p.times_helped == 0}

    def rank(item: tuple[int, tuple[Action, str, str]]) -> tuple[int, float, int]:
        index, (action, _, _) = item
        if action.key in helped:
            return 0, -(helped[action.key].best_speedup or 0.0), index
        return (2 if action.key in failed else 1), 0.0, index

    return [option for _, option in sorted(enumerate(options), key=rank)]


_SEARCH_WHY = {
    "memory": "Memory-bound below the copy bandwidth: block size and warp count set how many bytes each SM "
              "keeps in flight and how wide each access is. Measure the pruned configuration space of the "
              "current schedule and keep the fastest correct one (parameter edit).",
    "under-utilized": "Too few programs or warps keep the SMs busy: search smaller tiles and other warp counts "
                      "(parameter edit).",
    "latency/launch": "Launch-bound: fewer, larger tiles cut per-program work; search the configuration space "
                      "(parameter edit). Host launch overhead itself is beyond a kernel edit.",
    "compute": "Instruction-bound: more warps hide latency of the math; search the configuration space "
               "(parameter edit).",
}
_SWITCH_WHY = {
    "rows": "Row-broadcast inputs are re-addressed with // and % for every element and re-read per element. "
            "A 2-D [BLOCK_M, BLOCK_N] tile loads them once per tile as a contiguous vector kept in cache "
            "(evict_last) and drops the per-element index math (logic edit: new schedule, all four files "
            "regenerated, then its configurations searched).",
    "persistent": "Program start-up and tail effects: a fixed grid of a few programs per SM looping over tiles "
                  "(grid-stride, NUM_STAGES pipelining) amortizes them (logic edit, then a search).",
    "flat": "Back to the 1-D contiguous schedule, the simplest access pattern (logic edit, then a search).",
    "whole_row": "The looped row reads its input from memory once per reduction level and once more to write "
                 "(two or three passes for softmax and norms); holding each row in registers reads it once "
                 "(logic edit: all four files regenerated, then its configurations searched).",
    "looped_row": "A row held whole in registers spills or leaves too few programs per SM when rows are long: "
                  "loop over the row in chunks instead (logic edit, then a search).",
    "split_row": "Fewer rows than SMs leave most of the GPU idle: cut each row into spans taken by separate "
                 "programs, the last of which folds their partials (logic edit, then a search).",
}
# The row in registers after a looped row the generator chose: "fewer passes" cannot hold there (H200, cross-entropy
# over 32000 fp16 columns: whole_row -36%), so the switch stays last with the prediction it can honestly carry.
_WHOLE_AFTER_LOOPED = ("The generator starts this row looped because the looped row reads it once, or because a row "
                       "this long spills when held whole; holding it in registers is the one schedule left (logic "
                       "edit: all four files regenerated, then its configurations searched).",
                       "+0-10% (no pass to save; a long row held whole may spill)")
_SWITCH_GAIN = {"rows": "+5-20% (grid layout, data reuse)", "persistent": "+0-10% (scheduling overhead)",
                "flat": "+0-10%", "whole_row": "+20-60% (fewer passes over the input)",
                "looped_row": "+0-30% (no spills on long rows)",
                "split_row": "up to the SMs left idle (few long rows)"}
