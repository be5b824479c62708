"""Request and response shapes of the HTTP API."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, StringConstraints, field_validator

from agent.generators.base import SCHEDULE_NOTES
from agent.generators.config_rules import config_from_label
from agent.reader.outcome import ReadOutcome
from agent.reading import Reading
from storage.models import JobPublic as StoredJobPublic
from storage.models import Round

Device = Literal["auto", "cuda", "npu", "cpu"]
JobStatus = Literal["queued", "running", "verified", "failed", "rejected", "cancelled"]
FINAL_STATUSES: tuple[str, ...] = ("verified", "failed", "rejected", "cancelled")

# A configuration label: a schedule, then NAME=integer pairs (config_rules checks the rest, naming the rule).
CONFIG_PATTERN = rf"^({'|'.join(SCHEDULE_NOTES)}): [A-Z_]+=\d{{1,6}}(, [A-Z_]+=\d{{1,6}})*$"


def storable(text: str) -> str:
    """Refuse text a database cannot store: NUL characters and lone surrogates."""
    if "\x00" in text:
        raise ValueError("must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("must be valid Unicode text") from exc
    return text


# The constraints sit on the string itself, so the OpenAPI schema carries the pattern inside `anyOf` too.
ConfigLabel = Annotated[str, StringConstraints(max_length=200, pattern=CONFIG_PATTERN), AfterValidator(storable)]


class JobOptions(BaseModel):
    """How to run a job: the device, the optimization budget and where to start."""

    device: Device = Field(default="auto", description="Where to run: auto, cuda, npu or cpu.")
    target_speedup: float | None = Field(default=None, gt=0, le=1e6, allow_inf_nan=False,
                                         description="Speedup over eager PyTorch to aim for.")
    rounds: int | None = Field(default=None, ge=1, le=5, description="Most optimization rounds (1-5).")
    initial_config: ConfigLabel | None = Field(default=None, description="Start from this configuration.",
                                               examples=["flat: BLOCK_SIZE=256, NUM_WARPS=8"])
    llm: Literal["auto", "offline", "openai"] | None = Field(
        default=None, description="Generator: offline, openai (the server's LLM endpoint) or auto (the LLM when the "
                                  "server has one); default: the server's KERNELGEN_LLM.")

    @field_validator("initial_config")
    @classmethod
    def _known_config(cls, value: str | None) -> str | None:
        if value is not None:
            config_from_label(value)
        return value


def not_blank(text: str) -> str:
    """Refuse a spec of white space only."""
    if not text.strip():
        raise ValueError("must not be blank")
    return text


SpecText = Annotated[str, StringConstraints(min_length=1), AfterValidator(storable), AfterValidator(not_blank)]


class JobCreate(JobOptions):
    """A job to run: the operator spec in plain language, and its options."""

    spec: SpecText = Field(description="The operator spec, in English or Chinese, or PyTorch code.",
                           examples=["ReLU on a float32 tensor x of shape [64, 64]"])


class ReadCreate(BaseModel):
    """A spec to read without running anything: text, PyTorch code, or a task book."""

    spec: SpecText = Field(description="The operator spec, in English or Chinese, or PyTorch code.",
                           examples=["fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]"])


class ReadsPublic(BaseModel):
    """How each spec of the text was understood (one item for a plain spec, one per task of a task book)."""

    items: list[ReadOutcome]
    read: int = Field(description="How many specs read.")
    questions: int = Field(description="How many specs raised a question.")


class JobLinks(BaseModel):
    """Where to follow a job."""

    self: str
    events: str
    artifacts: str
    zip: str
    cancel: str

    @classmethod
    def of(cls, job_id: int) -> JobLinks:
        """Build the links of a job."""
        base = f"/jobs/{job_id}"
        return cls(self=base, events=f"{base}/events", artifacts=f"{base}/artifacts", zip=f"{base}/artifacts.zip",
                   cancel=f"{base}/cancel")


class JobAccepted(BaseModel):
    """A job just queued."""

    id: int
    status: JobStatus
    links: JobLinks


class JobPublic(StoredJobPublic):
    """A job as listed."""


class JobsPublic(BaseModel):
    """A page of jobs, newest first."""

    items: list[JobPublic]
    total: int
    offset: int
    limit: int


class RoundPublic(BaseModel):
    """One measured version of a job's kernel, with its figures."""

    id: int
    job_id: int
    index: int
    edit_type: str
    config: str
    reason: str
    accuracy_status: str
    performance_status: str
    speedup: float | None
    pct_of_copy: float | None
    accepted: bool
    verdict: str
    figures: dict[str, Any] = Field(description="Accuracy, performance, diagnosis, search and profile details.")
    created_at: datetime

    @classmethod
    def of(cls, row: Round) -> RoundPublic:
        """Shape a round row, parsing its figures."""
        try:
            figures = json.loads(row.figures_json or "{}")
        except ValueError:
            figures = {}
        fields = row.model_dump(exclude={"figures_json"})
        return cls.model_validate(fields | {"figures": figures if isinstance(figures, dict) else {}})


class LlmUsage(BaseModel):
    """What a job's LLM calls cost, summed."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    latency_ms: float
    by_status: dict[str, int]


class JobDetail(JobPublic):
    """A job with its reading, its place in the queue, its rounds and, when it failed or was rejected, why."""

    understood: str | None = Field(default=None, description="How the spec was read (the 'Understood as' block); "
                                                             "null before reading or when it raised a question.")
    reading: Reading | None = Field(default=None, description="The same reading, field by field.")
    queue_position: int | None = Field(description="1-based place among queued jobs; null unless queued.")
    rounds: list[RoundPublic]
    llm_usage: LlmUsage = Field(description="The job's LLM calls: count, tokens, latency, outcomes.")
    error: str | None = Field(description="Why the job failed or was rejected; null otherwise.")
    links: JobLinks


class JobCancelled(BaseModel):
    """A job whose cancellation was accepted."""

    id: int
    status: JobStatus


class ArtifactPublic(BaseModel):
    """A file a job produced."""

    name: str
    round_index: int | None
    sha256: str
    size: int = Field(description="Size in bytes (UTF-8).")
    url: str


class HealthPublic(BaseModel):
    """Whether the service and its database answer, and how busy it is."""

    status: Literal["ok", "degraded"]
    database: str
    queue: int
    running: int
    auth: bool = Field(default=True, description="Whether requests need a bearer token (the web page asks for one).")
