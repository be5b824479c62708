"""Hardware-counter profiling: ncu CSV parsing, the launcher, graceful absence, and the real harness on CPU."""

import os
import sys
from pathlib import Path

import pytest

from agent.runtime import ncu, profiling
from agent.runtime.msprof import parse_msprof_op_summary
from agent.runtime.ncu import NCU_METRICS, ncu_command, parse_ncu_csv, spilled
from agent.runtime.profiling import (
    CPU_MESSAGE,
    HARNESS_NAME,
    HARNESS_PATH,
    NCU_MISSING,
    ProfileResult,
    profile_kernel,
    summarize,
)
from agent.runtime.sandbox import run_file

DATA = Path(__file__).parent / "data"

ADD_ONE_TRITON = '''
import torch
import triton
import triton.language as tl

DEVICE = "cpu"


@triton.jit
def add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


def add_one(x, scale=1):
    out = torch.empty_like(x)
    add_one_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    assert torch.equal(out, x + 1), "the kernel computed a wrong result"
    with open("calls.log", "a") as log:  # lets the test count the wrapper calls
        log.write(f"{x.numel()} {x.dtype} {scale}\\n")
    return out
'''

ADD_ONE_PERFORMANCE = '''
import torch

PARAMS = {"scale": 3}
SPEC_CASES = [{"x": [100]}, {"x": [257]}]
DTYPE_CASES = [{"x": "float32"}, {"x": "float16"}]


def make_inputs(shapes, dtypes, seed, device):
    torch.manual_seed(seed)
    return [torch.randn(*shapes["x"], device=device).to(getattr(torch, dtypes["x"]))]


if __name__ == "__main__":
    raise SystemExit("not run by these tests")
'''

# A stand-in for ncu: writes a canned report to --log-file, then runs the application it wraps.
FAKE_NCU = '''#!{python}
import os, sys
args = sys.argv[1:]
with open(args[args.index("--log-file") + 1], "w") as report:
    report.write(open({report!r}).read())
os.environ["TRITON_INTERPRET"] = "1"  # no GPU here: run the wrapped harness in the interpreter
app = args[args.index("{harness}") - 1:]
os.execv(app[0], app)
'''

OP_SUMMARY = (
    "Device_id,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Block Dim,aiv_vec_ratio,aiv_mte2_ratio\n"
    "0,aclnnInplaceNormal_DistributionNormal,DistributionNormal,AI_VECTOR_CORE,100.0,9.1,40,0.05,0.9\n"
    "0,add_one_kernel,add_one_kernel,AI_VECTOR_CORE,200.0,14.75,40,0.31,0.62\n"
    "0,add_one_kernel,add_one_kernel,AI_VECTOR_CORE,300.0,4.25,40,0.33,0.58\n"
)


def op_files() -> dict[str, str]:
    return {"add_one_triton.py": ADD_ONE_TRITON, "add_one_performance.py": ADD_ONE_PERFORMANCE}


def test_parse_reads_the_last_kernel_row_of_a_recorded_report() -> None:
    metrics = parse_ncu_csv((DATA / "ncu_raw.csv").read_text())
    assert metrics["dram_pct"] == pytest.approx(78.06)
    assert metrics["dram_gbs"] == pytest.approx(2617.50211786055)  # byte/second with separators -> GB/s
    assert metrics["duration_us"] == pytest.approx(12.832)  # nsecond -> us
    assert metrics["grid_size"] == 8192
    assert metrics["registers_per_thread"] == 32
    assert metrics["local_loads"] == 16 and metrics["local_stores"] == 8
    assert "l2_hit_pct" not in metrics  # "n/a" in the last row is skipped, not taken from the first row
    assert spilled(metrics) is True


def test_parse_rescales_units_ncu_chose_itself() -> None:
    text = (
        '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes.sum.per_second"\n'
        '"","","usecond","Tbyte/second"\n'
        '"0","k","3.50","2.10"\n'
    )
    assert parse_ncu_csv(text) == {"duration_us": pytest.approx(3.5), "dram_gbs": pytest.approx(2100.0)}


def test_parse_raises_without_a_kernel_row() -> None:
    header_and_units = "\n".join((DATA / "ncu_raw.csv").read_text().splitlines()[:6])
    with pytest.raises(ValueError, match="no kernel row"):
        parse_ncu_csv(header_and_units)
    with pytest.raises(ValueError, match="no header"):
        parse_ncu_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")


def test_ncu_command_profiles_the_second_launch_of_the_kernel_with_every_metric() -> None:
    command = ncu_command("/tmp/w/report.csv", "add_one_kernel")
    joined = " ".join(command)
    assert "--launch-skip 1" in joined and "--launch-count 1" in joined
    assert "--kernel-name regex:add_one_kernel" in joined
    assert "--log-file /tmp/w/report.csv" in joined
    assert "--clock-control none" in joined and "--page raw" in joined and "--csv" in command
    listed = command[command.index("--metrics") + 1].split(",")
    assert sorted(listed) == sorted(NCU_METRICS.values())


def test_cpu_reports_unavailable_without_running_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiling, "run_file", _must_not_run)
    result = profile_kernel(op_files(), "add_one", tmp_path / "w", device="cpu", timeout_s=60)
    assert (result.tool, result.status, result.message) == ("none", "unavailable", CPU_MESSAGE)
    assert not (tmp_path / "w").exists()


