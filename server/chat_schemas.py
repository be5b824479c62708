"""Request and response shapes of the web page's conversation API."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from server.schemas import SpecText
from storage.models import ChatMessage, ChatThreadPublic


class MessageCreate(BaseModel):
    """What the person wrote: a spec, an answer to a question, a follow-up, a task book or a file's text."""

    text: SpecText = Field(description="The message, in English or Chinese, or PyTorch code.",
                           examples=["fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]"])
    filename: str | None = Field(default=None, min_length=1, max_length=255, pattern=r"^[^/\\\x00-\x1f]+$",
                                 description="The name of the file the text came from (attached or dropped).",
                                 examples=["taskbook.md"])


class StartCreate(BaseModel):
    """Which task of a task book to start (none for a single reading)."""

    task: int | None = Field(default=None, ge=0, le=999, strict=True)  # `false` is no task number


class MessagePublic(BaseModel):
    """One message as the page draws it, its data parsed."""

    id: int
    thread_id: int
    role: str
    kind: str = Field(description="text, reading, question, tasks, job or error.")
    text: str
    spec_text: str | None
    data: dict[str, Any]
    job_id: int | None
    created_at: datetime

    @classmethod
    def of(cls, message: ChatMessage) -> MessagePublic:
        """Shape a message row."""
        try:
            data = json.loads(message.data_json or "{}")
        except ValueError:
            data = {}
        fields = message.model_dump(exclude={"data_json"})
        return cls.model_validate(fields | {"data": data if isinstance(data, dict) else {}})


class ThreadDetail(ChatThreadPublic):
    """A thread with its messages, oldest first."""

    messages: list[MessagePublic]


class ThreadsPublic(BaseModel):
    """The caller's threads, most recently active first."""

    items: list[ChatThreadPublic]
