"""Each door owns its jobs: a server resumes only its own, a killed command line's job is failed by the next command
line, and a cancel ends a job that no live worker runs at once (issue 49)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine

from agent.state import JobRequest
from kernelgen.settings import Settings
from storage import crud
from storage.db import make_engine
from storage.runners import server_runner
from tests.databases import database_url
from tests.server.live import RELU, SLOW, serve

ROOT = Path(__file__).resolve().parents[2]


def _dead_cli() -> str:
    """Return the runner id of a command line on this machine whose process has ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return f"cli:{socket.gethostname()}:{child.pid}"


def _job(engine: Engine, status: str, runner: str, tmp_path: Path) -> int:
    request = JobRequest(spec_text=RELU, device="cpu", out_dir=str(tmp_path / f"out-{runner.replace(':', '_')}"))
    return crud.create_job(engine, RELU, str(request.out_dir), status=status, runner=runner,
                           options_json=request.model_dump_json(exclude={"spec_text"}))


def _settings(tmp_path: Path, url: str) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=url, work_dir=tmp_path / "work", artifact_root=tmp_path / "jobs",
        concurrency=1, llm="offline",
    )


def _wait(engine: Engine, job_id: int, statuses: tuple[str, ...], timeout: float = 180) -> str:
    deadline = time.monotonic() + timeout
    while (job := crud.get_job(engine, job_id)) is not None and job.status not in statuses:
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job is not None
    return job.status


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_servers_recovery_resumes_its_own_jobs_only(tmp_path: Path, backend: str) -> None:
    with database_url(backend, tmp_path) as url:
        engine = make_engine(url)
        others = {
            "killed cli": _job(engine, "running", _dead_cli(), tmp_path),
            "other server running": _job(engine, "running", "server:elsewhere", tmp_path),
            "other server queued": _job(engine, "queued", "server:elsewhere", tmp_path),
        }
        settings = _settings(tmp_path, url)
        own = _job(engine, "running", server_runner("", settings.artifact_root), tmp_path)  # killed mid-job
        with serve(settings):
            assert _wait(engine, own, ("verified", "failed")) == "verified"
            time.sleep(1.0)  # a job of another runner taken by mistake would be running by now
            for name, job_id in others.items():
                job = crud.get_job(engine, job_id)
                assert job is not None and job.status in ("running", "queued"), name
                assert crud.list_events(engine, job_id) == [], (name, crud.list_events(engine, job_id))
        assert "restart" in [e.stage for e in crud.list_events(engine, own)]
        engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_cancel_ends_a_job_no_live_worker_runs_at_once(tmp_path: Path, backend: str) -> None:
    with database_url(backend, tmp_path) as url, serve(_settings(tmp_path, url)) as live:
        engine = make_engine(url)
        own = server_runner("", live.settings.artifact_root)
        # Rows written after the start, so recovery did not see them: stuck, as a job whose graph stopped or whose
        # worker died is. A live command line's job is left to it (the row only asks it to stop).
        stuck = _job(engine, "running", own, tmp_path)
        killed_cli = _job(engine, "running", _dead_cli(), tmp_path)
        live_cli = _job(engine, "running", f"cli:{socket.gethostname()}:{os.getpid()}", tmp_path)
        with live.client() as client:
            answers = {job_id: client.post(f"/jobs/{job_id}/cancel") for job_id in (stuck, killed_cli, live_cli)}
            later = {job_id: client.get(f"/jobs/{job_id}").json()["status"] for job_id in answers}
        assert [(a.status_code, a.json()["status"]) for a in answers.values()] == [
            (202, "cancelled"), (202, "cancelled"), (202, "running")]
        assert later == {stuck: "cancelled", killed_cli: "cancelled", live_cli: "running"}
        row = crud.get_job(engine, live_cli)
        assert row is not None and row.cancel_requested
        engine.dispose()


def _cli(url: str, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGEN_")} | {
        "KERNELGEN_DATABASE_URL": url, "KERNELGEN_WORK_DIR": str(tmp_path / "cli-work"), "TRITON_INTERPRET": "1",
        "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "kernelgen", "run", *args], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.slow_on_postgresql
def test_a_killed_command_lines_job_is_not_run_by_a_server_and_is_failed_by_the_next_command_line(
    tmp_path: Path, backend: str,
) -> None:
    with database_url(backend, tmp_path) as url:
        cli = _cli(url, tmp_path, SLOW, "--device", "cpu", "--out", str(tmp_path / "cli-out"))
        engine = make_engine(url)
        deadline = time.monotonic() + 180
        while not (rows := crud.jobs_with_status(engine, ("running",))) or rows[0].op_name is None:
            assert time.monotonic() < deadline and cli.poll() is None, cli.stdout.read() if cli.stdout else ""
            time.sleep(0.1)
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=30)
        job_id = rows[0].id
        assert job_id is not None
        with serve(_settings(tmp_path, url)):  # the server that starts next on this database
            time.sleep(2.0)
            job = crud.get_job(engine, job_id)
            assert job is not None and job.status == "running"  # not taken over, not run again
            assert not (tmp_path / "jobs" / f"job-{job_id}").exists()
        asked = _cli(url, tmp_path, "please make it fast")  # any later command line on this machine
        output, _ = asked.communicate(timeout=300)
        assert asked.returncode == 2, output  # and a question is exit code 2
        job = crud.get_job(engine, job_id)
        assert job is not None and job.status == "failed", job
        assert "command line that ran this job ended" in job.message
        engine.dispose()
