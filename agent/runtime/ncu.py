"""Drive Nsight Compute (ncu) and read its raw CSV report into friendly metrics."""

from __future__ import annotations

import csv
import glob
import logging
import os
import shutil

log = logging.getLogger(__name__)

# Friendly name -> Nsight Compute metric. Kept in this one table so a wrong name is a one-line fix.
NCU_METRICS: dict[str, str] = {
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_gbs": "dram__bytes.sum.per_second",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l2_hit_pct": "lts__t_sector_hit_rate.pct",
    "registers_per_thread": "launch__registers_per_thread",
    "duration_us": "gpu__time_duration.sum",
    "local_loads": "smsp__sass_inst_executed_op_local_ld.sum",
    "local_stores": "smsp__sass_inst_executed_op_local_st.sum",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "grid_size": "launch__grid_size",
    "block_size": "launch__block_size",
}

# Scale factors into the friendly unit. ncu is asked for base units, but a report made without
# `--print-units base` rescales per value ("usecond", "Gbyte/second"), so every prefix is accepted. Some ncu
# builds abbreviate ("ns", "byte/s": seen from ncu 2025.3.1 on an H100), so both spellings are.
_UNIT_SCALES: dict[str, dict[str, float]] = {
    "duration_us": {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6,
                    "ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6},
    "dram_gbs": {
        "byte/second": 1e-9, "Kbyte/second": 1e-6, "Mbyte/second": 1e-3, "Gbyte/second": 1.0, "Tbyte/second": 1e3,
        "byte/s": 1e-9, "Kbyte/s": 1e-6, "Mbyte/s": 1e-3, "Gbyte/s": 1.0, "Tbyte/s": 1e3,
    },
}
_BASE_UNITS = {"duration_us": "nsecond", "dram_gbs": "byte/second"}

NCU_FALLBACK_GLOBS: tuple[str, ...] = (
    "/usr/local/cuda/bin/ncu",
    "/usr/local/cuda-*/bin/ncu",
    "/opt/nvidia/nsight-compute/*/ncu",
)


def find_ncu() -> str | None:
    """Return the path of the Nsight Compute CLI, or None when it is not installed."""
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in NCU_FALLBACK_GLOBS:
        # Newest install first: version folders sort lexically in release order.
        for candidate in sorted(glob.glob(pattern), reverse=True):
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def ncu_command(report_csv: str, kernel_regex: str) -> list[str]:
    """Build the ncu launcher prefix that records the second launch of the matching kernel as CSV."""
    return [
        find_ncu() or "ncu",
        "--target-processes", "all",  # follow child processes too, whatever this ncu version defaults to
        "--kernel-name", f"regex:{kernel_regex}",
        # The first matching launch compiles and warms up; the harness makes the second one the real one.
        "--launch-skip", "1",
        "--launch-count", "1",
        "--metrics", ",".join(NCU_METRICS.values()),
        "--csv",
        "--page", "raw",
        "--print-units", "base",  # fixed units, so values need no per-row rescaling
        "--log-file", report_csv,
        # GPU clocks cannot be locked in the VMs we run on; ncu's default (lock to base) would fail there.
        "--clock-control", "none",
    ]


def parse_ncu_csv(text: str) -> dict[str, float]:
    """Return friendly-name -> value for the last kernel row of an `ncu --csv --page raw` report."""
    # ncu interleaves "==PROF==" / "==WARNING==" lines with the table; they are never CSV rows.
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("==")]
    rows = list(csv.reader(lines))
    header_at = next((i for i, row in enumerate(rows) if "ID" in row and "Kernel Name" in row), None)
    if header_at is None:
        raise ValueError("not an ncu --page raw CSV: no header row with 'ID' and 'Kernel Name' columns")
    header = rows[header_at]
    id_column = header.index("ID")
    units: dict[str, str] = {}
    kernels: list[list[str]] = []
    for row in rows[header_at + 1:]:
        cell = row[id_column].strip() if len(row) > id_column else ""
        if cell.isdigit():
            kernels.append(row)
        elif not cell and not kernels and not units:
            units = dict(zip(header, row, strict=False))
    if not kernels:
        raise ValueError("the ncu report has no kernel row: no launch matched the kernel filter")
    values = dict(zip(header, kernels[-1], strict=False))
    metrics: dict[str, float] = {}
    for friendly, metric in NCU_METRICS.items():
        number = parse_number(values.get(metric, ""))
        if number is None:
            continue
        scale = _unit_scale(friendly, units.get(metric, "").strip())
        if scale is None:
            log.warning("ncu metric %s has unit %r, which is not understood; value dropped", metric, units.get(metric))
            continue
        metrics[friendly] = number * scale
    return metrics


def spilled(metrics: dict[str, float]) -> bool | None:
    """Tell whether the kernel spilled registers to local memory, or None when not measured."""
    if "local_loads" not in metrics and "local_stores" not in metrics:
        return None
    return metrics.get("local_loads", 0.0) + metrics.get("local_stores", 0.0) > 0


def permission_denied(text: str) -> str:
    """Return ncu's own line refusing counter access, or an empty string."""
    for line in text.splitlines():
        # Only ncu's prefixed lines count: the kernel's own output may well mention "permission".
        if "ERR_NVGPUCTRPERM" in line or (line.lstrip().startswith("==") and "permission" in line.lower()):
            return line.strip()
    return ""


def parse_number(raw: str) -> float | None:
    """Return the number in one report cell, or None when it is empty or not a number."""
    text = raw.strip().replace(",", "")  # ncu prints thousands separators: "1,234.5"
    if not text or text.lower() in ("n/a", "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _unit_scale(friendly: str, unit: str) -> float | None:
    scales = _UNIT_SCALES.get(friendly)
    if scales is None:
        return 1.0  # percentages, counts and sizes need no conversion
    return scales.get(unit or _BASE_UNITS[friendly])
