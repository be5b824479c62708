"""An event stream of a token revoked while it is open ends at the next event, for a job and for a batch."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from storage import batches, crud
from storage.db import make_engine
from storage.users import add_user, revoke_user
from tests.server.live import LiveServer

SECRET = "a stage message the revoked token must not see"


def follow(live: LiveServer, token: str, path: str, messages: list[dict[str, Any]], opened: threading.Event) -> None:
    """Read an SSE stream into messages ({event, data}) until it ends; set `opened` at its first message."""
    current: dict[str, Any] = {}
    with live.client(token=token, timeout=30) as client, client.stream("GET", path) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line and current:
                messages.append(current)
                opened.set()
                current = {}
            elif line and not line.startswith(":"):
                field, _, value = line.partition(": ")
                current[field] = json.loads(value) if field == "data" else value


def revoked_mid_stream(live: LiveServer, path: Callable[[int], str]) -> list[dict[str, Any]]:
    """Open carol's stream of her running job, revoke her, record one more event; return what the stream sent."""
    engine = make_engine(live.settings.database_url)
    token = add_user(engine, "carol")
    job = crud.create_job(engine, "relu(x), x [64] fp32", "", status="running", owner="carol")
    crud.add_event(engine, job, "queued", "job queued")
    messages: list[dict[str, Any]] = []
    opened = threading.Event()
    reader = threading.Thread(target=follow, args=(live, token, path(job), messages, opened), daemon=True)
    reader.start()
    assert opened.wait(10), "the stream sent nothing"
    revoke_user(engine, "carol")
    started = time.monotonic()
    crud.add_event(engine, job, "accuracy", SECRET)
    reader.join(timeout=15)
    assert not reader.is_alive(), f"the stream went on after the token was revoked: {messages}"
    assert time.monotonic() - started < 5
    engine.dispose()
    return messages


def test_a_job_stream_ends_at_the_next_event_once_its_token_is_revoked(
        start_server: Callable[..., LiveServer]) -> None:
    messages = revoked_mid_stream(start_server(), lambda job: f"/jobs/{job}/events")
    assert [m["event"] for m in messages] == ["queued", "error"], messages
    assert messages[-1]["data"] == {"status": 401, "detail": "the token was revoked"}
    assert SECRET not in json.dumps(messages)


def test_a_batch_stream_ends_at_the_next_event_once_its_token_is_revoked(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    engine = make_engine(live.settings.database_url)

    def batch_of(job: int) -> str:
        batch = batches.create_batch(engine, "carol", "one task", "specs", "{}", [("relu", "relu(x), x [64] fp32")])
        batches.link_job(engine, batches.list_tasks(engine, batch)[0].id or 0, job)
        return f"/batches/{batch}/events"

    messages = revoked_mid_stream(live, batch_of)
    assert [m["event"] for m in messages] == ["queued", "error"], messages
    assert SECRET not in json.dumps(messages)
    engine.dispose()
