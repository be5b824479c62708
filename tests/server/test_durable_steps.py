"""A kill between a step's side effects and its checkpoint: the step's writes are all-or-nothing, running it again
records nothing twice, and a graph that ends without a final status fails the job at once (issue 49)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from agent.state import JobRequest
from kernelgen.settings import Settings
from server.checkpoints import checkpoint_url
from server.service import FINAL_STATUSES, JobService
from storage import crud
from tests.databases import database_url
from tests.server.live import RELU

# put_writes in a process that SIGKILLs itself as SQLite starts the third of its four inserts (the trace callback
# runs at each statement's start): what reached the file is what a server killed mid-write leaves.
KILLED_MID_WRITE = """
import os, sys
from kernelgen.settings import Settings
from server.checkpoints import make_checkpointer

saver = make_checkpointer(Settings(_env_file=None, database_url=sys.argv[1]))
inserts = []

def die_at_the_third(statement):
    if "INTO writes" in statement:
        inserts.append(statement)
        if len(inserts) == 3:
            os.kill(os.getpid(), 9)

saver.conn.set_trace_callback(die_at_the_third)
config = {"configurable": {"thread_id": "job-1", "checkpoint_ns": "", "checkpoint_id": "c1"}}
saver.put_writes(config, [("a", 1), ("b", 2), ("c", 3), ("d", 4)], "task-1")
"""


def test_a_kill_during_a_tasks_checkpoint_writes_saves_none_of_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kg.db'}"
    run = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, url], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == -9, run.stderr
    with sqlite3.connect(tmp_path / "kg-checkpoints.db") as connection:
        (count,) = connection.execute("SELECT COUNT(*) FROM writes WHERE task_id = 'task-1'").fetchone()
    assert count == 0  # in autocommit, the two rows inserted before the kill stayed: a task with part of its writes


@contextmanager
def _service(settings: Settings) -> Iterator[JobService]:
    service = JobService(settings)
    service.start()
    try:
        yield service
    finally:
        service.stop()


def _wait_final(service: JobService, job_id: int, timeout: float = 240) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = crud.get_job(service.engine, job_id)
        if job is not None and job.status in FINAL_STATUSES:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} is still {crud.get_job(service.engine, job_id)} after {timeout} s")


def _rewind_to_log(service: JobService, job_id: int, keep: tuple[str, ...]) -> None:
    """Make the job's checkpoint what a kill during its `log` step leaves: that step's side effects are recorded
    (rounds, files, events), its checkpoint is not, and of its writes only the channels in `keep` were saved."""
    config: Any = {"configurable": {"thread_id": f"job-{job_id}"}}
    history = list(service.graph.get_state_history(config))  # newest first
    at = next(i for i, snapshot in enumerate(history) if snapshot.next == ("log",))
    later = [s.config["configurable"]["checkpoint_id"] for s in history[:at]]
    step = history[at].config["configurable"]["checkpoint_id"]
    url = checkpoint_url(service.settings)
    writes = "writes" if url.startswith("sqlite") else "checkpoint_writes"
    engine = create_engine(url)
    with engine.begin() as connection:
        for checkpoint in later:
            connection.execute(text("DELETE FROM checkpoints WHERE checkpoint_id = :c"), {"c": checkpoint})
            connection.execute(text(f"DELETE FROM {writes} WHERE checkpoint_id = :c"), {"c": checkpoint})
        kept = connection.execute(text(f"SELECT channel FROM {writes} WHERE checkpoint_id = :c"), {"c": step})
        for (channel,) in kept.all():
            if channel not in keep:
                connection.execute(text(f"DELETE FROM {writes} WHERE checkpoint_id = :c AND channel = :ch"),
                                   {"c": step, "ch": channel})
    engine.dispose()
    # The row as the killed server left it: running, with the stages after log not yet reached.
    crud.update_job(service.engine, job_id, status="running", message="")


def _settings(tmp_path: Path, url: str) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=url, work_dir=tmp_path / "work", artifact_root=tmp_path / "jobs",
        concurrency=1, llm="offline",
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_log_step_cut_by_a_kill_runs_once_more_and_a_graph_without_a_status_fails_at_once(
        tmp_path: Path, backend: str) -> None:
    # One verified job, cut twice at its log step (a real job takes most of a minute in the interpreter).
    with database_url(backend, tmp_path) as url:
        settings = _settings(tmp_path, url)
        with _service(settings) as service:
            job_id = service.submit(JobRequest(spec_text=RELU, device="cpu"))
            assert _wait_final(service, job_id).status == "verified"
            rounds_before = [(r.index, r.verdict) for r in crud.list_rounds(service.engine, job_id)]
            _rewind_to_log(service, job_id, keep=())  # killed before any of log's writes were saved
        with _service(settings) as service:
            job = _wait_final(service, job_id)
            rounds = [(r.index, r.verdict) for r in crud.list_rounds(service.engine, job_id)]
            log = crud.get_artifact(service.engine, job_id, "optimization_log.md")
            stages = [e.stage for e in crud.list_events(service.engine, job_id)]
            # Then one write of the log task saved, its route on not: LangGraph takes the task as done, and the
            # graph ends after it with the job's status still "running".
            _rewind_to_log(service, job_id, keep=("pending",))
        with _service(settings) as service:
            ended = _wait_final(service, job_id, timeout=120)
            events = crud.list_events(service.engine, job_id)
    assert job.status == "verified", job
    assert "resume" in stages and stages.count("log") == 2  # the log step did run again
    assert rounds == rounds_before  # and recorded its round once
    assert log is not None
    for index, _ in rounds:
        assert log.content.count(f"## Round {index}:") == 1, log.content
    assert log.content.count("# Optimization log") == 1
    assert ended.status == "failed" and ended.message == "the job's graph ended without a final status", ended
    assert [e.stage for e in events][-2:] == ["resume", "error"]
