"""Write and read jobs, rounds and artifacts (and, re-exported, optimization patterns)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, or_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, func, select

from storage.llm_calls import list_llm_calls as list_llm_calls  # re-exported with the rest of the job's data
from storage.llm_calls import llm_usage as llm_usage
from storage.llm_calls import record_llm_call as record_llm_call
from storage.models import Artifact, Job, JobEvent, OptimizationPattern, Round
from storage.patterns import Outcome, count_pattern, in_one_transaction
from storage.patterns import helpful_patterns as helpful_patterns  # re-exported: crud.record_pattern(...) works
from storage.patterns import list_patterns as list_patterns
from storage.patterns import outcome as outcome
from storage.patterns import record_pattern as record_pattern
from storage.signals import job_changed


def create_job(
    engine: Engine, spec_text: str, out_dir: str, *, status: str = "running", options_json: str = "{}",
    owner: str | None = None, runner: str | None = None,
) -> int:
    """Insert a job (running, or queued by the service) for its owner, run by `runner`, and return its id."""
    with Session(engine) as session:
        job = Job(spec_text=spec_text, out_dir=out_dir, status=status, options_json=options_json, owner=owner,
                  runner=runner)
        session.add(job)
        session.commit()
        session.refresh(job)
        assert job.id is not None
        return job.id


def insert_job(engine: Engine, job: Job, place: Callable[[Job], None] | None = None) -> int:
    """Insert a job row; `place` may set fields that need its id (its folder) before the one commit."""
    with Session(engine) as session:
        session.add(job)
        session.flush()
        if place is not None:
            place(job)
        session.commit()
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
    """Insert a round of a job, or replace the one of the same index (a stage run again after a kill)."""
    with Session(engine) as session:
        session.exec(_round_upsert(engine, job_id, round_row))  # type: ignore[call-overload]
        session.commit()


def record_round(
    engine: Engine, job_id: int, round_row: Round, taught: Outcome | None,
) -> tuple[bool, OptimizationPattern | None]:
    """Upsert a round and, the first time it is recorded, count what it `taught` the pattern store: both in one
    transaction, so a kill cannot leave the count without the round (the stage run again would count it twice).

    Returns whether this was the first time, and the pattern as counted then."""
    def work(session: Session) -> tuple[bool, OptimizationPattern | None]:
        known = select(Round.id).where(Round.job_id == job_id, Round.index == round_row.index)
        first = session.exec(known).first() is None
        pattern = count_pattern(session, taught) if first and taught is not None else None
        session.exec(_round_upsert(engine, job_id, round_row))  # type: ignore[call-overload]
        return first, pattern

    return in_one_transaction(engine, work)


def _round_upsert(engine: Engine, job_id: int, round_row: Round) -> Any:
    """The statement that inserts a round, or replaces the one of its (job, index)."""
    values = round_row.model_dump(exclude={"id", "created_at"}) | {"job_id": job_id}
    insert = sqlite_insert if engine.dialect.name == "sqlite" else postgresql_insert
    return insert(Round).values(**values).on_conflict_do_update(
        index_elements=["job_id", "index"], set_={k: v for k, v in values.items() if k not in ("job_id", "index")})


def get_round(engine: Engine, job_id: int, index: int) -> Round | None:
    """Return a job's round of this index, if recorded."""
    with Session(engine) as session:
        return session.exec(select(Round).where(Round.job_id == job_id, Round.index == index)).first()


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


def jobs_with_status(engine: Engine, statuses: tuple[str, ...], runner: str | None = None) -> list[Job]:
    """Return the jobs in any of these statuses, oldest first (with a runner: its jobs and those of none)."""
    with Session(engine) as session:
        query = select(Job).where(col(Job.status).in_(statuses))
        if runner is not None:
            query = query.where(or_(col(Job.runner) == runner, col(Job.runner).is_(None)))
        return list(session.exec(query.order_by(col(Job.id))))


def get_artifact(engine: Engine, job_id: int, name: str, round_index: int | None = None) -> Artifact | None:
    """Return one artifact of a job by name (and round; None for job-level files)."""
    with Session(engine) as session:
        return session.exec(select(Artifact).where(
            Artifact.job_id == job_id, Artifact.name == name, Artifact.round_index == round_index
        )).first()
