"""Record the LLM calls of a job and sum what they cost."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from storage.models import LlmCall


def record_llm_call(engine: Engine, job_id: int, uid: str, **fields: Any) -> None:
    """Insert a call, or update it when its uid is known (a call judged invalid after it was stored)."""
    with Session(engine) as session:
        row = session.exec(select(LlmCall).where(LlmCall.uid == uid)).first()
        if row is None:
            row = LlmCall(uid=uid, job_id=job_id, **fields)
        else:
            for key, value in fields.items():
                setattr(row, key, value)
        session.add(row)
        session.commit()


def list_llm_calls(engine: Engine, job_id: int) -> list[LlmCall]:
    """Return a job's LLM calls in the order they were made."""
    with Session(engine) as session:
        return list(session.exec(select(LlmCall).where(LlmCall.job_id == job_id).order_by(col(LlmCall.id))))


def llm_usage(engine: Engine, job_id: int) -> dict[str, Any]:
    """Sum a job's calls: count, tokens, latency, and calls per outcome."""
    calls = list_llm_calls(engine, job_id)
    by_status: dict[str, int] = {}
    for call in calls:
        by_status[call.status] = by_status.get(call.status, 0) + 1
    return {
        "calls": len(calls),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "total_tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
        "latency_ms": round(sum(c.latency_ms for c in calls), 1),
        "by_status": by_status,
    }
