"""`kernelgen users`: add, list, revoke and adopt in the job database (SQLite and PostgreSQL), and what they say."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgen.admin import users_app
from storage import crud
from storage.db import make_engine
from storage.users import find_user, has_active_users
from tests.databases import database_url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(request.param, tmp_path) as fresh:
        yield fresh


def test_add_prints_a_working_token_once_and_revoke_stops_it(url: str) -> None:
    runner = CliRunner()
    env = {"KERNELGEN_DATABASE_URL": url}
    added = runner.invoke(users_app, ["add", "alice", "--admin"], env=env)
    assert added.exit_code == 0, added.output
    token = added.stdout.strip().splitlines()[-1]
    engine = make_engine(url)
    user = find_user(engine, token)
    assert user is not None and (user.name, user.admin) == ("alice", True)
    again = runner.invoke(users_app, ["add", "alice"], env=env)
    assert again.exit_code == 1 and "exists" in again.output
    listed = runner.invoke(users_app, ["list"], env=env)
    assert listed.exit_code == 0 and "alice" in listed.stdout and "admin" in listed.stdout
    assert token not in listed.stdout
    revoked = runner.invoke(users_app, ["revoke", "alice"], env=env)
    assert revoked.exit_code == 0 and find_user(engine, token) is None
    assert runner.invoke(users_app, ["revoke", "nobody"], env=env).exit_code == 1
    assert runner.invoke(users_app, ["add", "two words"], env=env).exit_code == 1
    engine.dispose()


def test_add_refuses_the_reserved_name_local(url: str) -> None:
    refused = CliRunner().invoke(users_app, ["add", "local"], env={"KERNELGEN_DATABASE_URL": url})
    assert refused.exit_code == 1 and "reserved name" in refused.output, refused.output


def test_the_first_user_says_the_database_now_requires_tokens_and_whose_earlier_jobs_are(url: str) -> None:
    engine = make_engine(url)
    crud.create_job(engine, "relu", "/o", owner="local", status="verified")  # a tokenless server's
    crud.create_job(engine, "relu", "/o", status="verified")  # the command line's
    runner, env = CliRunner(), {"KERNELGEN_DATABASE_URL": url}
    first = runner.invoke(users_app, ["add", "alice"], env=env)
    assert first.exit_code == 0, first.output
    assert "now requires tokens" in first.stderr and "revoke` of the last user makes it open again" in first.stderr
    assert "2 earlier job(s) belong to 'local'" in first.stderr and "alice does not" in first.stderr
    assert "kernelgen users adopt alice" in first.stderr
    second = runner.invoke(users_app, ["add", "bob"], env=env)
    assert second.exit_code == 0 and "now requires tokens" not in second.stderr  # said once, at the switch
    listed = runner.invoke(users_app, ["list"], env=env)
    assert "tokens required (2 active user(s))" in listed.stdout
    adopted = runner.invoke(users_app, ["adopt", "alice"], env=env)
    assert adopted.exit_code == 0 and "2 job(s)" in adopted.stdout and crud.list_jobs(engine, owner="alice")[1] == 2
    assert runner.invoke(users_app, ["adopt", "nobody"], env=env).exit_code == 1
    engine.dispose()


def test_adopt_local_jobs_hands_them_to_the_new_user(url: str) -> None:
    engine = make_engine(url)
    job = crud.create_job(engine, "relu", "/o", owner="local", status="verified")
    added = CliRunner().invoke(users_app, ["add", "alice", "--adopt-local-jobs"], env={"KERNELGEN_DATABASE_URL": url})
    assert added.exit_code == 0, added.output
    assert "1 job(s), 0 chat thread(s) and 0 batch(es) made without a token now belong to alice" in added.stderr
    assert [j.id for j in crud.list_jobs(engine, owner="alice")[0]] == [job]
    engine.dispose()


def test_revoking_the_last_user_says_the_database_is_open_again(url: str) -> None:
    runner, env = CliRunner(), {"KERNELGEN_DATABASE_URL": url}
    for name in ("alice", "bob"):
        assert runner.invoke(users_app, ["add", name], env=env).exit_code == 0
    one = runner.invoke(users_app, ["revoke", "alice"], env=env)
    assert one.exit_code == 0 and "needs no token again" not in one.output
    last = runner.invoke(users_app, ["revoke", "bob"], env=env)
    assert last.exit_code == 0 and "No active user is left" in last.stderr and "needs no token again" in last.stderr
    assert "open: no active user" in runner.invoke(users_app, ["list"], env=env).stdout
    engine = make_engine(url)
    assert not has_active_users(engine)
    engine.dispose()
    again = runner.invoke(users_app, ["add", "alice"], env=env)
    assert "now requires tokens" in again.stderr  # the switch back is said again
