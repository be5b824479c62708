"""Read hardware counters for one launch of a generated kernel (ncu on CUDA, msprof on Ascend)."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from pydantic import BaseModel

from agent.runtime.msprof import parse_msprof_op_summary
from agent.runtime.ncu import find_ncu, ncu_command, parse_ncu_csv, permission_denied, spilled
from agent.runtime.sandbox import SandboxResult, read_output, run_file

log = logging.getLogger(__name__)

HARNESS_NAME = "profile_case.py"
HARNESS_PATH = Path(__file__).parent / "harness" / HARNESS_NAME
NCU_REPORT_NAME = "ncu_report.csv"
MSPROF_OUTPUT_NAME = "msprof_output"
REPORT_MAX_BYTES = 64 * 2**20  # a profiler report larger than this is not read

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


def profile_kernel(
    files: dict[str, str],
    op: str,
    workdir: Path,
    *,
    device: str,
    timeout_s: float,
    case_index: int = 0,
    dtype_index: int = 0,
    trusted: bool = False,
) -> ProfileResult:
    """Profile the second launch of `<op>_kernel` for one case with the device's hardware profiler."""
    if device in ("cuda", "npu"):
        profile = _profile_cuda if device == "cuda" else _profile_npu
        return profile(files, op, workdir, timeout_s=timeout_s, case_index=case_index, dtype_index=dtype_index,
                       trusted=trusted)
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
    trusted: bool,
) -> ProfileResult:
    if find_ncu() is None:
        return ProfileResult(tool="ncu", status="unavailable", metrics={}, message=NCU_MISSING, seconds=0.0)
    started = time.monotonic()
    report = workdir.resolve() / NCU_REPORT_NAME
    kernel_regex = f"{op}_kernel"
    run = run_file(
        _with_harness(files), HARNESS_NAME, workdir, device="cuda", timeout_s=timeout_s,
        args=_harness_args(op, case_index, dtype_index), launcher=tuple(ncu_command(str(report), kernel_regex)),
        trusted=trusted,
    )
    seconds = time.monotonic() - started
    if run.status == "timeout":
        return _failed("ncu", f"ncu run timed out after {timeout_s:.0f} s", seconds)
    # ncu writes its own messages into the log file; the profiled program's output stays on stdout/stderr.
    report_text = read_output(report, REPORT_MAX_BYTES)  # the profiled code could have put a link there
    denied = permission_denied(report_text + "\n" + run.stderr_tail + "\n" + run.stdout_tail)
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
    trusted: bool,
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
        args=_harness_args(op, case_index, dtype_index), launcher=(msprof, f"--output={output}"), trusted=trusted,
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
        metrics = parse_msprof_op_summary(read_output(summaries[-1], REPORT_MAX_BYTES), f"{op}_kernel")
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
