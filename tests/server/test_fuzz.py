"""Schemathesis over the whole API of a live server: no server error, no answer its OpenAPI schema forbids."""

# Every check runs (status codes, content types, response bodies and headers, `Allow` on unsupported methods, auth,
# invalid input rejected, resources created and then found), in every phase (examples, coverage, fuzzing, stateful
# links). One check is left out: `positive_data_acceptance`, because the API refuses some schema-valid requests by
# design, with a 422 naming the reason (a device this server lacks, a task book, an LLM it has no endpoint for, a
# launch parameter of another schedule, a spec over the byte limit).

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.server.live import LiveServer, submit, wait_final

TOKEN = "fuzz-token"
EXAMPLES = 20
ST = Path(sys.executable).parent / "st"  # schemathesis' command, installed with the test extras


def cancel_all(live: LiveServer, timeout: float = 120.0) -> None:
    """Cancel every job the fuzzing queued, and wait until none is queued or running."""
    deadline = time.monotonic() + timeout
    with live.client() as client:
        while (health := client.get("/healthz").json())["queue"] or health["running"]:
            assert time.monotonic() < deadline, health
            for status in ("queued", "running"):
                for job in client.get("/jobs", params={"status": status, "limit": 200}).json()["items"]:
                    client.post(f"/jobs/{job['id']}/cancel")
            time.sleep(0.2)


def schemathesis(live: LiveServer, folder: Path, *options: str) -> None:
    """Run schemathesis against the server's own schema; fail with its report when it finds anything."""
    command = [str(ST), "run", f"{live.url}/openapi.json", "--checks", "all",
               "--exclude-checks", "positive_data_acceptance", "--header", f"Authorization: Bearer {TOKEN}",
               "--max-examples", str(EXAMPLES), "--seed", "1", "--request-timeout", "30", "--no-color", *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=folder)  # its cache goes there
    assert done.returncode == 0, done.stdout[-12000:] + done.stderr[-2000:]


@pytest.mark.slow_on_postgresql
def test_schemathesis_finds_no_server_error_and_no_schema_mismatch(
    start_server: Callable[..., LiveServer], tmp_path: Path,
) -> None:
    live = start_server(api_tokens=[TOKEN], concurrency=1, max_request_bytes=64 * 1024, max_spec_bytes=4096)
    with live.client() as client:  # a job with files, so ids 1 and up lead somewhere
        wait_final(client, submit(client, "foo bar"))
    schemathesis(live, tmp_path, "--exclude-path-regex", "/events$")
    # An event stream lasts until its job ends: streams are fuzzed once every job the fuzzing queued is over.
    cancel_all(live)
    schemathesis(live, tmp_path, "--include-path-regex", "/events$", "--phases", "examples,coverage,fuzzing")
    with live.client() as client:  # the server still works after the fuzzing
        assert client.get("/healthz").json()["status"] == "ok"


def test_unsupported_methods_are_refused_with_the_methods_allowed(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    schema = httpx.get(f"{live.url}/openapi.json").json()
    with live.client() as client:
        for path, operations in schema["paths"].items():
            concrete = path.replace("{job_id}", "1").replace("{thread_id}", "1").replace("{name}", "report.json")
            documented = {method.upper() for method in operations}
            for method in sorted({"OPTIONS", "PUT", "DELETE", "PATCH"} - documented):
                response = client.request(method, concrete)
                assert response.status_code == 405, (method, path, response.text)
                assert set(response.headers["allow"].split(", ")) == documented, (method, path)
                assert response.json() == {"detail": "Method Not Allowed"}
