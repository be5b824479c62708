"""The loop's target: the user's speedup over eager when given, else the hardware limit and torch.compile."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent.roofline import Placement

if TYPE_CHECKING:  # agent.state imports the diagnosis, which imports this module
    from agent.state import RoundRecord

# Without a stated target the loop goes on while the best version is below this share of its roofline bound,
# or slower than torch.compile, and rounds remain.
LIMIT_PCT = 90.0
# A round that gains less than this over the best before it is within timing noise (do_bench medians move ~1-2%).
NOISE = 0.02
# This many rounds in a row within noise end the loop early.
STALLED_ROUNDS = 2


def target_text(target: float | None) -> str:
    """Say what the loop aims for, in the words the documents use."""
    if target is not None:
        return f"≥ {target:g}× over eager PyTorch"
    return f"the limit: ≥ {LIMIT_PCT:.0f}% of the roofline bound and at least as fast as torch.compile"


def vs_compile(first: RoundRecord, best: RoundRecord) -> float | None:
    """Return the best version's geomean speedup over torch.compile (timed once, in the first round)."""
    compiled = {_key(c): c["compile_ms"] for c in first.performance.get("cases", []) if c.get("compile_ms")}
    ratios = [compiled[_key(c)] / c["triton_ms"] for c in best.performance.get("cases", [])
              if _key(c) in compiled and c.get("triton_ms")]
    if not ratios:
        return None
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def pct_of_roofline(record: RoundRecord) -> float | None:
    """Return the worst case's % of its roofline bound for a profiled version (None when not measured)."""
    roofline = record.profile.get("roofline")
    return Placement.model_validate(roofline).worst.pct_of_roofline if roofline else None


def standing(first: RoundRecord, record: RoundRecord) -> dict[str, float | None]:
    """Return a version's figures side by side: speedup vs eager, vs torch.compile, % of the roofline bound."""
    measured = record.speedup is not None
    return {"speedup_vs_eager": record.speedup,
            "speedup_vs_compile": vs_compile(first, record) if measured else None,
            "pct_of_roofline": pct_of_roofline(record) if measured else None}


def limit_reached(pct_of_roofline: float, compile_speedup: float | None) -> str | None:
    """Say why the limit is reached (near the roofline and not behind torch.compile), or None."""
    if pct_of_roofline < LIMIT_PCT or (compile_speedup is not None and compile_speedup < 1.0):
        return None
    versus = "" if compile_speedup is None else f", x{compile_speedup:.2f} torch.compile"
    return f"at the limit: {pct_of_roofline:.1f}% of the roofline bound (≥ {LIMIT_PCT:.0f}%){versus}"


def stalled(rounds: Sequence[RoundRecord]) -> str | None:
    """Say why the loop has stalled (the last rounds each gained less than noise over the best before), or None."""
    measured = [r for r in rounds if r.repair_of is None]
    if len(measured) <= STALLED_ROUNDS:
        return None
    best = 0.0
    gains: list[float | None] = []  # None: the round measured no new version (nothing to apply, or it failed)
    for record in measured:
        if best > 0.0:
            gains.append(None if record.speedup is None else record.speedup / best - 1.0)
        best = max(best, record.speedup or 0.0)
    recent = gains[-STALLED_ROUNDS:]
    if len(recent) < STALLED_ROUNDS or any(g is not None and g >= NOISE for g in recent):
        return None
    shown = ", ".join("no new version" if g is None else f"{100 * g:+.1f}%" for g in recent)
    return f"the last {STALLED_ROUNDS} rounds gained less than {100 * NOISE:.0f}% (timing noise): {shown}"


def _key(case: dict[str, Any]) -> str:
    return repr((case.get("shapes"), case.get("dtypes")))
