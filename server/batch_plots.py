"""The batch report's pictures as PNG: the fast_p curve, the speedup distribution, and the roofline scatter."""

from __future__ import annotations

import io
import math
from typing import Any

PLOTS = ("fast_p", "speedups", "roofline")


def render(name: str, report: dict[str, Any]) -> bytes:
    """Draw one of the report's plots and return the PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")  # no display; safe in a server thread
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.0), dpi=100)
    axes = figure.add_subplot()
    {"fast_p": _fast_p, "speedups": _speedups, "roofline": _roofline}[name](axes, report)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _empty(axes: Any, why: str) -> None:
    axes.text(0.5, 0.5, why, ha="center", va="center", transform=axes.transAxes, wrap=True)
    axes.set_axis_off()


def _measured(report: dict[str, Any], key: str) -> list[float]:
    return [t[key] for t in report["tasks"] if t["status"] == "verified" and t.get(key)]


def _fast_p(axes: Any, report: dict[str, Any]) -> None:
    """Share of all tasks verified and at least p times faster, for p from 0 up, vs eager and torch.compile."""
    total = max(1, len(report["tasks"]))
    eager, compiled = _measured(report, "speedup_vs_eager"), _measured(report, "speedup_vs_compile")
    if not eager:
        _empty(axes, "no task was measured on an accelerator: fast_p needs timings")
        return
    top = max(eager + compiled + [2.0]) * 1.05
    ps = [top * i / 200 for i in range(201)]
    for values, label in ((eager, "vs eager"), (compiled, "vs torch.compile")):
        if values:
            axes.plot(ps, [sum(v >= p for v in values) / total for p in ps], label=label)
    axes.set(xlabel="p (speedup threshold)", ylabel="fast_p (share of all tasks)", ylim=(0, 1.02),
             title=f"fast_p over {len(report['tasks'])} tasks")
    axes.axvline(1.0, color="grey", linestyle="--", linewidth=0.8)
    axes.legend()


def _speedups(axes: Any, report: dict[str, Any]) -> None:
    """Each verified task's speedup vs eager and vs torch.compile, sorted (a log scale, 1x marked)."""
    rows = sorted(((t["speedup_vs_eager"], t.get("speedup_vs_compile"), t["op"] or t["title"])
                   for t in report["tasks"] if t["status"] == "verified" and t.get("speedup_vs_eager")),
                  key=lambda row: row[0])  # ties would compare a None torch.compile figure
    if not rows:
        _empty(axes, "no task was measured on an accelerator")
        return
    xs = range(len(rows))
    axes.scatter(xs, [r[0] for r in rows], label="vs eager")
    axes.scatter([x for x, r in zip(xs, rows, strict=True) if r[1]], [r[1] for r in rows if r[1]], marker="x",
                 label="vs torch.compile")
    axes.set_yscale("log")
    axes.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
    axes.set(xlabel="task (sorted by speedup vs eager)", ylabel="speedup", title="speedup per verified task")
    axes.legend()


def _roofline(axes: Any, report: dict[str, Any]) -> None:
    """Every task's best version on the roofline of the machine it ran on."""
    points = [(p["intensity"], p["tflops"]) for t in report["tasks"] for p in t.get("points", [])]
    roof = next((t for t in report["tasks"] if t.get("peak_gbs") and t.get("peak_tflops")), None)
    if not points or roof is None:
        _empty(axes, "no task was profiled on an accelerator")
        return
    gbs, tflops = roof["peak_gbs"], max([roof["peak_tflops"]] + [p.get("peak_tflops") or 0 for t in report["tasks"]
                                                                  for p in t.get("points", [])])
    low = min(x for x, _ in points) / 4
    high = max(max(x for x, _ in points) * 4, 2 * tflops * 1000 / gbs)
    xs = [low * (high / low) ** (i / 100) for i in range(101)]
    axes.plot(xs, [min(tflops, x * gbs / 1000) for x in xs], color="black", linewidth=1, label=roof["device"] or "roof")
    axes.scatter([x for x, _ in points], [y for _, y in points], label="best versions' cases")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set(xlabel="arithmetic intensity (FLOP/byte)", ylabel="TFLOP/s", title="roofline of the batch",
             ylim=(min(y for _, y in points) / 4, tflops * 2 if math.isfinite(tflops) else None))
    axes.legend()
