"""Record and read what each optimization change did, so later jobs can start from what helped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from storage.models import Job, OptimizationPattern, OptimizationPatternBase

EDIT_TYPES = ("parameter", "logic", "interface")
T = TypeVar("T")


@dataclass(frozen=True)
class Outcome:
    """One application of a change: its key and parameters, what it did, and the job that applied it."""

    seen: OptimizationPatternBase
    gain: float | None
    helped: bool
    speedup_after: float | None
    job_id: int | None = None


def outcome(
    *, category: str, device: str, bottleneck: str, change: str, edit_type: str, params_before: str,
    params_after: str, gain: float | None, helped: bool, speedup_after: float | None, job_id: int | None = None,
) -> Outcome:
    """Check and gather one application of a change, to be counted by `record_pattern` or with a round."""
    if edit_type not in EDIT_TYPES:
        raise ValueError(f"edit_type must be one of {', '.join(EDIT_TYPES)}, not {edit_type!r}")
    seen = OptimizationPatternBase(
        category=category, device=device, bottleneck=bottleneck, change=change, edit_type=edit_type,
        params_before=params_before, params_after=params_after,
    )
    return Outcome(seen, gain, helped, speedup_after, job_id)


def record_pattern(engine: Engine, **fields: Any) -> OptimizationPattern:
    """Count one application of a change (`outcome`'s fields) under its key, noting the job, and return the row."""
    counted = outcome(**fields)
    return in_one_transaction(engine, lambda session: count_pattern(session, counted))


def in_one_transaction(engine: Engine, work: Callable[[Session], T]) -> T:
    """Run `work` in one transaction and commit it: once more when it counted a pattern whose key another job
    inserted between our read and our insert (the row exists then, so the second run updates it)."""
    try:
        return _committed(engine, work)
    except IntegrityError:
        return _committed(engine, work)


def _committed(engine: Engine, work: Callable[[Session], T]) -> T:
    with Session(engine) as session:
        done = work(session)
        session.commit()
        return done


def count_pattern(session: Session, counted: Outcome) -> OptimizationPattern:
    """Apply one outcome in the caller's transaction (left for it to commit), locking the row where the database
    can, and return the row as this transaction wrote it."""
    seen, gain = counted.seen, counted.gain
    query = select(OptimizationPattern).where(
        OptimizationPattern.category == seen.category,
        OptimizationPattern.device == seen.device,
        OptimizationPattern.bottleneck == seen.bottleneck,
        OptimizationPattern.change == seen.change,
    )
    row = session.exec(query.with_for_update()).first()
    if row is None:
        row = OptimizationPattern.model_validate(seen)
    row.times_applied += 1
    if gain is not None:
        row.times_measured += 1
        old = row.mean_gain if row.mean_gain is not None else 0.0
        row.mean_gain = old + (gain - old) / row.times_measured
    if counted.helped:
        row.times_helped += 1
        row.params_before, row.params_after = seen.params_before, seen.params_after
    known = [s for s in (row.best_speedup, counted.speedup_after) if s is not None]
    row.best_speedup = max(known) if known else None
    if counted.job_id is not None:  # provenance: who last changed what every later job reads
        job = session.get(Job, counted.job_id)
        row.last_job_id, row.last_owner = counted.job_id, job.owner if job is not None else None
    row.updated_at = datetime.now(UTC)
    session.add(row)
    session.flush()  # assigns the id of a new row
    # What this transaction wrote: a read after commit could already show a concurrent job's update.
    return OptimizationPattern.model_validate(row.model_dump())


def list_patterns(
    engine: Engine, *, device: str | None = None, category: str | None = None
) -> list[OptimizationPattern]:
    """Return patterns, optionally of one device and category, most helpful first within each group."""
    query = select(OptimizationPattern)
    if device is not None:
        query = query.where(OptimizationPattern.device == device)
    if category is not None:
        query = query.where(OptimizationPattern.category == category)
    query = query.order_by(
        col(OptimizationPattern.category),
        col(OptimizationPattern.device),
        col(OptimizationPattern.times_helped).desc(),
        col(OptimizationPattern.mean_gain).desc().nulls_last(),
        col(OptimizationPattern.id),
    )
    with Session(engine) as session:
        return list(session.exec(query))


def helpful_patterns(engine: Engine, *, device: str, category: str) -> list[OptimizationPattern]:
    """Return the patterns that helped at least once on this device and category, best speedup first."""
    query = (
        select(OptimizationPattern)
        .where(
            OptimizationPattern.device == device,
            OptimizationPattern.category == category,
            OptimizationPattern.times_helped > 0,
        )
        .order_by(
            col(OptimizationPattern.best_speedup).desc().nulls_last(),
            col(OptimizationPattern.mean_gain).desc().nulls_last(),
            col(OptimizationPattern.id),
        )
    )
    with Session(engine) as session:
        return list(session.exec(query))
