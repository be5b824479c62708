"""Record and read what each optimization change did, so later jobs can start from what helped."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from storage.models import Job, OptimizationPattern, OptimizationPatternBase

EDIT_TYPES = ("parameter", "logic", "interface")


def record_pattern(
    engine: Engine,
    *,
    category: str,
    device: str,
    bottleneck: str,
    change: str,
    edit_type: str,
    params_before: str,
    params_after: str,
    gain: float | None,
    helped: bool,
    speedup_after: float | None,
    job_id: int | None = None,
) -> OptimizationPattern:
    """Count one application of a change under its key (insert or update), noting the job, and return the row."""
    if edit_type not in EDIT_TYPES:
        raise ValueError(f"edit_type must be one of {', '.join(EDIT_TYPES)}, not {edit_type!r}")
    seen = OptimizationPatternBase(
        category=category, device=device, bottleneck=bottleneck, change=change, edit_type=edit_type,
        params_before=params_before, params_after=params_after,
    )
    try:
        return _record_once(engine, seen, gain, helped, speedup_after, job_id)
    except IntegrityError:
        # Another job inserted the same key between our read and our insert: the row exists now, so update it.
        return _record_once(engine, seen, gain, helped, speedup_after, job_id)


def _record_once(
    engine: Engine, seen: OptimizationPatternBase, gain: float | None, helped: bool, speedup_after: float | None,
    job_id: int | None,
) -> OptimizationPattern:
    """Apply one observation in one transaction, locking the row where the database can."""
    with Session(engine) as session:
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
        if helped:
            row.times_helped += 1
            row.params_before, row.params_after = seen.params_before, seen.params_after
        known = [s for s in (row.best_speedup, speedup_after) if s is not None]
        row.best_speedup = max(known) if known else None
        if job_id is not None:  # provenance: who last changed what every later job reads
            job = session.get(Job, job_id)
            row.last_job_id, row.last_owner = job_id, job.owner if job is not None else None
        row.updated_at = datetime.now(UTC)
        session.add(row)
        session.flush()  # assigns the id of a new row
        # What this transaction wrote: a refresh after commit could already show a concurrent job's update.
        written = OptimizationPattern.model_validate(row.model_dump())
        session.commit()
        return written


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
