"""The loopback rule, configured tokens and the request body limit."""

from __future__ import annotations

import ipaddress
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Tell whether a bind address reaches this machine only."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def active_tokens(tokens: list[str]) -> list[str]:
    """Return the configured tokens that are not blank."""
    return [token for token in tokens if token.strip()]


class BodyLimitMiddleware:
    """Answer 413 when a request body is larger than the limit, by header or by what arrives."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body up to the limit, then hand it to the app."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            code = 413 if length.isdigit() else 400
            await self._refuse(send, code, "request body too large" if code == 413 else "bad Content-Length")
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(send, 413, "request body too large")
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, code: int, detail: str) -> None:
        """Send a JSON error, with the limit in the message."""
        text = f"{detail} (limit {self.max_bytes} bytes)" if code == 413 else detail
        body = json.dumps({"detail": text}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        await send({"type": "http.response.start", "status": code, "headers": headers})
        await send({"type": "http.response.body", "body": body})


UNSAFE_METHODS = (b"POST", b"PUT", b"PATCH", b"DELETE")


class SameOriginMiddleware:
    """Refuse (403) a write whose Origin header names another site, unless CORS allows that origin.

    The page sends its token in a header, which another site cannot make a browser send; this also covers a
    loopback server without tokens, where a cross-site form or fetch would otherwise reach the API.
    """

    def __init__(self, app: ASGIApp, allowed_origins: list[str], loopback_only: bool = False) -> None:
        self.app = app
        self.allowed = {origin.rstrip("/").lower() for origin in allowed_origins}
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the Host of every request on a loopback server, and the origin of unsafe requests."""
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            host = headers.get(b"host", b"").decode("latin-1").lower()
            name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
            # DNS rebinding: another site's name resolving to 127.0.0.1 would make its pages same-origin.
            if self.loopback_only and host and not is_loopback(name):
                await self._refuse(send, f"host {host[:100]} is not this loopback server's name")
                return
            origin = headers.get(b"origin", b"").decode("latin-1").rstrip("/").lower()
            if scope["method"].encode() in UNSAFE_METHODS and origin and origin not in self.allowed \
                    and origin.split("://", 1)[-1] != host:
                await self._refuse(send, f"cross-site request refused (origin {origin[:100]})")
                return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, detail: str) -> None:
        body = json.dumps({"detail": detail}).encode()
        await send({"type": "http.response.start", "status": 403, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
