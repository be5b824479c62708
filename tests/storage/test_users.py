"""API users and job owners in SQLite and PostgreSQL alike: tokens kept as digests, revocation, per-owner lists."""

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from storage import crud
from storage.db import make_engine
from storage.models import ApiUser, Batch, ChatThread
from storage.signals import subscribe
from storage.users import (
    UserError,
    active_users,
    add_user,
    adopt_local,
    find_user,
    has_active_users,
    list_users,
    local_jobs,
    revoke_user,
    token_digest,
)
from tests.databases import database_url


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path) -> Iterator[Engine]:  # type: ignore[no-untyped-def]
    with database_url(request.param, tmp_path) as url:
        engine = make_engine(url)
        yield engine
        engine.dispose()


def test_a_token_is_stored_only_as_its_digest_and_finds_its_user(engine: Engine) -> None:
    assert not has_active_users(engine)
    token = add_user(engine, "alice")
    admin = add_user(engine, "root", admin=True)
    assert token.startswith("kg_") and len(token) > 40 and token != admin
    with Session(engine) as session:
        stored = session.exec(select(ApiUser).where(ApiUser.name == "alice")).one()
    assert stored.token_sha256 == token_digest(token) and token not in stored.model_dump_json()
    found = find_user(engine, token)
    assert found is not None and (found.name, found.admin) == ("alice", False)
    assert find_user(engine, admin) is not None and find_user(engine, admin).admin  # type: ignore[union-attr]
    assert find_user(engine, token + "x") is None and has_active_users(engine)


def test_a_revoked_token_finds_nobody_and_a_new_one_can_be_issued(engine: Engine) -> None:
    old = add_user(engine, "bob")
    with pytest.raises(UserError, match="exists"):
        add_user(engine, "bob")
    revoke_user(engine, "bob")
    assert find_user(engine, old) is None
    with pytest.raises(UserError, match="no active user"):
        revoke_user(engine, "bob")
    new = add_user(engine, "bob", admin=True)
    assert find_user(engine, old) is None and find_user(engine, new) is not None
    (listed,) = list_users(engine)
    assert (listed.name, listed.admin, listed.revoked_at) == ("bob", True, None)
    with pytest.raises(UserError, match="user name"):
        add_user(engine, "no spaces please")
    revoke_user(engine, "bob")
    assert not has_active_users(engine)  # the last user revoked: the database is open again


def test_jobs_are_listed_per_owner_and_changes_are_announced(engine: Engine) -> None:
    changed: list[int] = []
    unsubscribe = subscribe(changed.append)
    try:
        mine = crud.create_job(engine, "relu", "/o", owner="alice", status="queued")
        theirs = crud.create_job(engine, "relu", "/o", owner="bob", status="queued")
        crud.add_event(engine, mine, "queued", "job queued")
        crud.update_job(engine, theirs, status="running")
    finally:
        unsubscribe()
    crud.update_job(engine, mine, status="running")  # after unsubscribing: not heard
    assert changed == [mine, theirs]
    rows, total = crud.list_jobs(engine, owner="alice")
    assert total == 1 and [j.id for j in rows] == [mine] and rows[0].owner == "alice"
    assert crud.list_jobs(engine)[1] == 2 and crud.list_jobs(engine, owner="carol") == ([], 0)
    assert crud.list_jobs(engine, owner="bob", status="running")[1] == 1


def test_local_is_reserved_for_the_user_of_a_server_without_tokens(engine: Engine) -> None:
    for name in ("local", "LOCAL", "Local"):
        with pytest.raises(UserError, match="reserved name"):
            add_user(engine, name)
    assert not has_active_users(engine)  # nothing was written


def test_tokens_are_needed_while_one_user_is_active_and_not_after_the_last_is_revoked(engine: Engine) -> None:
    add_user(engine, "alice")
    add_user(engine, "bob")
    revoke_user(engine, "alice")
    assert has_active_users(engine) and active_users(engine) == 1
    revoke_user(engine, "bob")
    assert not has_active_users(engine) and active_users(engine) == 0
    add_user(engine, "alice")  # re-issued: tokens needed again
    assert has_active_users(engine)


def test_what_was_made_without_a_token_is_handed_to_an_active_user_and_nothing_else_moves(engine: Engine) -> None:
    cli = crud.create_job(engine, "relu", "/o")  # the command line's: no owner
    served = crud.create_job(engine, "relu", "/o", owner="local", status="queued")
    bobs = crud.create_job(engine, "relu", "/o", owner="bob", status="queued")
    with Session(engine) as session:
        session.add_all([ChatThread(owner="local", title="t"), ChatThread(owner="bob", title="b"),
                         Batch(owner="local", name="n")])
        session.commit()
    assert local_jobs(engine) == 2
    with pytest.raises(UserError, match="no active user"):
        adopt_local(engine, "alice")  # not a user yet
    add_user(engine, "alice")
    assert adopt_local(engine, "alice") == {"jobs": 2, "threads": 1, "batches": 1}
    assert {job.id for job in crud.list_jobs(engine, owner="alice")[0]} == {cli, served}
    assert [job.id for job in crud.list_jobs(engine, owner="bob")[0]] == [bobs]
    assert local_jobs(engine) == 0 and adopt_local(engine, "alice") == {"jobs": 0, "threads": 0, "batches": 0}
    with Session(engine) as session:
        assert sorted(t.owner or "" for t in session.exec(select(ChatThread))) == ["alice", "bob"]
        assert [b.owner for b in session.exec(select(Batch))] == ["alice"]
    revoke_user(engine, "alice")
    with pytest.raises(UserError, match="no active user"):
        adopt_local(engine, "alice")
