"""Tokens are required while a user is active: revoking the last one opens a loopback server again (and only a
loopback one), and the jobs made before tokens can be handed to a user. Live servers, real databases."""

from __future__ import annotations

from collections.abc import Callable

from storage import crud
from storage.db import make_engine
from storage.users import add_user, adopt_local, revoke_user
from tests.server.live import LiveServer


def test_revoking_the_last_user_opens_a_loopback_server_again(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    engine = make_engine(live.settings.database_url)
    earlier = crud.create_job(engine, "relu(x), x [64] fp32", "", owner="local", status="verified")
    carol = add_user(engine, "carol")
    add_user(engine, "dora")
    with live.client() as anonymous, live.client(carol) as client:
        assert anonymous.get("/jobs").status_code == 401 and anonymous.get("/healthz").json()["auth"] is True
        assert client.get(f"/jobs/{earlier}").status_code == 404  # the local user's job is not carol's
        revoke_user(engine, "carol")
        assert anonymous.get("/jobs").status_code == 401  # dora is still active
        revoke_user(engine, "dora")
        assert anonymous.get("/healthz").json()["auth"] is False
        listed = anonymous.get("/jobs")
        assert listed.status_code == 200 and [job["id"] for job in listed.json()["items"]] == [earlier]
        assert client.get("/jobs").status_code == 200  # a stale token is the local user too, as on a fresh database
    add_user(engine, "carol")
    with live.client() as anonymous:
        assert anonymous.get("/jobs").status_code == 401  # tokens again
    engine.dispose()


def test_a_server_beyond_loopback_refuses_everyone_once_the_last_user_is_revoked(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server(host="0.0.0.0")  # as `kernelgen serve --host 0.0.0.0` records it (the socket stays loopback)
    engine = make_engine(live.settings.database_url)
    carol = add_user(engine, "carol")
    with live.client(carol) as client, live.client() as anonymous:
        assert client.get("/jobs").status_code == 200
        revoke_user(engine, "carol")
        for caller in (client, anonymous):
            refused = caller.get("/jobs")
            assert refused.status_code == 401 and "no active user" in refused.json()["detail"], refused.text
        assert anonymous.get("/healthz").json()["auth"] is True
    engine.dispose()


def test_jobs_made_before_tokens_are_the_adopting_users(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as local:  # no user yet: the page's thread is the local user's
        thread = local.post("/threads").json()["id"]
    engine = make_engine(live.settings.database_url)
    earlier = crud.create_job(engine, "relu(x), x [64] fp32", "", owner="local", status="verified")
    alice = add_user(engine, "alice")
    assert adopt_local(engine, "alice")["jobs"] == 1
    with live.client(alice) as client:
        assert [job["id"] for job in client.get("/jobs").json()["items"]] == [earlier]
        assert client.get(f"/jobs/{earlier}").json()["owner"] == "alice"
        assert client.get(f"/threads/{thread}").status_code == 200  # the page's thread moved with the job
        assert [t["id"] for t in client.get("/threads").json()["items"]] == [thread]
    engine.dispose()
