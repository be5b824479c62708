"""Ask for JSON that fits a schema, or for code files; re-ask (bounded) when the answer does not fit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.llm.client import FormatRefused, LlmClient, LlmError, Message
from agent.llm.fences import ExtractionError, extract_files, extract_json
from agent.llm.prompts import render_reask

Reply = TypeVar("Reply", bound=BaseModel)
_DOWNGRADE = {"json_schema": "json_object", "json_object": "none", "none": None}


class LlmReplyError(LlmError):
    """The model kept answering something unusable after every re-ask; the message says what was wrong."""


def _response_format(mode: str, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def ask_json(client: LlmClient, stage: str, messages: list[Message], reply_type: type[Reply]) -> Reply:
    """Ask for one JSON object of reply_type: schema mode where honoured, else JSON mode, validated."""
    schema = reply_type.model_json_schema()
    conversation = list(messages)
    attempts = client.config.max_reasks + 1
    problem = ""
    attempt = 0
    while attempt < attempts:
        mode = client.structured_mode
        try:
            text, call = client.chat(stage, conversation, attempt=attempt + 1,
                                     response_format=_response_format(mode, stage, schema))
        except FormatRefused:
            lower = _DOWNGRADE[mode] if client.config.structured == "auto" else None
            if lower is None:
                raise LlmReplyError(f"the endpoint refused the {mode} response format for {stage}; set "
                                    f"KERNELGEN_LLM_STRUCTURED=auto to fall back") from None
            client.structured_mode = lower  # remembered for the rest of the job
            continue
        attempt += 1
        try:
            return reply_type.model_validate(extract_json(text))
        except (ExtractionError, ValidationError) as exc:
            problem = _explain(exc)
            client.mark_invalid(call, problem)
            conversation += [{"role": "assistant", "content": text},
                             {"role": "user", "content": render_reask(problem=problem, kind="json", schema=schema)}]
    raise LlmReplyError(f"the model's {stage} answer did not fit the schema after {attempts} tries: {problem}")


def ask_files(
    client: LlmClient, stage: str, messages: list[Message], names: list[str], *,
    required: list[str] | None = None, check: Callable[[dict[str, str]], str | None] = lambda files: None,
) -> dict[str, str]:
    """Ask for Python files in fenced blocks; re-ask while a required file is missing, does not parse or fails check."""
    conversation = list(messages)
    needed = required if required is not None else names
    attempts = client.config.max_reasks + 1
    problem = ""
    for attempt in range(1, attempts + 1):
        text, call = client.chat(stage, conversation, attempt=attempt)
        files = extract_files(text, names)
        missing = [n for n in needed if n not in files]
        problem = (f"the answer has no code block for {', '.join(missing)} (label each block with its file name)"
                   if missing else _syntax_problem(files) or check(files) or "")
        if call.error.startswith("the answer was cut off"):
            problem = f"{call.error}; answer with the code only, no explanation" + (f"; {problem}" if problem else "")
        if not problem:
            return files
        client.mark_invalid(call, problem)
        conversation += [{"role": "assistant", "content": text},
                         {"role": "user", "content": render_reask(problem=problem, kind="code", schema={})}]
    raise LlmReplyError(f"the model's {stage} answer was not usable after {attempts} tries: {problem}")


def _syntax_problem(files: dict[str, str]) -> str | None:
    for name, code in files.items():
        try:
            compile(code, name, "exec")
        except SyntaxError as exc:
            return f"{name} does not parse: {exc.msg} at line {exc.lineno}"
    return None


def _explain(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in exc.errors()[:8])
    return str(exc)
