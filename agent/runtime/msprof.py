"""Read an Ascend msprof op_summary CSV into metrics for one kernel."""

from __future__ import annotations

import csv
import io

from agent.runtime.ncu import parse_number


def parse_msprof_op_summary(text: str, kernel_name: str) -> dict[str, float]:
    """Return duration_us and any ratio columns for the last row of an msprof op_summary CSV naming the kernel."""
    rows = list(csv.DictReader(io.StringIO(text)))
    matching = [row for row in rows if kernel_name.lower() in (row.get("Op Name") or "").lower()]
    if not matching:
        names = sorted({row.get("Op Name") or "?" for row in rows})[:10]
        raise ValueError(f"the msprof op summary has no row for {kernel_name} (ops seen: {', '.join(names) or 'none'})")
    # msprof cannot skip launches, so the last matching row is the harness's second (warm) launch.
    row = matching[-1]
    metrics: dict[str, float] = {}
    duration = parse_number(row.get("Task Duration(us)") or "")
    if duration is not None:
        metrics["duration_us"] = duration
    block_dim = parse_number(row.get("Block Dim") or "")
    if block_dim is not None:
        metrics["block_dim"] = block_dim
    for column, raw in row.items():
        # Pipe utilisation columns are named like aic_mac_ratio / aiv_vec_ratio (not "Task Duration").
        if column and column.strip().lower().endswith("_ratio"):
            number = parse_number(raw or "")
            if number is not None:
                metrics[column.strip()] = number
    return metrics
