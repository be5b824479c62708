"""The scripted model server every whole-job test here talks to."""

from collections.abc import Iterator

import pytest

from tests.scripted_llm import ScriptedLLM, scripted_llm


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    """Serve a scripted OpenAI-compatible endpoint on loopback for one test."""
    with scripted_llm() as server:
        yield server
