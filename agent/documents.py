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
    env.filters["shapes"] = shown_shapes
    return env


def shown_shapes(shapes: dict[str, list[int]]) -> str:
    """Write a case's shapes the way the documents name them: `x [8192, 4096], bias [4096]`."""
    return ", ".join(f"{name} {list(shape)}" for name, shape in shapes.items())


def render(template: str, **context: Any) -> str:
    """Render one of agent/templates/*.md.j2."""
    return _environment().get_template(template).render(**context)
