"""Talk to the endpoint through the `openai` client; every call is timed and its tokens counted."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import openai
from pydantic import Field

from agent.llm.config import LlmConfig
from storage.models import LlmCallBase

logger = logging.getLogger(__name__)


class LlmError(RuntimeError):
    """The LLM could not give a usable answer; the message says why."""


class LlmUnavailable(LlmError):
    """The endpoint could not be reached, timed out or refused the request; the message says which."""


class FormatRefused(RuntimeError):
    """The endpoint rejected the response_format asked for (it does not support that structured mode)."""


class LlmCall(LlmCallBase):
    """One request to the endpoint as the client records it (the stored row's fields, plus its id)."""

    uid: str = Field(default_factory=lambda: uuid.uuid4().hex)  # stored again (upsert) when found invalid


Message = dict[str, str]


def _ignore(call: LlmCall) -> None:
    """Drop call records (the default when nothing stores them)."""


class LlmClient:
    """A chat-completions client for one job: answers as text, calls recorded through `record`."""

    def __init__(self, config: LlmConfig, record: Callable[[LlmCall], None] = _ignore) -> None:
        self.config = config
        self.record = record
        self.calls: list[LlmCall] = []
        # The structured mode the endpoint accepted last; auto starts from the richest.
        self.structured_mode: str = "json_schema" if config.structured == "auto" else config.structured
        self._client = openai.OpenAI(
            base_url=config.base_url, api_key=config.api_key or "unused",
            timeout=config.timeout_s, max_retries=config.max_retries,
        )

    def chat(
        self, stage: str, messages: list[Message], *, response_format: dict[str, Any] | None = None, attempt: int = 1,
    ) -> tuple[str, LlmCall]:
        """Send one chat-completions request; return the reply text and its call record."""
        call = LlmCall(stage=stage, model=self.config.model, attempt=attempt,
                       response_format=(response_format or {}).get("type", "none"))
        kwargs: dict[str, Any] = {"response_format": response_format} if response_format else {}
        started = time.monotonic()
        try:
            completion = self._client.chat.completions.create(
                model=self.config.model, messages=messages,  # type: ignore[arg-type]
                temperature=self.config.temperature, max_tokens=self.config.max_tokens,
                extra_headers={"X-KernelGen-Stage": stage}, **kwargs,
            )
        except openai.APIStatusError as exc:
            call.latency_ms = 1000 * (time.monotonic() - started)
            # Servers without structured output answer 400/422; one about the context length is another problem.
            refused = (response_format is not None and exc.status_code in (400, 422)
                       and not any(w in _detail(exc).lower() for w in ("context length", "maximum context", "token")))
            self._finish(call, "error", f"HTTP {exc.status_code}: {_detail(exc)}")
            if refused:
                raise FormatRefused(call.error) from exc
            raise LlmUnavailable(self._describe(stage, exc)) from exc
        except openai.APIError as exc:  # timeouts and connection errors, after the client's retries
            call.latency_ms = 1000 * (time.monotonic() - started)
            self._finish(call, "error", f"{type(exc).__name__}: {exc}")
            raise LlmUnavailable(self._describe(stage, exc)) from exc
        call.latency_ms = 1000 * (time.monotonic() - started)
        if completion.usage is not None:
            call.prompt_tokens = completion.usage.prompt_tokens or 0
            call.completion_tokens = completion.usage.completion_tokens or 0
        choice = completion.choices[0] if completion.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        if choice is not None and choice.finish_reason == "length":
            call.error = f"the answer was cut off at max_tokens={self.config.max_tokens}"
        self._finish(call, "ok", call.error)
        return text, call

    def mark_invalid(self, call: LlmCall, reason: str) -> None:
        """Note that an answered call was not usable (its record is updated and stored again)."""
        call.status, call.error = "invalid", reason[:500]
        self.record(call)

    def _finish(self, call: LlmCall, status: str, error: str) -> None:
        call.status, call.error = status, error[:500]
        self.calls.append(call)
        self.record(call)
        logger.info("llm %s: %s in %.0f ms (%d+%d tokens) %s", call.stage, status, call.latency_ms,
                    call.prompt_tokens, call.completion_tokens, call.error)

    def _describe(self, stage: str, exc: openai.APIError) -> str:
        where = f"the LLM endpoint {self.config.base_url} (model {self.config.model})"
        retries = f"after {self.config.max_retries} retries" if self.config.max_retries else "with no retries"
        if isinstance(exc, openai.APITimeoutError):
            return f"{where} did not answer the {stage} request within {self.config.timeout_s:g} s ({retries})"
        if isinstance(exc, openai.APIConnectionError):
            return f"{where} could not be reached for the {stage} request ({retries}): {exc}"
        if isinstance(exc, openai.AuthenticationError):
            return f"{where} refused the API key (HTTP 401): set KERNELGEN_LLM_API_KEY"
        if isinstance(exc, openai.NotFoundError):
            return f"{where} answered 404 for the {stage} request: check the base URL (…/v1) and the model name"
        if isinstance(exc, openai.APIStatusError):
            return f"{where} answered HTTP {exc.status_code} to the {stage} request: {_detail(exc)}"
        return f"{where} failed on the {stage} request: {exc}"


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])[:300]
    return str(exc.message)[:300]
