"""Write and read jobs, rounds and artifacts (and, re-exported, optimization patterns)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlmodel import Session, func, select

from storage.llm_calls import list_llm_calls as list_llm_calls  # re-exported with the rest of the job's data
from storage.llm_calls import llm_usage as llm_usage
from storage.llm_calls import record_llm_call as record_llm_call
from storage.models import Artifact, Job, JobEvent, Round
from storage.patterns import helpful_patterns as helpful_patterns  # re-exported: crud.record_pattern(...) works
from storage.patterns import list_patterns as list_patterns
from storage.patterns import record_pattern as record_pattern
from storage.signals import job_changed


def create_job(
    engine: Engine, spec_text: str, out_dir: str, *, status: str = "running", options_json: str = "{}",
    owner: str | None = None,
) -> int:
    """Insert a job (running, or queued by the service) for its owner and return its id."""
    with Session(engine) as session:
        job = Job(spec_text=spec_text, out_dir=out_dir, status=status, options_json=options_json, owner=owner)
        session.add(job)
        session.commit()
        session.refresh(job)
        assert job.id is not None
        return job.id


def update_job(engine: Engine, job_id: int, **fields: object) -> None:
    """Set fields of a job and touch its update time."""
    with Session(engine) as session:
        job = session.get(Job, job_id)
        if job is None:
            raise KeyError(f"job {job_id} does not exist")
        for key, value in fields.items():
            setattr(job, key, value)
        job.updated_at = datetime.now(UTC)
        session.add(job)
        session.commit()
    job_changed(job_id)


def add_round(engine: Engine, job_id: int, round_row: Round) -> None:
    """Insert a round of a job."""
    with Session(engine) as session:
        round_row.job_id = job_id
        session.add(round_row)
        session.commit()


def save_artifact(engine: Engine, job_id: int, name: str, content: str, round_index: int | None = None) -> None:
    """Insert or replace an artifact of a job (by name and round)."""
    digest = hashlib.sha256(content.encode()).hexdigest()
    with Session(engine) as session:
        existing = session.exec(
            select(Artifact).where(
                Artifact.job_id == job_id, Artifact.name == name, Artifact.round_index == round_index
            )
        ).first()
        if existing is not None:
            existing.content, existing.sha256 = content, digest
            session.add(existing)
        else:
            session.add(Artifact(job_id=job_id, name=name, content=content, sha256=digest, round_index=round_index))
        session.commit()


def get_job(engine: Engine, job_id: int) -> Job | None:
    """Return a job by id."""
    with Session(engine) as session:
        return session.get(Job, job_id)


def list_rounds(engine: Engine, job_id: int) -> list[Round]:
    """Return a job's rounds in order."""
    with Session(engine) as session:
        return list(session.exec(select(Round).where(Round.job_id == job_id).order_by(Round.index)))  # type: ignore[arg-type]


def list_artifacts(engine: Engine, job_id: int) -> list[Artifact]:
    """Return a job's artifacts."""
    with Session(engine) as session:
        return list(session.exec(select(Artifact).where(Artifact.job_id == job_id)))


def add_event(engine: Engine, job_id: int, stage: str, message: str) -> int:
    """Append a progress event to a job and return its sequence number (1, 2, ...)."""
    with Session(engine) as session:
        last = session.exec(
            select(func.max(JobEvent.seq)).where(JobEvent.job_id == job_id)  # type: ignore[arg-type]
        ).one()
        seq = (last or 0) + 1
        session.add(JobEvent(job_id=job_id, seq=seq, stage=stage, message=message))
        job = session.get(Job, job_id)
        if job is not None:
            job.stage, job.updated_at = stage, datetime.now(UTC)
            session.add(job)
        session.commit()
    job_changed(job_id)
    return seq


def list_events(engine: Engine, job_id: int, after: int = 0) -> list[JobEvent]:
    """Return a job's events with a sequence number above `after`, in order."""
    with Session(engine) as session:
        return list(session.exec(
            select(JobEvent).where(JobEvent.job_id == job_id, JobEvent.seq > after).order_by(JobEvent.seq)  # type: ignore[arg-type]
        ))


def list_jobs(
    engine: Engine, *, status: str | None = None, owner: str | None = None, offset: int = 0, limit: int = 50,
) -> tuple[list[Job], int]:
    """Return a page of jobs (of one owner, when given), newest first, and how many match in all."""
    with Session(engine) as session:
        query = select(Job)
        count = select(func.count()).select_from(Job)
        if status is not None:
            query, count = query.where(Job.status == status), count.where(Job.status == status)
        if owner is not None:
            query, count = query.where(Job.owner == owner), count.where(Job.owner == owner)
        rows = list(session.exec(query.order_by(Job.id.desc()).offset(offset).limit(limit)))  # type: ignore[union-attr]
        return rows, int(session.exec(count).one())


def jobs_with_status(engine: Engine, statuses: tuple[str, ...]) -> list[Job]:
    """Return the jobs in any of these statuses, oldest first."""
    with Session(engine) as session:
        return list(session.exec(select(Job).where(Job.status.in_(statuses)).order_by(Job.id)))  # type: ignore[attr-defined,arg-type]


def get_artifact(engine: Engine, job_id: int, name: str, round_index: int | None = None) -> Artifact | None:
    """Return one artifact of a job by name (and round; None for job-level files)."""
    with Session(engine) as session:
        return session.exec(select(Artifact).where(
            Artifact.job_id == job_id, Artifact.name == name, Artifact.round_index == round_index
        )).first()
