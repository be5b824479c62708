"""Fixtures of the API tests: live servers (real uvicorn on loopback, real databases, real jobs)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from kernelgen.settings import Settings
from tests.server.live import LiveServer, database, serve


@pytest.fixture(params=["sqlite", "postgresql"])
def db_kind(request: pytest.FixtureRequest) -> str:
    """Which database the server uses: every API test runs on both (PostgreSQL when CI provides it)."""
    return str(request.param)


@pytest.fixture
def start_server(tmp_path: Path, db_kind: str) -> Iterator[Callable[..., LiveServer]]:
    """Start servers with settings overrides; every one stops at the end of the test."""
    with ExitStack() as stack:

        def start(**overrides: Any) -> LiveServer:
            url = stack.enter_context(database(db_kind, tmp_path))
            settings = Settings(  # type: ignore[call-arg]
                _env_file=None, database_url=url, work_dir=tmp_path / "work", artifact_root=tmp_path / "jobs",
                **overrides,
            )
            return stack.enter_context(serve(settings))

        yield start


@pytest.fixture
def live(start_server: Callable[..., LiveServer]) -> LiveServer:
    """A server with the default settings (no tokens, two jobs at once)."""
    return start_server()
