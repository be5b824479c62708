"""Submit, list, inspect and cancel jobs through a live server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from tests.server.live import FINAL, RELU, SLOW, LiveServer, submit, wait_final, wait_status


def test_a_submitted_job_is_verified_and_shows_its_rounds(live: LiveServer) -> None:
    with live.client() as client:
        response = client.post("/jobs", json={"spec": RELU, "device": "cpu", "rounds": 2, "target_speedup": 1.5})
        assert response.status_code == 202, response.text
        body = response.json()
        job_id = body["id"]
        assert body["status"] == "queued"
        assert response.headers["location"] == f"/jobs/{job_id}" == body["links"]["self"]
        assert body["links"]["events"] == f"/jobs/{job_id}/events"
        assert body["links"]["zip"] == f"/jobs/{job_id}/artifacts.zip"
        job = wait_final(client, job_id)
        assert job["status"] == "verified", job
        assert job["op_name"] == "relu" and job["stage"] == "finalize" and job["error"] is None
        assert job["queue_position"] is None
        assert job["rounds"][0]["accuracy_status"] == "pass"
        assert job["rounds"][0]["figures"]["accuracy"]["status"] == "pass"
        listed = client.get("/jobs", params={"status": "verified"}).json()
        assert listed["total"] == 1 and [item["id"] for item in listed["items"]] == [job_id]
        assert client.get("/jobs", params={"status": "failed"}).json() == {"items": [], "total": 0, "offset": 0,
                                                                            "limit": 50}


def test_a_spec_without_shapes_is_rejected_with_a_reason(live: LiveServer) -> None:
    with live.client() as client:
        job = wait_final(client, submit(client, "foo bar"))
        assert job["status"] == "rejected"
        assert "shape" in job["message"]
        assert job["error"] == job["message"]  # a rejection says why in `error` too, as a failure does
        assert client.get(f"/jobs/{job['id']}/artifacts").json() == []


def test_listing_pages_newest_first(live: LiveServer) -> None:
    with live.client() as client:
        ids = [submit(client, "foo bar") for _ in range(5)]
        first = client.get("/jobs", params={"limit": 2}).json()
        second = client.get("/jobs", params={"limit": 2, "offset": 2}).json()
        assert first["total"] == second["total"] == 5
        assert [j["id"] for j in first["items"] + second["items"]] == sorted(ids, reverse=True)[:4]
        for job_id in ids:
            wait_final(client, job_id)


def test_unknown_jobs_and_invalid_input_are_json_errors(live: LiveServer) -> None:
    with live.client() as client:
        for method, path in (("GET", "/jobs/999"), ("POST", "/jobs/999/cancel"), ("GET", "/jobs/999/events"),
                             ("GET", "/jobs/999/artifacts"), ("GET", "/jobs/999/artifacts.zip"),
                             ("GET", "/jobs/999/artifacts/report.json")):
            response = client.request(method, path)
            assert response.status_code == 404, (path, response.text)
            assert response.json() == {"detail": "job 999 not found"}
        for body, field in (({}, "spec"), ({"spec": ""}, "spec"), ({"spec": "   "}, "spec"),
                            ({"spec": RELU, "device": "tpu"}, "device"), ({"spec": RELU, "rounds": 9}, "rounds"),
                            ({"spec": RELU, "target_speedup": 0}, "target_speedup"),
                            ({"spec": RELU, "initial_config": "fast please"}, "initial_config"),
                            ({"spec": RELU, "initial_config": "flat: BLOCK_SIZE=300"}, "initial_config"),
                            ({"spec": RELU, "initial_config": "flat: BLOCK_M=2"}, "initial_config"),
                            ({"spec": "relu \x00 x [4]"}, "spec"), ({"spec": RELU, "llm": "gpt-9"}, "llm"),
                            ({"spec": RELU, "llm": "openai"}, "llm")):  # this server has no LLM endpoint
            response = client.post("/jobs", json=body)
            assert response.status_code == 422, (body, response.text)
            detail = response.json()["detail"]
            assert isinstance(detail, str) and detail.startswith(field), detail
        response = client.post("/jobs", json={"spec": RELU, "initial_config": "flat: BLOCK_SIZE=300"})
        assert "it must be a power of two" in response.json()["detail"]  # the rule, not just the field
        response = client.post("/jobs", content=b"{not json", headers={"content-type": "application/json"})
        assert response.status_code == 422 and isinstance(response.json()["detail"], str)
        assert client.get("/jobs", params={"limit": 0}).status_code == 422
        assert client.get("/jobs", params={"status": "sleeping"}).status_code == 422
        assert client.get("/jobs/abc").status_code == 422
        assert client.get("/nowhere").json() == {"detail": "Not Found"}
        assert client.delete("/jobs").status_code == 405
        assert client.get("/jobs").json()["total"] == 0  # nothing invalid was queued


def test_a_spec_over_the_size_limit_is_refused(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(max_spec_bytes=100)
    with live.client() as client:
        response = client.post("/jobs", json={"spec": RELU + " " * 100})
        assert response.status_code == 422
        assert "limit of 100 bytes" in response.json()["detail"]


def test_an_initial_config_is_accepted_and_used(live: LiveServer) -> None:
    with live.client() as client:
        job = wait_final(client, submit(client, initial_config="flat: BLOCK_SIZE=256, NUM_WARPS=8"))
        assert job["status"] == "verified"
        assert job["rounds"][0]["config"] == "flat: BLOCK_SIZE=256, NUM_WARPS=8"


def test_cancelling_a_queued_and_a_running_job(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(concurrency=1)
    with live.client() as client:
        running = submit(client, SLOW)
        queued = submit(client, RELU)
        wait_status(client, running, "running")
        assert client.get(f"/jobs/{queued}").json()["queue_position"] == 1
        response = client.post(f"/jobs/{queued}/cancel")
        assert response.status_code == 202 and response.json() == {"id": queued, "status": "cancelled"}
        response = client.post(f"/jobs/{running}/cancel")
        assert response.status_code == 202 and response.json()["id"] == running
        assert wait_final(client, running, timeout=60)["status"] == "cancelled"
        assert wait_final(client, queued)["status"] == "cancelled"
        response = client.post(f"/jobs/{running}/cancel")
        assert response.status_code == 409
        assert response.json() == {"detail": f"job {running} already finished (cancelled)"}
        # The worker is free again: a new job runs to the end.
        assert wait_final(client, submit(client, RELU))["status"] == "verified"


def test_cancelling_a_finished_job_is_a_conflict(live: LiveServer) -> None:
    with live.client() as client:
        job_id = submit(client, "foo bar")
        wait_final(client, job_id)
        response = client.post(f"/jobs/{job_id}/cancel")
        assert response.status_code == 409
        assert response.json() == {"detail": f"job {job_id} already finished (rejected)"}


@pytest.mark.slow_on_postgresql
def test_twenty_jobs_at_once_queue_and_all_finish(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(concurrency=2)
    specs = [RELU if i % 5 == 0 else "foo bar" for i in range(20)]
    ids: list[int] = []
    lock = threading.Lock()

    def post(spec: str) -> None:
        with live.client() as client:
            job_id = submit(client, spec)
        with lock:
            ids.append(job_id)

    threads = [threading.Thread(target=post, args=(spec,)) for spec in specs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 20
    with live.client() as client:
        jobs = [client.get(f"/jobs/{job_id}").json() for job_id in ids]
        queued = [job for job in jobs if job["status"] == "queued"]
        assert queued, "with two workers, most of twenty jobs must wait"
        assert all(job["queue_position"] is not None and job["queue_position"] >= 1 for job in queued)
        assert all(job["queue_position"] is None for job in jobs if job["status"] != "queued")
        health = client.get("/healthz").json()
        assert health["status"] == "ok" and health["running"] <= 2
        started = time.monotonic()
        finals = {job_id: wait_final(client, job_id, timeout=300)["status"] for job_id in ids}
        assert time.monotonic() - started < 300
        assert all(status in FINAL for status in finals.values())
        assert sorted(finals.values()).count("verified") == 4 and list(finals.values()).count("rejected") == 16
        assert client.get("/jobs", params={"limit": 200}).json()["total"] == 20
        assert client.get("/healthz").json() | {"status": "ok"} == {"status": "ok", "database": "ok", "queue": 0,
                                                                   "running": 0, "auth": False}


def test_patterns_and_health(live: LiveServer) -> None:
    with live.client() as client:
        assert client.get("/patterns").json() == []
        assert client.get("/patterns", params={"device": "NVIDIA H200", "category": "elementwise"}).json() == []
        assert client.get("/healthz").json() == {"status": "ok", "database": "ok", "queue": 0, "running": 0,
                                                 "auth": False}  # loopback, no tokens: the page asks for none
