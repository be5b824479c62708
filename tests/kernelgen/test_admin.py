"""`kernelgen users`: add, list and revoke API users in the job database (SQLite and PostgreSQL)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgen.admin import users_app
from storage.db import make_engine
from storage.users import find_user
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