def test_cuda_without_ncu_reports_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no ncu anywhere on PATH
    monkeypatch.setattr(ncu, "NCU_FALLBACK_GLOBS", ())
    monkeypatch.setattr(profiling, "run_file", _must_not_run)
    result = profile_kernel(op_files(), "add_one", tmp_path / "w", device="cuda", timeout_s=60)
    assert (result.tool, result.status, result.message) == ("ncu", "unavailable", NCU_MISSING)
    assert summarize(result) == f"ncu unavailable: {NCU_MISSING}"


@pytest.mark.bubblewrap
def test_cuda_with_ncu_reads_the_report_file_it_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_fake_ncu(tmp_path, monkeypatch, DATA / "ncu_raw.csv")
    result = profile_kernel(op_files(), "add_one", tmp_path / "w", device="cuda", timeout_s=120, case_index=1)
    assert result.status == "measured", result.message
    assert result.metrics["dram_pct"] == pytest.approx(78.06)
    assert result.metrics["spilled"] == 1.0
    assert (tmp_path / "w" / "calls.log").read_text().splitlines() == ["257 torch.float32 3"] * 2
    line = summarize(result)
    assert line.startswith("ncu: 12.8 us, DRAM 78.1% of peak, occupancy 85.2%")
    assert "32 registers/thread" in line and "spills (16 local loads, 8 local stores)" in line


@pytest.mark.bubblewrap
@pytest.mark.parametrize(
    ("report", "wanted"),
    [
        ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters",
         "not permitted"),
        ("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n", "No kernels were profiled"),
    ],
)
def test_cuda_without_counters_reports_unavailable_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str, wanted: str,
) -> None:
    canned = tmp_path / "canned.csv"
    canned.write_text(report)
    _install_fake_ncu(tmp_path, monkeypatch, canned)
    result = profile_kernel(op_files(), "add_one", tmp_path / "w", device="cuda", timeout_s=120)
    assert (result.tool, result.status) == ("ncu", "unavailable")
    assert wanted in result.message


@pytest.mark.bubblewrap
def test_harness_launches_the_wrapper_twice_on_cpu(tmp_path: Path) -> None:
    files = {**op_files(), HARNESS_NAME: HARNESS_PATH.read_text()}
    run = run_file(files, HARNESS_NAME, tmp_path / "w", device="cpu", timeout_s=120,
                   args=("--op", "add_one", "--case-index", "1", "--dtype-index", "1"))
    assert run.status == "pass", run.stderr_tail
    assert run.result == {"status": "pass", "op": "add_one", "shapes": {"x": [257]}, "dtypes": {"x": "float16"},
                          "launches": 2}
    assert (tmp_path / "w" / "calls.log").read_text().splitlines() == ["257 torch.float16 3"] * 2


@pytest.mark.bubblewrap
def test_harness_reports_a_bad_case_as_an_error(tmp_path: Path) -> None:
    files = {**op_files(), HARNESS_NAME: HARNESS_PATH.read_text()}
    run = run_file(files, HARNESS_NAME, tmp_path / "w", device="cpu", timeout_s=120,
                   args=("--op", "add_one", "--case-index", "5"))
    assert run.status == "error"
    assert "SPEC_CASES has 2 entries" in run.result["message"]


def test_msprof_op_summary_gives_the_last_launch_of_the_kernel() -> None:
    metrics = parse_msprof_op_summary(OP_SUMMARY, "add_one_kernel")
    assert metrics == {"duration_us": 4.25, "block_dim": 40.0, "aiv_vec_ratio": 0.33, "aiv_mte2_ratio": 0.58}
    with pytest.raises(ValueError, match="no row for mul_kernel"):
        parse_msprof_op_summary(OP_SUMMARY, "mul_kernel")


def test_npu_without_msprof_reports_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(profiling, "run_file", _must_not_run)
    result = profile_kernel(op_files(), "add_one", tmp_path / "w", device="npu", timeout_s=60)
    assert (result.tool, result.status) == ("msprof", "unavailable")
    assert "msprof not found" in result.message


def test_summary_of_a_measured_result_without_spill_counters() -> None:
    result = ProfileResult(tool="ncu", status="measured", seconds=1.0, message="",
                           metrics={"dram_pct": 78.06, "l2_hit_pct": 12.0, "local_loads": 0, "local_stores": 0})
    assert summarize(result) == "ncu: DRAM 78.1% of peak, L2 hit 12.0%, no spills"


def _install_fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ncu"
    canned = bin_dir / "canned_report.csv"  # beside the fake ncu: the sandbox lets a run read its launcher's folder
    canned.write_text(report.read_text())
    fake.write_text(FAKE_NCU.replace("{python}", sys.executable).replace("{report!r}", repr(str(canned)))
                    .replace("{harness}", HARNESS_NAME))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def _must_not_run(*args: object, **kwargs: object) -> None:
    raise AssertionError("nothing should have been run")


def test_parse_reads_abbreviated_units() -> None:
    text = ('"ID","Kernel Name","gpu__time_duration.sum","dram__bytes.sum.per_second"\n'
            '"","","ns","byte/s"\n'
            '"0","relu_kernel","12832","2617502117860.55"\n')
    metrics = parse_ncu_csv(text)
    assert metrics["duration_us"] == pytest.approx(12.832) and metrics["dram_gbs"] == pytest.approx(2617.50211786055)
