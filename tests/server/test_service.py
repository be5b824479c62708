"""The job service's view of a job: what the workers are doing wins over a row read a moment earlier."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.state import JobRequest
from kernelgen.settings import Settings
from server.service import FINAL_STATUSES, JobService
from storage import crud
from tests.databases import database_url
from tests.server.live import RELU


@pytest.fixture
def service(tmp_path: Path) -> Iterator[JobService]:
    with database_url("sqlite", tmp_path) as url:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=url, work_dir=tmp_path / "work", artifact_root=tmp_path / "jobs",
            concurrency=1, llm="offline",
        )
        job_service = JobService(settings)
        job_service.start()
        try:
            yield job_service
        finally:
            job_service.stop()


def wait_for(condition: object, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.01)
    raise AssertionError("timed out")


def test_a_row_read_while_queued_never_reports_queued_without_a_place(service: JobService) -> None:
    first = service.submit(JobRequest(spec_text=RELU))
    second = service.submit(JobRequest(spec_text=RELU))
    stale = crud.get_job(service.engine, second)
    assert stale is not None and stale.status == "queued"
    status, position = service.live_status(stale)
    assert (status, position) == ("queued", 1) or status != "queued"

    # The worker takes the second job; the row read before still says "queued".
    wait_for(lambda: second in service.running())
    status, position = service.live_status(stale)
    assert stale.status == "queued" and (status, position) == ("running", None)

    wait_for(lambda: crud.get_job(service.engine, second).status in FINAL_STATUSES)  # type: ignore[union-attr]
    assert service.live_status(stale) == ("verified", None)
    finished = crud.get_job(service.engine, first)
    assert finished is not None and service.live_status(finished) == ("verified", None)


def test_a_cancel_written_by_another_process_stops_a_worker_run_within_seconds(tmp_path: Path) -> None:
    import threading

    from tests.server.live import SLOW

    with database_url("sqlite", tmp_path) as url:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=url, work_dir=tmp_path / "work", artifact_root=tmp_path / "jobs",
            llm="offline", sandbox_allow_unisolated=True,
        )
        worker = JobService(settings)  # as a Ray worker holds it: never started, no executor
        request = JobRequest(spec_text=SLOW, device="cpu", out_dir=str(tmp_path / "out"))
        job_id = crud.create_job(worker.engine, SLOW, "", status="queued",
                                 options_json=request.model_dump_json(exclude={"spec_text"}))
        run = threading.Thread(target=worker.run_one, args=(job_id, 0.2))
        run.start()
        wait_for(lambda: any(e.stage == "generate" for e in crud.list_events(worker.engine, job_id)))
        time.sleep(1.0)  # the accuracy test is running in its sandbox
        crud.update_job(worker.engine, job_id, cancel_requested=True)  # what the API's process writes
        asked = time.monotonic()
        run.join(timeout=120)
        assert time.monotonic() - asked < 5  # not at the next stage: the sandboxed run was killed
        job = crud.get_job(worker.engine, job_id)
        assert job is not None and job.status == "cancelled"
        events = crud.list_events(worker.engine, job_id)
        # The killed accuracy test reports its own death; that is not the job's result, so nothing of it is kept.
        assert [e.stage for e in events][-1] == "cancelled"
        assert not any(e.stage == "accuracy" for e in events), [(e.stage, e.message) for e in events]
