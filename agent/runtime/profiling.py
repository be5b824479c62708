"""Read hardware counters for one launch of a generated kernel (ncu on CUDA, msprof on Ascend)."""

from __future__ import annotations

import csv
import glob
import io
import logging
import os
import shutil
import time
from pathlib import Path

from pydantic import BaseModel

from agent.runtime.sandbox import SandboxResult, run_file

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
# `--print-units base` rescales per value ("usecond", "Gbyte/second"), so every prefix is accepted.
_UNIT_SCALES: dict[str, dict[str, float]] = {
    "duration_us": {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6},
    "dram_gbs": {
        "byte/second": 1e-9, "Kbyte/second": 1e-6, "Mbyte/second": 1e-3, "Gbyte/second": 1.0, "Tbyte/second": 1e3,
    },
}
_BASE_UNITS = {"duration_us": "nsecond", "dram_gbs": "byte/second"}

HARNESS_NAME = "profile_case.py"
HARNESS_PATH = Path(__file__).parent / "harness" / HARNESS_NAME
NCU_REPORT_NAME = "ncu_report.csv"
NCU_FALLBACK_GLOBS: tuple[str, ...] = (
    "/usr/local/cuda/bin/ncu",
    "/usr/local/cuda-*/bin/ncu",
    "/opt/nvidia/nsight-compute/*/ncu",
)
MSPROF_OUTPUT_NAME = "msprof_output"

NCU_MISSING = "ncu not found on PATH: hardware counters skipped"
MSPROF_MISSING = "msprof not found on PATH (is the CANN toolkit's set_env.sh sourced?): hardware counters skipped"
CPU_MESSAGE = "no accelerator: hardware counters are not available in the Triton interpreter"


class ProfileResult(BaseModel):
    """Hardware counters of one profiled launch, or why there are none."""

    tool: str  # "ncu" | "msprof" | "none"
    status: str  # "measured" | "unavailable" | "failed"
    metrics: dict[str, float]
    message: str
    seconds: float


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
        number = _number(values.get(metric, ""))
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
    duration = _number(row.get("Task Duration(us)") or "")
    if duration is not None:
        metrics["duration_us"] = duration
    block_dim = _number(row.get("Block Dim") or "")
    if block_dim is not None:
        metrics["block_dim"] = block_dim
    for column, raw in row.items():
        # Pipe utilisation columns are named like aic_mac_ratio / aiv_vec_ratio (not "Task Duration").
        if column and column.strip().lower().endswith("_ratio"):
            number = _number(raw or "")
            if number is not None:
                metrics[column.strip()] = number
    return metrics


def profile_kernel(
    files: dict[str, str],
    op: str,
    workdir: Path,
    *,
    device: str,
    timeout_s: float,
    case_index: int = 0,
    dtype_index: int = 0,
) -> ProfileResult:
    """Profile the second launch of `<op>_kernel` for one case with the device's hardware profiler."""
    if device == "cuda":
        return _profile_cuda(files, op, workdir, timeout_s=timeout_s, case_index=case_index, dtype_index=dtype_index)
    if device == "npu":
        return _profile_npu(files, op, workdir, timeout_s=timeout_s, case_index=case_index, dtype_index=dtype_index)
    if device == "cpu":
        return ProfileResult(tool="none", status="unavailable", metrics={}, message=CPU_MESSAGE, seconds=0.0)
    return ProfileResult(tool="none", status="unavailable", metrics={},
                         message=f"no hardware profiler is known for device {device!r}", seconds=0.0)


def summarize(result: ProfileResult) -> str:
    """Describe a profile result in one line for logs."""
    if result.status != "measured":
        tool = "profiling" if result.tool == "none" else result.tool
        return f"{tool} {result.status}: {result.message}"
    m = result.metrics
    parts: list[str] = []
    if "duration_us" in m:
        parts.append(f"{m['duration_us']:.1f} us")
    if "dram_pct" in m:
        parts.append(f"DRAM {m['dram_pct']:.1f}% of peak")
    if "occupancy_pct" in m:
        parts.append(f"occupancy {m['occupancy_pct']:.1f}%")
    if "l2_hit_pct" in m:
        parts.append(f"L2 hit {m['l2_hit_pct']:.1f}%")
    if "registers_per_thread" in m:
        parts.append(f"{m['registers_per_thread']:.0f} registers/thread")
    spill = spilled(m)
    if spill is not None:
        parts.append(
            f"spills ({m.get('local_loads', 0.0):.0f} local loads, {m.get('local_stores', 0.0):.0f} local stores)"
            if spill else "no spills"
        )
    shown = {"duration_us", "dram_pct", "dram_gbs", "occupancy_pct", "l2_hit_pct", "registers_per_thread",
             "local_loads", "local_stores", "spilled", "sm_throughput_pct", "grid_size", "block_size"}
    parts.extend(f"{name} {value:.2f}" for name, value in sorted(m.items()) if name not in shown)
    return f"{result.tool}: {', '.join(parts) or 'no metrics'}"


