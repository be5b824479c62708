"""Jobs belong to the principal that submitted them: others get 404 on every endpoint; an admin sees all."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from storage.db import make_engine
from storage.users import add_user, revoke_user
from tests.server.live import RELU, LiveServer, read_stream, submit, wait_final

TOKENS = ["alice:tok-alice", "bob:tok-bob", "root:tok-root", "bare-token"]


def _job_paths(job_id: int) -> list[tuple[str, str]]:
    base = f"/jobs/{job_id}"
    return [("GET", base), ("GET", f"{base}/events"), ("GET", f"{base}/artifacts"), ("GET", f"{base}/artifacts.zip"),
            ("GET", f"{base}/artifacts/report.json"), ("GET", f"{base}/artifacts/relu_triton.py?round=0"),
            ("POST", f"{base}/cancel")]


@pytest.mark.slow_on_postgresql
def test_two_tokens_two_principals_each_sees_only_its_own_jobs(
    start_server: Callable[..., LiveServer], tmp_path: Path,
) -> None:
    live = start_server(api_tokens=TOKENS, api_admins=["root"])
    with live.client("tok-alice") as alice, live.client("tok-bob") as bob, live.client("tok-root") as root:
        mine = submit(alice, RELU)
        theirs = submit(bob, "foo bar")
        assert wait_final(alice, mine)["status"] == "verified"
        assert wait_final(bob, theirs)["status"] == "rejected"
        # The owner reaches every endpoint of its job.
        assert alice.get(f"/jobs/{mine}").json()["owner"] == "alice"
        assert read_stream(alice, f"/jobs/{mine}/events")[-1]["data"] == {"status": "verified"}
        names = {a["name"] for a in alice.get(f"/jobs/{mine}/artifacts").json()}
        assert {"report.json", "relu_triton.py", "rounds/round_0/relu_triton.py"} <= names
        assert alice.get(f"/jobs/{mine}/artifacts.zip").status_code == 200
        assert alice.get(f"/jobs/{mine}/artifacts/report.json").status_code == 200
        assert alice.post(f"/jobs/{mine}/cancel").status_code == 409  # its own, finished
        # The other principal is told the job does not exist, on every endpoint, cancel included.
        for user, job_id in ((bob, mine), (alice, theirs)):
            for method, path in _job_paths(job_id):
                response = user.request(method, path)
                assert response.status_code == 404, (method, path, response.text)
                assert response.json() == {"detail": f"job {job_id} not found"}
        assert [j["id"] for j in alice.get("/jobs").json()["items"]] == [mine]
        assert [j["id"] for j in bob.get("/jobs").json()["items"]] == [theirs]
        assert bob.get("/jobs", params={"status": "verified"}).json()["total"] == 0
        # The admin sees both and may act on both.
        listed = root.get("/jobs").json()
        assert listed["total"] == 2 and {j["owner"] for j in listed["items"]} == {"alice", "bob"}
        assert root.get(f"/jobs/{mine}/artifacts/report.json").status_code == 200
        assert root.get(f"/jobs/{theirs}").json()["status"] == "rejected"
        # A bare token is a principal of its own, named after its hash.
        with live.client("bare-token") as bare:
            assert bare.get("/jobs").json()["total"] == 0
            assert bare.get(f"/jobs/{mine}").status_code == 404
        # A running job of one principal cannot be cancelled by another.
        running = submit(alice, RELU)
        assert bob.post(f"/jobs/{running}/cancel").status_code == 404
        assert wait_final(alice, running)["status"] == "verified"
        # No server path in anything the owner is answered.
        answers = [alice.get("/jobs").text, alice.get(f"/jobs/{mine}").text,
                   json.dumps(read_stream(alice, f"/jobs/{mine}/events"))]
        answers += [alice.get(f"/jobs/{mine}/artifacts/{a['name']}").text
                    for a in alice.get(f"/jobs/{mine}/artifacts").json()]
        for text in answers:
            assert str(tmp_path) not in text and str(live.settings.artifact_root) not in text
        assert "out_dir" not in alice.get(f"/jobs/{mine}").json()


def test_users_of_the_users_table_are_principals_until_revoked(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as local:  # no token anywhere yet: the local user
        earlier = submit(local, "foo bar")
        wait_final(local, earlier)
    engine = make_engine(live.settings.database_url)
    carol, admin = add_user(engine, "carol"), add_user(engine, "dora", admin=True)
    with live.client() as anonymous, live.client(carol) as client, live.client(admin) as boss:
        assert anonymous.get("/jobs").status_code == 401  # a users table with someone in it: tokens needed
        job_id = submit(client, "foo bar")
        assert client.get(f"/jobs/{job_id}").json()["owner"] == "carol"
        assert client.get(f"/jobs/{earlier}").status_code == 404  # the local user's job is not carol's
        assert {j["id"] for j in boss.get("/jobs").json()["items"]} == {earlier, job_id}
        revoke_user(engine, "carol")
        assert client.get("/jobs").status_code == 401
        assert boss.get(f"/jobs/{job_id}").json()["owner"] == "carol"  # the revoked user's jobs stay
    engine.dispose()
