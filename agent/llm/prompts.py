"""Render the Jinja2 prompt templates of `prompts/` into chat messages (StrictUndefined: no silent gaps)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jinja2

from agent.llm.client import Message
from agent.targets import target_text
from prompts import PROMPT_DIR

STAGES = ("requirements", "definition", "triton", "baseline", "accuracy", "performance", "repair", "diagnosis",
          "edit")


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPT_DIR), undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False,
    )
    env.filters["target_text"] = target_text
    env.filters["tojson_pretty"] = lambda value: json.dumps(value, indent=1, ensure_ascii=False, default=str)
    return env


def render_prompt(stage: str, **context: Any) -> list[Message]:
    """Return the system and user messages of one stage."""
    if stage not in STAGES:
        raise ValueError(f"no prompt for stage {stage!r}; stages: {', '.join(STAGES)}")
    env = _environment()
    return [
        {"role": "system", "content": env.get_template("system.md.j2").render(**context).strip()},
        {"role": "user", "content": env.get_template(f"{stage}.md.j2").render(**context).strip()},
    ]


def render_reask(*, problem: str, kind: str, schema: dict[str, Any]) -> str:
    """Return the follow-up that tells the model what was wrong with its answer."""
    return _environment().get_template("reask.md.j2").render(problem=problem, kind=kind, schema=schema).strip()
