"""While an event stream is open, re-check that its caller's token still admits it to what it follows.

A stream is authorized once, when it opens; without this a revoked token would go on receiving a job's events for
as long as the job runs. The check runs before any event is sent, and otherwise at the stream's next wake once
RECHECK_S have passed (a job stream wakes at least at every heartbeat, a batch stream every half second).
"""

from __future__ import annotations

import json
import time

from fastapi import HTTPException
from fastapi.security import HTTPAuthorizationCredentials
from sqlalchemy import Engine

from kernelgen.settings import Settings
from server.principals import Principal, authenticate

RECHECK_S = 5.0
REVOKED = f"event: error\ndata: {json.dumps({'status': 401, 'detail': 'the token was revoked'})}\n\n"


class StreamAccess:
    """The credentials a stream was opened with, the principal they named then, and the owner of what it follows."""

    def __init__(self, settings: Settings, engine: Engine, credentials: HTTPAuthorizationCredentials | None,
                 owner: str | None) -> None:
        self.settings, self.engine, self.credentials, self.owner = settings, engine, credentials, owner
        self.opened_by = self._principal()
        self.checked = time.monotonic()  # the request's own authentication

    def allows(self, sending: bool) -> bool:
        """Tell whether the caller may still see the stream: always checked before sending, else when due (blocks)."""
        if not sending and time.monotonic() - self.checked < RECHECK_S:
            return True
        self.checked = time.monotonic()
        principal = self._principal()
        # The same principal still: once the last user is revoked, every request is the local user, not the token's.
        return principal is not None and principal == self.opened_by and principal.owns(self.owner)

    def _principal(self) -> Principal | None:
        try:
            return authenticate(self.settings, self.engine, self.credentials)
        except HTTPException:
            return None
