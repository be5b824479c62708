"""Fuzz every operation of the app's own OpenAPI schema against a live server: never a 5xx, errors in JSON."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error

from tests.server.live import LiveServer, submit, wait_final

TOKEN = "fuzz-token"
EXAMPLES = 25


def wait_idle(live: LiveServer, timeout: float = 120.0) -> None:
    """Wait until no job is queued or running."""
    deadline = time.monotonic() + timeout
    with live.client() as client:
        while (health := client.get("/healthz").json())["queue"] or health["running"]:
            assert time.monotonic() < deadline, health
            time.sleep(0.2)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")  # from schemathesis itself
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_operation_fails_on_generated_input(start_server: Callable[..., LiveServer], mode: GenerationMode) -> None:
    live = start_server(api_tokens=[TOKEN], concurrency=1, max_request_bytes=64 * 1024, max_spec_bytes=4096)
    with live.client() as client:  # a job with files, so ids 1 and up lead somewhere
        wait_final(client, submit(client, "foo bar"))
    schema = schemathesis.openapi.from_url(f"{live.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    # An event stream lasts until its job ends: fuzz it last, once every job the fuzzing queued is over.
    fuzzed = sorted(operations, key=lambda op: op.path.endswith("/events"))
    if mode == GenerationMode.NEGATIVE:  # an operation without inputs has no invalid input
        fuzzed = [op for op in fuzzed if op.path_parameters or op.query or op.body]
    headers = {"Authorization": f"Bearer {TOKEN}"}

    for operation in fuzzed:
        if operation.path.endswith("/events"):
            wait_idle(live)

        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case: Case) -> None:
            response = case.call_and_validate(base_url=live.url, headers=headers, checks=[not_a_server_error],
                                              timeout=30)
            if response.status_code >= 400:
                assert response.headers["content-type"] == ["application/json"], response.text
                assert isinstance(response.json()["detail"], str), response.text

        check()

    with live.client() as client:  # the server still works after the fuzzing
        assert client.get("/healthz").json()["status"] == "ok"
