"""Table models and their public shapes (Base / Public / table=True families)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel


def _now() -> datetime:
    return datetime.now(UTC)


class JobBase(SQLModel):
    """What identifies a job and how it ended."""

    spec_text: str
    op_name: str | None = Field(default=None, index=True)
    status: str = Field(default="running", index=True)
    device: str | None = None
    message: str = ""
    best_round: int | None = None
    spec_json: str | None = None
    stage: str = ""  # the stage the job is in (or last reported)
    options_json: str = "{}"  # the request's options (device, rounds, target, ...), for resuming
    cancel_requested: bool = False
    generator: str = "offline"  # who wrote the kernels: offline, or openai:<model>
    owner: str | None = Field(default=None, index=True)  # the principal that submitted it (None: before owners)
    coverage: str | None = None  # verified on the spec's shapes ("spec") or on reduced ones only ("reduced")


class Job(JobBase, table=True):
    """A job row (its folder is a server path: kept out of the public shape)."""

    id: int | None = Field(default=None, primary_key=True)
    out_dir: str
    # Who runs it: "server:<id>" or "cli:<host>:<pid>" (storage/runners.py); None for rows made before runners. A
    # server recovers only its own jobs (and those of none); a command line's are its own (kept out of the public
    # shape: it names a host and a process).
    runner: str | None = None
    created_at: datetime = Field(default_factory=_now)
    updated_at: datetime = Field(default_factory=_now)


class JobPublic(JobBase):
    """A job as the outside world sees it."""

    id: int
    created_at: datetime
    updated_at: datetime


class RoundBase(SQLModel):
    """One measured version of a job's kernel."""

    index: int
    edit_type: str
    config: str
    reason: str = ""
    accuracy_status: str
    performance_status: str
    speedup: float | None = None
    pct_of_copy: float | None = None
    accepted: bool = False
    verdict: str = ""
    figures_json: str = "{}"


class Round(RoundBase, table=True):
    """A round row: one per (job, index), so the log stage run again after a kill rewrites its round, not adds one."""

    __table_args__ = (UniqueConstraint("job_id", "index", name="uq_round_job_index"),)

    id: int | None = Field(default=None, primary_key=True)
    job_id: int = Field(foreign_key="job.id", index=True)
    created_at: datetime = Field(default_factory=_now)


class RoundPublic(RoundBase):
    """A round as the outside world sees it."""

    id: int
    job_id: int


class ArtifactBase(SQLModel):
    """A file a job produced; round_index None for job-level files."""

    name: str
    round_index: int | None = None
    content: str
    sha256: str


class Artifact(ArtifactBase, table=True):
    """An artifact row (the content is kept in the database, so nothing is lost with the folder)."""

    id: int | None = Field(default=None, primary_key=True)
    job_id: int = Field(foreign_key="job.id", index=True)
    created_at: datetime = Field(default_factory=_now)


class OptimizationPatternBase(SQLModel):
    """A change the optimization loop made under one bottleneck, and how it went on one device."""

    category: str = Field(index=True)
    device: str = Field(index=True)
    bottleneck: str
    change: str
    edit_type: str
    params_before: str
    params_after: str
    times_applied: int = 0
    times_helped: int = 0
    times_measured: int = 0
    mean_gain: float | None = None
    best_speedup: float | None = None


class OptimizationPattern(OptimizationPatternBase, table=True):
    """A pattern row: one per (category, device, bottleneck, change), with the job that last changed it."""

    __table_args__ = (UniqueConstraint("category", "device", "bottleneck", "change", name="uq_pattern_key"),)

    id: int | None = Field(default=None, primary_key=True)
    last_job_id: int | None = None  # provenance, kept out of the public shape: it names other principals' jobs
    last_owner: str | None = None
    created_at: datetime = Field(default_factory=_now)
    updated_at: datetime = Field(default_factory=_now)


class OptimizationPatternPublic(OptimizationPatternBase):
    """A pattern as the outside world sees it."""

    id: int
    created_at: datetime
    updated_at: datetime


class JobEventBase(SQLModel):
    """One progress event of a job: a stage's message, numbered per job from 1."""

    seq: int
    stage: str
    message: str


