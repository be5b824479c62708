"""A job's next run is already started, torch imported; it runs exactly as a cold one, and dies with the job."""

import time
from pathlib import Path

import pytest

from agent.runtime.isolation import SandboxPolicy, current_policy
from agent.runtime.sandbox import run_file, stop_spares
from tests.processes import new_marker, wait_gone

# Says whether torch was imported before the file ran (the spare's import), and where the run's paths point.
REPORTS = '''
import json, os, sys
warm = "torch" in sys.modules
import torch
with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
    json.dump({"status": "pass", "warm": warm, "cwd": os.getcwd(), "args": sys.argv[1:],
               "cache": os.environ["TRITON_CACHE_DIR"], "home": os.environ["HOME"],
               "torch": torch.__version__, "name": __name__}, f)
'''
HANGS = '''
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "MARKER"])
time.sleep(600)
'''


@pytest.fixture
def warm_everywhere() -> object:
    token = current_policy.set(SandboxPolicy(warm_start="on"))  # on the CPU too (auto: accelerators only)
    yield
    current_policy.reset(token)


@pytest.fixture(params=["bubblewrap", "no isolation"])
def warm_both_ways(request: pytest.FixtureRequest) -> object:
    unisolated = {"bwrap": "no-such-bwrap", "allow_unisolated": True} if request.param == "no isolation" else {}
    token = current_policy.set(SandboxPolicy(warm_start="on", **unisolated))
    yield request.param
    current_policy.reset(token)


def _run(workdir: Path, source: str = REPORTS, **options: object) -> dict:
    result = run_file({"probe.py": source}, "probe.py", workdir, device="cpu", timeout_s=60, **options)  # type: ignore[arg-type]
    return {"status": result.status, **result.result}


def test_the_second_run_of_a_job_is_warm_and_sees_its_own_folder(tmp_path: Path, warm_both_ways: object) -> None:
    job = tmp_path / "job-1"
    first = _run(job / "round-0-accuracy", trusted=True)
    second = _run(job / "round-0-performance", args=("--no-compile",), trusted=True)
    stop_spares(job)
    assert first["status"] == second["status"] == "pass"
    assert not first["warm"] and second["warm"]
    folder = (job / "round-0-performance").resolve()
    if warm_both_ways == "no isolation":  # the spare's folder was renamed under it: its paths were moved with it
        assert Path(second["cwd"]).resolve() == folder
    # (in bubblewrap the folder stays mounted where the spare started: the run sees it there, and only it)
    assert second["cache"].startswith(second["cwd"]) and second["home"].startswith(second["cwd"])
    assert (folder / "result.json").is_file()
    assert second["args"] == ["--json", "result.json", "--no-compile"] and second["name"] == "__main__"
    assert not list(job.glob(".spare-*"))


def test_trust_levels_and_jobs_do_not_share_spares(tmp_path: Path, warm_everywhere: object) -> None:
    _run(tmp_path / "job-1" / "round-0-accuracy", trusted=True)
    assert not _run(tmp_path / "job-2" / "round-0-accuracy", trusted=True)["warm"]
    assert not _run(tmp_path / "job-1" / "round-1-accuracy", trusted=False)["warm"]
    assert _run(tmp_path / "job-1" / "round-1-performance", trusted=True)["warm"]
    for job in ("job-1", "job-2"):
        stop_spares(tmp_path / job)


def test_a_warm_run_that_hangs_is_killed_at_its_timeout(tmp_path: Path, warm_everywhere: object) -> None:
    job, marker = tmp_path / "job-3", new_marker()
    _run(job / "round-0-accuracy", trusted=True)
    started = time.monotonic()
    result = run_file({"hang.py": HANGS.replace("MARKER", marker)}, "hang.py", job / "round-0-performance",
                      device="cpu", timeout_s=3, trusted=True)
    assert result.status == "timeout" and time.monotonic() - started < 30
    assert not wait_gone(marker)
    stop_spares(job)


def test_a_jobs_end_stops_its_waiting_spare(tmp_path: Path, warm_everywhere: object) -> None:
    job = tmp_path / "job-4"
    _run(job / "round-0-accuracy", trusted=True)
    spares = list(job.glob(".spare-*"))
    assert len(spares) == 1
    assert stop_spares(job) == 1 and stop_spares(job) == 0


def test_off_and_the_cpu_by_default_start_no_spare(tmp_path: Path) -> None:
    job = tmp_path / "job-5"
    _run(job / "round-0-accuracy", trusted=True)  # the environment's policy: auto, and this is the CPU
    assert not list(job.glob(".spare-*"))
    token = current_policy.set(SandboxPolicy(warm_start="off"))
    try:
        assert not _run(job / "round-0-performance", trusted=True)["warm"]
    finally:
        current_policy.reset(token)
    assert not list(job.glob(".spare-*"))
