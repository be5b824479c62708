"""Render the markdown documents a job leaves: definition and optimization log."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from agent.targets import target_text

TEMPLATES = Path(__file__).parent / "templates"


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["target_text"] = target_text
    return env


def render(template: str, **context: Any) -> str:
    """Render one of agent/templates/*.md.j2."""
    return _environment().get_template(template).render(**context)
