"""Which generator a job uses, and the LLM endpoint's settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from kernelgen.settings import Settings

LlmMode = Literal["auto", "offline", "openai"]
Structured = Literal["auto", "json_schema", "json_object", "none"]


class LlmConfigError(ValueError):
    """An LLM was asked for but none is configured; the message says what to set."""


class LlmConfig(BaseModel):
    """One OpenAI-compatible endpoint and how to talk to it."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 300.0
    max_retries: int = 2
    temperature: float = 0.2
    max_tokens: int = 8192
    structured: Structured = "auto"
    max_reasks: int = 2
    max_repairs: int = 3

    def label(self) -> str:
        """Name the generator as jobs record it: `openai:<model>`."""
        return f"openai:{self.model}"


def resolve_llm(requested: str | None, settings: Settings) -> LlmConfig | None:
    """Return the endpoint a job talks to, or None for the offline generator."""
    mode = requested or settings.llm
    if mode not in ("auto", "offline", "openai"):
        raise LlmConfigError(f"unknown generator {mode!r}: use offline, openai or auto")
    configured = bool(settings.llm_base_url and settings.llm_model)
    if mode == "offline" or (mode == "auto" and not configured):
        return None
    if not configured:
        raise LlmConfigError(
            "the openai generator needs an endpoint: set KERNELGEN_LLM_BASE_URL (e.g. http://127.0.0.1:8001/v1) "
            "and KERNELGEN_LLM_MODEL (and KERNELGEN_LLM_API_KEY for a hosted API), or use --llm offline"
        )
    assert settings.llm_base_url is not None and settings.llm_model is not None
    return LlmConfig(
        base_url=settings.llm_base_url, model=settings.llm_model, api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries,
        temperature=settings.llm_temperature, max_tokens=settings.llm_max_tokens,
        structured=settings.llm_structured, max_reasks=settings.llm_max_reasks,
        max_repairs=settings.llm_max_repairs,
    )
