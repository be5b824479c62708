"""The Jinja2 prompt templates of the LLM-driven stages (data, shipped with the package)."""

from pathlib import Path

PROMPT_DIR = Path(__file__).parent