def _profile_cuda(
    files: dict[str, str], op: str, workdir: Path, *, timeout_s: float, case_index: int, dtype_index: int,
) -> ProfileResult:
    if find_ncu() is None:
        return ProfileResult(tool="ncu", status="unavailable", metrics={}, message=NCU_MISSING, seconds=0.0)
    started = time.monotonic()
    report = workdir.resolve() / NCU_REPORT_NAME
    kernel_regex = f"{op}_kernel"
    run = run_file(
        _with_harness(files), HARNESS_NAME, workdir, device="cuda", timeout_s=timeout_s,
        args=_harness_args(op, case_index, dtype_index), launcher=tuple(ncu_command(str(report), kernel_regex)),
    )
    seconds = time.monotonic() - started
    if run.status == "timeout":
        return _failed("ncu", f"ncu run timed out after {timeout_s:.0f} s", seconds)
    # ncu writes its own messages into the log file; the profiled program's output stays on stdout/stderr.
    report_text = report.read_text(errors="replace") if report.exists() else ""
    denied = _permission_denied(report_text + "\n" + run.stderr_tail + "\n" + run.stdout_tail)
    if denied:
        return ProfileResult(tool="ncu", status="unavailable", metrics={}, seconds=seconds,
                             message=f"GPU performance counters are not permitted for this user: {denied}")
    if run.status != "pass":
        return _failed("ncu", f"the profiled run ended {run.status}: {_run_message(run)}", seconds)
    if not report_text:
        return _failed("ncu", f"ncu wrote no report file {NCU_REPORT_NAME}", seconds)
    try:
        metrics = parse_ncu_csv(report_text)
    except ValueError as exc:
        notes = ("==ERROR==", "==WARNING==")
        errors = "; ".join(line.strip() for line in report_text.splitlines() if line.lstrip().startswith(notes))
        reason = f"{exc} (regex {kernel_regex})" + (f"; {errors}" if errors else "")
        return ProfileResult(tool="ncu", status="unavailable", metrics={}, message=reason, seconds=seconds)
    spill = spilled(metrics)
    if spill is not None:
        metrics["spilled"] = float(spill)
    result = ProfileResult(tool="ncu", status="measured", metrics=metrics, message="", seconds=seconds)
    log.info("%s case %d/%d: %s", op, case_index, dtype_index, summarize(result))
    return result


def _profile_npu(
    files: dict[str, str], op: str, workdir: Path, *, timeout_s: float, case_index: int, dtype_index: int,
) -> ProfileResult:
    # UNTESTED ON HARDWARE: written from the CANN msprof documentation ("msprof [options] <app>", the
    # recommended form; results under <output>/PROF_*/mindstudio_profiler_output/op_summary_*.csv).
    msprof = shutil.which("msprof")
    if msprof is None:
        return ProfileResult(tool="msprof", status="unavailable", metrics={}, message=MSPROF_MISSING, seconds=0.0)
    started = time.monotonic()
    output = workdir.resolve() / MSPROF_OUTPUT_NAME
    run = run_file(
        _with_harness(files), HARNESS_NAME, workdir, device="npu", timeout_s=timeout_s,
        args=_harness_args(op, case_index, dtype_index), launcher=(msprof, f"--output={output}"),
    )
    seconds = time.monotonic() - started
    if run.status == "timeout":
        return _failed("msprof", f"msprof run timed out after {timeout_s:.0f} s", seconds)
    if run.status != "pass":
        return _failed("msprof", f"the profiled run ended {run.status}: {_run_message(run)}", seconds)
    summaries = sorted(output.rglob("op_summary_*.csv"), key=lambda path: path.stat().st_mtime)
    if not summaries:
        return _failed("msprof", f"msprof wrote no op_summary_*.csv under {MSPROF_OUTPUT_NAME}", seconds)
    try:
        metrics = parse_msprof_op_summary(summaries[-1].read_text(errors="replace"), f"{op}_kernel")
    except ValueError as exc:
        return ProfileResult(tool="msprof", status="unavailable", metrics={}, message=str(exc), seconds=seconds)
    result = ProfileResult(tool="msprof", status="measured", metrics=metrics, message="", seconds=seconds)
    log.info("%s case %d/%d: %s", op, case_index, dtype_index, summarize(result))
    return result


def _with_harness(files: dict[str, str]) -> dict[str, str]:
    return {**files, HARNESS_NAME: HARNESS_PATH.read_text()}


def _harness_args(op: str, case_index: int, dtype_index: int) -> tuple[str, ...]:
    return ("--op", op, "--case-index", str(case_index), "--dtype-index", str(dtype_index))


def _failed(tool: str, message: str, seconds: float) -> ProfileResult:
    log.warning("%s profiling failed: %s", tool, message)
    return ProfileResult(tool=tool, status="failed", metrics={}, message=message, seconds=seconds)


def _run_message(run: SandboxResult) -> str:
    return str(run.result.get("message") or "no message")


def _permission_denied(text: str) -> str:
    """Return ncu's own line refusing counter access, or an empty string."""
    for line in text.splitlines():
        # Only ncu's prefixed lines count: the kernel's own output may well mention "permission".
        if "ERR_NVGPUCTRPERM" in line or (line.lstrip().startswith("==") and "permission" in line.lower()):
            return line.strip()
    return ""


def _number(raw: str) -> float | None:
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