class JobEvent(JobEventBase, table=True):
    """An event row (kept, so a client can resume the stream after a restart)."""

    __table_args__ = (UniqueConstraint("job_id", "seq", name="uq_job_event_seq"),)

    id: int | None = Field(default=None, primary_key=True)
    job_id: int = Field(foreign_key="job.id", index=True)
    created_at: datetime = Field(default_factory=_now)


class JobEventPublic(JobEventBase):
    """An event as the outside world sees it."""

    job_id: int
    created_at: datetime


class LlmCallBase(SQLModel):
    """One request to the LLM endpoint: stage, tokens, latency, outcome."""

    stage: str
    model: str
    attempt: int = 1
    response_format: str = "none"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    status: str = "ok"  # ok | invalid | error
    error: str = ""


class LlmCall(LlmCallBase, table=True):
    """An LLM call row (uid: the client's id of the call, so a re-judged call updates its row)."""

    id: int | None = Field(default=None, primary_key=True)
    uid: str = Field(unique=True)
    job_id: int = Field(foreign_key="job.id", index=True)
    created_at: datetime = Field(default_factory=_now)


class LlmCallPublic(LlmCallBase):
    """An LLM call as the outside world sees it."""

    job_id: int
    created_at: datetime


class ApiUserBase(SQLModel):
    """A principal of the API that holds a token from the users table."""

    name: str = Field(unique=True)
    admin: bool = False  # sees and cancels every job


class ApiUser(ApiUserBase, table=True):
    """An API user row: the token is kept only as its SHA-256 (tokens are random, so no salt is needed)."""

    id: int | None = Field(default=None, primary_key=True)
    token_sha256: str = Field(unique=True)
    created_at: datetime = Field(default_factory=_now)
    revoked_at: datetime | None = None


class ApiUserPublic(ApiUserBase):
    """An API user as listed by the admin command, without the token."""

    id: int
    created_at: datetime
    revoked_at: datetime | None


class ChatThreadBase(SQLModel):
    """A conversation of the web page: its title (the first message, shortened)."""

    title: str = ""


class ChatThread(ChatThreadBase, table=True):
    """A thread row, owned by the principal that opened it."""

    id: int | None = Field(default=None, primary_key=True)
    owner: str | None = Field(default=None, index=True)
    created_at: datetime = Field(default_factory=_now)
    updated_at: datetime = Field(default_factory=_now)


class ChatThreadPublic(ChatThreadBase):
    """A thread as the sidebar lists it."""

    id: int
    created_at: datetime
    updated_at: datetime


class ChatMessageBase(SQLModel):
    """One message of a thread: what the person wrote, or the service's reply (a reading, a question, a job)."""

    role: str  # user or assistant
    kind: str = "text"  # text, reading, question, job, tasks, error
    text: str = ""  # what was written, the question asked, or the rendered reading
    spec_text: str | None = None  # the spec this reply is about (reading, question, job)
    data_json: str = "{}"  # the reading, the options, the tasks: whatever the page needs to draw the reply
    job_id: int | None = Field(default=None, index=True)


class ChatMessage(ChatMessageBase, table=True):
    """A message row."""

    id: int | None = Field(default=None, primary_key=True)
    thread_id: int = Field(foreign_key="chatthread.id", index=True)
    created_at: datetime = Field(default_factory=_now)


class ChatMessagePublic(ChatMessageBase):
    """A message as the page draws it."""

    id: int
    thread_id: int
    created_at: datetime


class BatchBase(SQLModel):
    """A batch of tasks (a task book, a list of specs, a JSONL file): each task is an ordinary job."""

    name: str = ""
    source: str = "specs"  # taskbook, specs or jsonl
    options_json: str = "{}"  # the options every task's job runs with
    cancel_requested: bool = False


class Batch(BatchBase, table=True):
    """A batch row, owned by the principal that submitted it."""

    id: int | None = Field(default=None, primary_key=True)
    owner: str | None = Field(default=None, index=True)
    created_at: datetime = Field(default_factory=_now)


class BatchPublic(BatchBase):
    """A batch as listed."""

    id: int
    created_at: datetime


class BatchTaskBase(SQLModel):
    """One task of a batch: its title, its spec, and the job that runs it (none until submitted)."""

    index: int
    title: str = ""
    spec_text: str
    job_id: int | None = Field(default=None, index=True)


class BatchTask(BatchTaskBase, table=True):
    """A task row."""

    id: int | None = Field(default=None, primary_key=True)
    batch_id: int = Field(foreign_key="batch.id", index=True)
