"""A batch task's time is the time its job ran, not the time the service was down in between."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session

from server.batches import run_seconds
from storage import crud
from storage.db import make_engine
from storage.models import Job, JobEvent
from tests.databases import database_url

T0 = datetime(2026, 11, 27, 1, 0, 0, tzinfo=UTC)


def _job_with_events(url: str, timeline: Sequence[tuple[float, str]], finished_s: float) -> tuple[Engine, Job]:
    """Record a job whose events happened at the given seconds after T0, and which last changed at finished_s."""
    engine = make_engine(url)
    job_id = crud.create_job(engine, "relu of x [8]", "", status="queued")
    with Session(engine) as session:
        for seq, (at, stage) in enumerate(timeline, start=1):
            session.add(JobEvent(job_id=job_id, seq=seq, stage=stage, message=stage,
                                 created_at=T0 + timedelta(seconds=at)))
        job = session.get(Job, job_id)
        assert job is not None
        job.updated_at = T0 + timedelta(seconds=finished_s)
        job.status = "verified"
        session.add(job)
        session.commit()
        session.refresh(job)
        return engine, job


def test_a_job_that_ran_straight_through_counts_from_its_start(tmp_path: Path) -> None:
    with database_url("sqlite", tmp_path) as url:
        engine, job = _job_with_events(url, [(0, "queued"), (30, "requirements"), (60, "accuracy")], 90)
        assert run_seconds(engine, job) == 60  # the 30 s in the queue are not its run


def test_the_hours_the_service_was_down_are_not_the_jobs_time(tmp_path: Path) -> None:
    # Ran 10 s to 100 s, the server stopped; it came back 7 hours later and the job ran 50 s more.
    timeline = [(0, "queued"), (10, "requirements"), (100, "accuracy"), (100 + 7 * 3600, "restart"),
                (100 + 7 * 3600 + 3, "resume"), (100 + 7 * 3600 + 50, "finalize")]
    with database_url("sqlite", tmp_path) as url:
        engine, job = _job_with_events(url, timeline, 100 + 7 * 3600 + 50)
        assert run_seconds(engine, job) == 90 + 50
