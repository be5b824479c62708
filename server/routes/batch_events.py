"""A batch's progress as one resumable event stream: its tasks' job events, numbered by their row id."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import anyio
from fastapi import Request

from server.redact import Redactor
from server.service import JobService
from server.stream_access import REVOKED, StreamAccess
from storage import batches as stored

POLL_S = 0.5
HEARTBEAT_S = 10.0


def _poll(service: JobService, redactor: Redactor, batch_id: int, after: int,
          access: StreamAccess) -> tuple[bool, list[str], bool]:
    """Read whether the batch is over (first, so nothing is missed), then its new events as SSE messages, and
    whether the caller's token still admits it."""
    over = stored.get_batch(service.engine, batch_id) is None or not stored.open_tasks(service.engine, batch_id)
    messages = []
    for index, event in stored.batch_events(service.engine, batch_id, after):
        data = {"id": event.id, "task": index, "job_id": event.job_id, "seq": event.seq, "stage": event.stage,
                "message": redactor.text(event.message), "created_at": event.created_at.isoformat()}
        messages.append((event.id or 0, f"id: {event.id}\nevent: {' '.join(event.stage.split()) or 'progress'}\n"
                                        f"data: {json.dumps(data)}\n\n"))
    return over, [m for _, m in sorted(messages)], access.allows(sending=bool(messages) or over)


async def stream_batch(request: Request, service: JobService, redactor: Redactor, batch_id: int,
                       after: int, access: StreamAccess) -> AsyncIterator[str]:
    """Yield the batch's events as they are recorded, heartbeats while idle, and `end` once every task is over; an
    `error` event ends it once the caller's token no longer admits it (revoked)."""
    beat = time.monotonic()
    while True:
        over, messages, allowed = await anyio.to_thread.run_sync(_poll, service, redactor, batch_id, after, access)
        if not allowed:
            yield REVOKED
            return
        for message in messages:
            after = int(message.split("\n", 1)[0].removeprefix("id: "))
            yield message
        if over:
            yield f"event: end\ndata: {json.dumps({'batch': batch_id})}\n\n"
            return
        if messages:
            beat = time.monotonic()
        elif time.monotonic() - beat >= HEARTBEAT_S:
            beat = time.monotonic()
            yield ": heartbeat\n\n"
        if await request.is_disconnected():
            return
        await anyio.sleep(POLL_S)
