"""Request and response shapes of the batch API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, StringConstraints, model_validator

from server.schemas import JobOptions, SpecText, storable

BatchText = Annotated[str, StringConstraints(min_length=1), AfterValidator(storable)]


class BatchCreate(JobOptions):
    """A batch: exactly one of a task book, a list of specs or JSONL records; the options apply to every task."""

    name: Annotated[str, AfterValidator(storable)] = Field(default="", max_length=200,
                                                           description="A name for the report.")
    taskbook: BatchText | None = Field(default=None, description="A task book in markdown (one task per heading).")
    specs: list[SpecText] | None = Field(default=None, description="Specs, one task each.")
    jsonl: BatchText | None = Field(default=None, description='JSON lines: {"spec": "...", "name": "..."} each.')

    @model_validator(mode="after")
    def _one_source(self) -> BatchCreate:
        given = [k for k in ("taskbook", "specs", "jsonl") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of taskbook, specs or jsonl (got {', '.join(given) or 'none'})")
        return self


class BatchTaskPublic(BaseModel):
    """One task's progress."""

    index: int
    title: str
    job_id: int | None
    status: str
    op: str | None
    stage: str


class BatchDetail(BaseModel):
    """A batch with its progress per task."""

    id: int
    name: str
    source: str
    owner: str | None
    created_at: datetime
    status: Literal["queued", "running", "done", "cancelled"]
    total: int
    counts: dict[str, int] = Field(description="Tasks per status: queued, running, verified, failed, ...")
    eta_s: float | None = Field(description="Seconds left, from the finished tasks' mean time; null before any.")
    tasks: list[BatchTaskPublic]


class BatchAccepted(BaseModel):
    """A batch just queued."""

    id: int
    tasks: int
    links: dict[str, str]


class BatchesPublic(BaseModel):
    """The caller's batches, newest first."""

    items: list[BatchDetail]
