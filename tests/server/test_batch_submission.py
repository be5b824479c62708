"""A server killed while it submits a batch's tasks: no job the batch does not know, no task run twice (issue 49)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import Session, select

from kernelgen.settings import Settings
from storage import batches
from storage.db import make_engine
from storage.models import Job
from tests.databases import database_url
from tests.server.live import serve

ROOT = Path(__file__).resolve().parents[2]
TASKS = 6
# Submits a batch on a real started service, and SIGKILLs its own process at the first committed change of the
# third job: the moment the old code had recorded that job but not yet linked it to its task.
SUBMIT_AND_DIE = """
import os, sys
from pathlib import Path
from kernelgen.settings import Settings
from server.batches import submit_batch
from server.service import JobService
from storage.signals import subscribe

folder = Path(sys.argv[2])
service = JobService(Settings(_env_file=None, database_url=sys.argv[1], work_dir=folder / "work",
                              artifact_root=folder / "jobs", concurrency=1, llm="offline"))
service.start()
seen = set()

def die_at_the_third(job_id):
    seen.add(job_id)
    if len(seen) == 3:
        os.kill(os.getpid(), 9)

subscribe(die_at_the_third)
submit_batch(service, None, "b", "specs", [(f"t{i}", "please make it fast") for i in range(int(sys.argv[3]))],
             {"device": "cpu"})
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_kill_during_batch_submission_leaves_one_job_per_task(tmp_path: Path, backend: str) -> None:
    with database_url(backend, tmp_path) as url:
        run = subprocess.run([sys.executable, "-c", SUBMIT_AND_DIE, url, str(tmp_path), str(TASKS)], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == -9, run.stderr
        engine = make_engine(url)
        (batch,) = batches.list_batches(engine, None)
        assert batch.id is not None
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=url, work_dir=tmp_path / "work", artifact_root=tmp_path / "jobs",
            concurrency=1, llm="offline",
        )
        with serve(settings):  # the restart: recovery requeues the jobs and submits the tasks left over
            deadline = time.monotonic() + 180
            while batches.open_tasks(engine, batch.id):
                assert time.monotonic() < deadline
                time.sleep(0.2)
        tasks = batches.list_tasks(engine, batch.id)
        with Session(engine) as session:
            jobs = session.exec(select(Job)).all()
        linked = [task.job_id for task in tasks]
        assert None not in linked and len(set(linked)) == TASKS  # every task has its own job
        assert sorted(job.id for job in jobs) == sorted(linked)  # and there is no other job
        assert {job.status for job in jobs} == {"rejected"}  # each ran once, to its end
        engine.dispose()
