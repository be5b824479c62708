"""Write and read batches and their tasks (the jobs themselves live in the job table)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine
from sqlmodel import Session, col, func, select

from storage.models import Batch, BatchTask, Job, JobEvent


def create_batch(engine: Engine, owner: str | None, name: str, source: str, options_json: str,
                 tasks: list[tuple[str, str]]) -> int:
    """Insert a batch with its tasks (title, spec), none submitted yet, in one transaction; return its id."""
    with Session(engine) as session:
        batch = Batch(owner=owner, name=name, source=source, options_json=options_json)
        session.add(batch)
        session.flush()
        assert batch.id is not None
        for index, (title, spec) in enumerate(tasks):
            session.add(BatchTask(batch_id=batch.id, index=index, title=title, spec_text=spec))
        session.commit()
        return batch.id


def get_batch(engine: Engine, batch_id: int) -> Batch | None:
    """Return a batch by id."""
    with Session(engine) as session:
        return session.get(Batch, batch_id)


def list_batches(engine: Engine, owner: str | None, limit: int = 100) -> list[Batch]:
    """Return an owner's batches (every batch for None), newest first."""
    with Session(engine) as session:
        query = select(Batch)
        if owner is not None:
            query = query.where(Batch.owner == owner)
        return list(session.exec(query.order_by(col(Batch.id).desc()).limit(limit)).all())


def list_tasks(engine: Engine, batch_id: int) -> list[BatchTask]:
    """Return a batch's tasks in order."""
    with Session(engine) as session:
        query = select(BatchTask).where(BatchTask.batch_id == batch_id).order_by(col(BatchTask.index))
        return list(session.exec(query).all())


def create_task_job(engine: Engine, task_id: int, job: Job, place: Callable[[Job], None]) -> tuple[int, bool]:
    """Insert a task's job and link it in one transaction; (its job, False) when the task has one already."""
    with Session(engine) as session:
        # Locked on PostgreSQL, so two submitters of one task (a recovery racing a submission) make one job.
        task = session.exec(select(BatchTask).where(BatchTask.id == task_id).with_for_update()).first()
        if task is None:
            raise KeyError(f"task {task_id} does not exist")
        if task.job_id is not None:
            return task.job_id, False
        session.add(job)
        session.flush()
        place(job)
        assert job.id is not None
        task.job_id = job.id
        session.add(task)
        session.commit()
        return job.id, True


def link_job(engine: Engine, task_id: int, job_id: int) -> None:
    """Record the job that runs a task."""
    with Session(engine) as session:
        task = session.get(BatchTask, task_id)
        if task is None:
            raise KeyError(f"task {task_id} does not exist")
        task.job_id = job_id
        session.add(task)
        session.commit()


def request_cancel(engine: Engine, batch_id: int) -> None:
    """Mark a batch cancelled, so tasks not yet submitted never are."""
    with Session(engine) as session:
        batch = session.get(Batch, batch_id)
        if batch is not None:
            batch.cancel_requested = True
            session.add(batch)
            session.commit()


def unsubmitted(engine: Engine) -> list[BatchTask]:
    """Return the tasks of live batches whose job was never submitted (a restart during submission)."""
    with Session(engine) as session:
        query = (select(BatchTask).join(Batch, col(Batch.id) == col(BatchTask.batch_id))
                 .where(col(BatchTask.job_id).is_(None), col(Batch.cancel_requested).is_(False),
                        col(Batch.source).not_like("cli-%"))  # the command line runs its own batches
                 .order_by(col(BatchTask.batch_id), col(BatchTask.index)))
        return list(session.exec(query).all())


def batch_events(engine: Engine, batch_id: int, after_id: int = 0) -> list[tuple[int, JobEvent]]:
    """Return (task index, event) for the batch's job events with an id above `after_id`, in id order."""
    with Session(engine) as session:
        query = (select(BatchTask.index, JobEvent).join(JobEvent, col(JobEvent.job_id) == col(BatchTask.job_id))
                 .where(BatchTask.batch_id == batch_id, col(JobEvent.id) > after_id).order_by(col(JobEvent.id)))
        return [(index, event) for index, event in session.exec(query).all()]


def open_tasks(engine: Engine, batch_id: int) -> int:
    """Count a batch's tasks not over: never submitted (unless the batch was cancelled) or with an unfinished job."""
    with Session(engine) as session:
        batch = session.get(Batch, batch_id)
        if batch is None:
            return 0
        unsubmitted = session.exec(select(func.count()).select_from(BatchTask).where(
            BatchTask.batch_id == batch_id, col(BatchTask.job_id).is_(None))).one()
        running = session.exec(select(func.count()).select_from(BatchTask)
                               .join(Job, col(Job.id) == col(BatchTask.job_id))
                               .where(BatchTask.batch_id == batch_id,
                                      col(Job.status).in_(("queued", "running")))).one()
        return int(running) + (0 if batch.cancel_requested else int(unsubmitted))
