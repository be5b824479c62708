"""A real HTTP server on loopback that speaks the OpenAI chat-completions protocol with scripted replies.

Replies are queued per stage (the `X-KernelGen-Stage` header the client sends). Every request is kept for
assertions. The server can refuse response formats (like endpoints without JSON-schema support), delay an
answer (to trip a client timeout), or answer with an HTTP error.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-coder"


@dataclass
class Reply:
    """One scripted answer: text content, or an HTTP error, after an optional delay."""

    content: str = ""
    status: int = 200
    error: str = ""
    delay_s: float = 0.0
    finish_reason: str = "stop"


@dataclass
class Request:
    """One request the server received."""

    stage: str
    body: dict[str, Any]

    @property
    def user_text(self) -> str:
        """Return the text of every user message, joined."""
        return "\n".join(m["content"] for m in self.body["messages"] if m["role"] == "user")

    @property
    def response_format(self) -> str:
        """Name the response_format type asked for ('none' when absent)."""
        return str((self.body.get("response_format") or {}).get("type", "none"))


@dataclass
class ScriptedLLM:
    """The server's state: replies still to give, requests seen, formats it refuses."""

    url: str = ""
    replies: dict[str, list[Reply]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    refuse_formats: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, stage: str, *replies: str | Reply) -> None:
        """Queue replies for a stage, in order."""
        self.replies.setdefault(stage, []).extend(r if isinstance(r, Reply) else Reply(content=r) for r in replies)

    def seen(self, stage: str) -> list[Request]:
        """Return the requests of one stage, in order."""
        return [r for r in self.requests if r.stage == stage]

    def stages(self) -> list[str]:
        """Return the stage of every request, in order."""
        return [r.stage for r in self.requests]

    def answer(self, stage: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
        """Pick the reply to a request: a refusal of its format, the next scripted reply, or a 500."""
        with self.lock:
            self.requests.append(Request(stage, body))
            wanted = str((body.get("response_format") or {}).get("type", "none"))
            if wanted in self.refuse_formats:
                return 400, _error(f"response_format '{wanted}' is not supported by this server"), 0.0
            queue = self.replies.get(stage, [])
            if not queue:
                return 500, _error(f"no scripted reply left for stage {stage!r}"), 0.0
            reply = queue.pop(0)
        if reply.status != 200:
            return reply.status, _error(reply.error or "scripted error"), reply.delay_s
        prompt = sum(len(m.get("content", "")) for m in body["messages"]) // 4
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", MODEL),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": reply.content}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(reply.content) // 4,
                      "total_tokens": prompt + len(reply.content) // 4},
        }, reply.delay_s


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


def _handler(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, _error(f"no route {self.path}"))
                return
            status, payload, delay = llm.answer(self.headers.get("X-KernelGen-Stage", "unknown"), body)
            if delay:
                time.sleep(delay)
            self._send(status, payload)

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]})
            else:
                self._send(404, _error(f"no route {self.path}"))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Keep test output quiet."""

    return Handler


@contextmanager
def scripted_llm() -> Iterator[ScriptedLLM]:
    """Serve a scripted endpoint on a free loopback port until the block ends."""
    llm = ScriptedLLM()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(llm))
    server.daemon_threads = True
    llm.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield llm
    finally:
        server.shutdown()
        server.server_close()
