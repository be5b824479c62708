"""Admission: slow code-spec reads fill the sandbox slots, the excess is answered 429 at once, the server stays live.

The full check of the issue (100 slow code specs from one token) runs when KERNELGEN_TEST_ADMISSION_FULL=1 is set;
CI runs the small one (two slots, six reads).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.runtime.admission import SLOTS
from agent.runtime.sandbox import run_file
from kernelgen.settings import Settings
from tests.server.live import LiveServer, database, serve

FULL = os.environ.get("KERNELGEN_TEST_ADMISSION_FULL") == "1"


def slow_spec(seconds: float, tag: int) -> str:
    """A KernelBench-style code spec whose module sleeps when it is imported (the trace and the check import it)."""
    return f'''import time
import torch
import torch.nn as nn

time.sleep({seconds})  # request {tag}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[int, int], LiveServer]]:
    """Start a SQLite server with these slots (total, per principal; 0: the defaults) and two tokens."""
    with ExitStack() as stack:

        def started(total: int, per_principal: int) -> LiveServer:
            url = stack.enter_context(database("sqlite", tmp_path))
            settings = Settings(  # type: ignore[call-arg]
                _env_file=None, database_url=url, work_dir=tmp_path / "work", artifact_root=tmp_path / "jobs",
                api_tokens=["alice:tok-a", "bob:tok-b"], max_sandboxes=total,
                max_sandboxes_per_principal=per_principal,
                sandbox_allow_unisolated=True,  # code specs run where bubblewrap cannot start (CI has it)
            )
            return stack.enter_context(serve(settings))

        yield started
    SLOTS.configure()  # the process's defaults again, for the tests that run sandboxes without a service


class Sampler:
    """Time GET /healthz and GET /jobs every 50 ms on a thread of its own until stopped."""

    def __init__(self, live: LiveServer) -> None:
        self.live = live
        self.times: dict[str, list[float]] = {"/healthz": [], "/jobs": []}
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        with self.live.client(token="tok-b", timeout=10) as client:
            while not self._stop.wait(0.05):
                for path, times in self.times.items():
                    started = time.monotonic()
                    try:
                        code = client.get(path).status_code
                    except httpx.HTTPError as exc:
                        self.failures.append(f"{path}: {exc!r}")
                        continue
                    times.append(time.monotonic() - started)
                    if code != 200:
                        self.failures.append(f"{path}: {code}")

    def p95(self, path: str) -> float:
        return statistics.quantiles(self.times[path], n=20)[-1]


def flood(live: LiveServer, token: str, count: int, seconds: float, gap_s: float = 0.0) -> list[dict[str, Any]]:
    """Send `count` slow code-spec reads at once (or one every gap_s); return status, Retry-After and time of each."""

    def one(tag: int) -> dict[str, Any]:
        time.sleep(tag * gap_s)
        with live.client(token=token, timeout=600) as client:
            started = time.monotonic()
            response = client.post("/read", json={"spec": slow_spec(seconds, tag)})
            return {"status": response.status_code, "retry_after": response.headers.get("retry-after"),
                    "seconds": time.monotonic() - started, "body": response.json()}

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one, range(count)))


def check_flood(results: list[dict[str, Any]], accepted_at_most: int) -> list[dict[str, Any]]:
    """Every read is answered: a reading, or a 429 at once with Retry-After; return the accepted ones."""
    accepted = [r for r in results if r["status"] == 200]
    refused = [r for r in results if r["status"] == 429]
    assert len(accepted) + len(refused) == len(results), [r["status"] for r in results]
    assert 1 <= len(accepted) and (accepted_at_most == 0 or len(accepted) <= accepted_at_most)
    for r in accepted:
        assert r["body"]["read"] == 1, r["body"]  # traced in the sandbox, to the end
    # "At once": a refusal never waits for a slot, so it comes back before any admitted read could finish (each one
    # starts a sandbox and sleeps); an absolute second would fail on a loaded two-core machine, as CI's can be.
    fastest_read = min(r["seconds"] for r in accepted)
    for r in refused:
        assert int(r["retry_after"]) >= 1 and r["seconds"] < min(fastest_read, 5.0), (r, fastest_read)
        assert "sandbox slot" in r["body"]["detail"]
    return accepted


@pytest.mark.bubblewrap
def test_the_excess_of_slow_reads_gets_429_at_once_and_the_server_stays_live(
        start: Callable[[int, int], LiveServer]) -> None:
    server = start(2, 2)
    with Sampler(server) as sampler:
        results = flood(server, "tok-a", 6, seconds=1)
    assert len(check_flood(results, accepted_at_most=2)) == 2  # all six arrive while the first two run
    assert not sampler.failures, sampler.failures[:5]
    assert len(sampler.times["/healthz"]) >= 10
    assert sampler.p95("/healthz") < 0.1 and sampler.p95("/jobs") < 0.1, sampler.times
    assert SLOTS.busy == 0  # every slot came back
    with server.client(token="tok-a") as alice:  # and reads are admitted again
        assert alice.post("/read", json={"spec": "relu(x), x [64] fp32"}).json()["read"] == 1


def test_a_principal_is_held_to_its_share_and_chat_messages_are_admitted_too(
        start: Callable[[int, int], LiveServer]) -> None:
    server = start(3, 1)
    with server.client(token="tok-a") as alice, server.client(token="tok-b") as bob:
        assert SLOTS.try_acquire("alice")  # alice's one slot is busy (as a slow read would hold it)
        try:
            refused = alice.post("/read", json={"spec": "relu(x), x [64] fp32"})
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
            assert "1 of 1 yours" in refused.json()["detail"]
            thread = alice.post("/threads").json()["id"]
            said = alice.post(f"/threads/{thread}/messages", json={"text": "relu(x), x [64] fp32"})
            assert said.status_code == 429 and "retry-after" in said.headers
            assert bob.post("/read", json={"spec": "relu(x), x [64] fp32"}).json()["read"] == 1  # bob has his own
        finally:
            SLOTS.release("alice")
        assert alice.post(f"/threads/{thread}/messages", json={"text": "relu(x), x [64] fp32"}).status_code == 200


def test_a_jobs_sandbox_run_waits_for_a_slot_of_the_global_bound(
        start: Callable[[int, int], LiveServer], tmp_path: Path) -> None:
    start(1, 1)  # the service sets the process's bounds
    script = "import json, sys\njson.dump({'status': 'pass'}, open(sys.argv[2], 'w'))\n"
    done: list[str] = []

    def run() -> None:
        result = run_file({"ok.py": script}, "ok.py", tmp_path / "run", device="cpu", timeout_s=60, trusted=True)
        done.append(result.status)

    assert SLOTS.try_acquire("alice")  # the only slot
    runner = threading.Thread(target=run)
    try:
        runner.start()
        runner.join(timeout=2)
        assert runner.is_alive() and not done  # a job's run queues for the slot rather than being refused
    finally:
        SLOTS.release("alice")
    runner.join(timeout=60)
    assert done == ["pass"] and SLOTS.busy == 0


@pytest.mark.skipif(not FULL, reason="the full acceptance check: set KERNELGEN_TEST_ADMISSION_FULL=1 (minutes)")
def test_acceptance_100_slow_code_specs_from_one_token(start: Callable[[int, int], LiveServer]) -> None:
    server = start(0, 0)  # the defaults
    with Sampler(server) as sampler:
        results = flood(server, "tok-a", 100, seconds=2, gap_s=0.7)  # the pace
    accepted = check_flood(results, accepted_at_most=0)
    assert not sampler.failures, sampler.failures[:5]
    figures = {"requests": len(results), "accepted": len(accepted), "refused": len(results) - len(accepted),
               "slots": (SLOTS.total, SLOTS.per_principal), "samples": len(sampler.times["/healthz"]),
               "healthz_p95_ms": round(1000 * sampler.p95("/healthz"), 1),
               "healthz_max_ms": round(1000 * max(sampler.times["/healthz"]), 1),
               "jobs_p95_ms": round(1000 * sampler.p95("/jobs"), 1),
               "read_s_max": round(max(r["seconds"] for r in accepted), 1),
               "refused_ms_max": round(1000 * max(r["seconds"] for r in results if r["status"] == 429), 1)}
    print(f"\nadmission figures: {figures}")
    assert sampler.p95("/healthz") < 0.1 and sampler.p95("/jobs") < 0.1, figures
