"""Follow a job's progress as server-sent events, and resume the stream."""

from __future__ import annotations

import pytest

from server.routes import events
from tests.server.live import RELU, SLOW, LiveServer, read_stream, submit


def test_the_stream_follows_a_job_to_the_end(live: LiveServer) -> None:
    with live.client(timeout=120) as client:
        job_id = submit(client, RELU)
        messages = read_stream(client, f"/jobs/{job_id}/events")
        *events, end = messages
        assert end == {"event": "end", "data": {"status": "verified"}}
        assert [int(m["id"]) for m in events] == list(range(1, len(events) + 1))
        assert all(m["data"]["seq"] == int(m["id"]) and m["data"]["stage"] == m["event"] for m in events)
        stages = [m["event"] for m in events]
        assert stages[0] == "queued" and "accuracy" in stages and stages[-1] == "finalize"
        assert client.get(f"/jobs/{job_id}").json()["status"] == "verified"

        resumed = read_stream(client, f"/jobs/{job_id}/events", headers={"Last-Event-ID": "3"})
        assert [m.get("id") for m in resumed] == [m["id"] for m in events[3:]] + [None]
        assert [m["data"] for m in resumed[:-1]] == [m["data"] for m in events[3:]]
        assert resumed[-1]["event"] == "end"

        after = read_stream(client, f"/jobs/{job_id}/events?after={len(events) - 1}")
        assert [m["event"] for m in after] == ["finalize", "end"]
        assert read_stream(client, f"/jobs/{job_id}/events?after={len(events)}") == [end]


def test_a_bad_last_event_id_is_a_json_error(live: LiveServer) -> None:
    with live.client() as client:
        job_id = submit(client, "foo bar")
        response = client.get(f"/jobs/{job_id}/events", headers={"Last-Event-ID": "seven"})
        assert response.status_code == 422 and "Last-Event-ID" in response.json()["detail"]
        assert client.get(f"/jobs/{job_id}/events", params={"after": -1}).status_code == 422


def test_a_rejected_job_streams_its_reason(live: LiveServer) -> None:
    with live.client(timeout=60) as client:
        job_id = submit(client, "foo bar")
        messages = read_stream(client, f"/jobs/{job_id}/events")
        assert messages[-1] == {"event": "end", "data": {"status": "rejected"}}
        assert any("shape" in m["data"]["message"] for m in messages[:-1])


@pytest.mark.slow_on_postgresql
def test_a_quiet_stream_sends_heartbeats(live: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "HEARTBEAT_S", 0.5)  # the accuracy stage is silent for about two seconds
    with live.client(timeout=120) as client:
        job_id = submit(client, SLOW)
        with client.stream("GET", f"/jobs/{job_id}/events") as response:
            lines = list(response.iter_lines())
    assert ": heartbeat" in lines
    assert lines[-3:] == ["event: end", 'data: {"status": "verified"}', ""]
