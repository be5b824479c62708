"""Alembic migrations give fresh and old databases the models' schema, on SQLite and PostgreSQL alike."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlmodel import Session, SQLModel, select

from storage.db import alembic_config, make_engine
from storage.models import Job
from tests.databases import database_url

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()

# The tables as create_all made them before Alembic: job/round/artifact (0001), then optimizationpattern (0002).
OLD_TABLES = """
CREATE TABLE job (spec_text VARCHAR NOT NULL, op_name VARCHAR, status VARCHAR NOT NULL, device VARCHAR,
  out_dir VARCHAR NOT NULL, message VARCHAR NOT NULL, best_round INTEGER, spec_json VARCHAR, id {serial} NOT NULL,
  created_at {ts} NOT NULL, updated_at {ts} NOT NULL, PRIMARY KEY (id));
CREATE INDEX ix_job_op_name ON job (op_name);
CREATE INDEX ix_job_status ON job (status);
CREATE TABLE round ("index" INTEGER NOT NULL, edit_type VARCHAR NOT NULL, config VARCHAR NOT NULL,
  reason VARCHAR NOT NULL, accuracy_status VARCHAR NOT NULL, performance_status VARCHAR NOT NULL, speedup FLOAT,
  pct_of_copy FLOAT, accepted BOOLEAN NOT NULL, verdict VARCHAR NOT NULL, figures_json VARCHAR NOT NULL,
  id {serial} NOT NULL, job_id INTEGER NOT NULL, created_at {ts} NOT NULL, PRIMARY KEY (id),
  FOREIGN KEY(job_id) REFERENCES job (id));
CREATE INDEX ix_round_job_id ON round (job_id);
CREATE TABLE artifact (name VARCHAR NOT NULL, round_index INTEGER, content VARCHAR NOT NULL, sha256 VARCHAR NOT NULL,
  id {serial} NOT NULL, job_id INTEGER NOT NULL, created_at {ts} NOT NULL, PRIMARY KEY (id),
  FOREIGN KEY(job_id) REFERENCES job (id));
CREATE INDEX ix_artifact_job_id ON artifact (job_id)
"""
OLD_PATTERNS = """
CREATE TABLE optimizationpattern (category VARCHAR NOT NULL, device VARCHAR NOT NULL, bottleneck VARCHAR NOT NULL,
  change VARCHAR NOT NULL, edit_type VARCHAR NOT NULL, params_before VARCHAR NOT NULL, params_after VARCHAR NOT NULL,
  times_applied INTEGER NOT NULL, times_helped INTEGER NOT NULL, times_measured INTEGER NOT NULL, mean_gain FLOAT,
  best_speedup FLOAT, id {serial} NOT NULL, created_at {ts} NOT NULL, updated_at {ts} NOT NULL, PRIMARY KEY (id),
  CONSTRAINT uq_pattern_key UNIQUE (category, device, bottleneck, change));
CREATE INDEX ix_optimizationpattern_device ON optimizationpattern (device);
CREATE INDEX ix_optimizationpattern_category ON optimizationpattern (category)
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with database_url(request.param, tmp_path) as fresh:
        yield fresh


def _version(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _schema_diffs(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)


def _make_old_database(url: str, level: str) -> None:
    """Create the tables as create_all made them at a revision, with one job row in them."""
    old = create_engine(url)
    postgres = old.dialect.name == "postgresql"
    types = {"serial": "INTEGER", "ts": "DATETIME"}
    if postgres:
        types = {"serial": "SERIAL", "ts": "TIMESTAMP WITH TIME ZONE"}
    with old.begin() as connection:
        if level == "0003":  # the tables of 0003, as create_all made them then: no version table
            command.upgrade(alembic_config(connection), "0003")
            connection.execute(text("DROP TABLE alembic_version"))
        else:
            script = OLD_TABLES + (";" + OLD_PATTERNS if level == "0002" else "")
            for statement in script.format(**types).split(";"):
                connection.execute(text(statement))
        columns = "spec_text, status, out_dir, message, created_at, updated_at"
        values = "'relu', 'verified', '/o', 'done', :at, :at"
        if level == "0003":  # create_all gave the new columns no server default
            columns, values = columns + ", stage, options_json, cancel_requested", values + ", '', '{}', false"
        connection.execute(text(f"INSERT INTO job ({columns}) VALUES ({values})"), {"at": "2025-01-02 03:04:05"})
    old.dispose()


def test_a_fresh_database_gets_every_table_and_column_at_head(url: str) -> None:
    engine = make_engine(url)
    inspector = inspect(engine)
    assert set(inspector.get_table_names()) == set(SQLModel.metadata.tables) | {"alembic_version"}
    for name, table in SQLModel.metadata.tables.items():
        assert {c["name"] for c in inspector.get_columns(name)} == set(table.columns.keys()), name
    assert {c["name"] for c in inspector.get_unique_constraints("jobevent")} == {"uq_job_event_seq"}
    assert _version(engine) == HEAD
    assert _schema_diffs(engine) == []
    engine.dispose()


@pytest.mark.parametrize("level", ["0001", "0002", "0003"])
def test_an_old_database_is_upgraded_and_keeps_its_rows(url: str, level: str) -> None:
    _make_old_database(url, level)
    engine = make_engine(url)
    assert _version(engine) == HEAD
    assert _schema_diffs(engine) == []
    with Session(engine) as session:
        (job,) = session.exec(select(Job)).all()
        assert (job.spec_text, job.status, job.message) == ("relu", "verified", "done")
        assert (job.stage, job.options_json, job.cancel_requested) == ("", "{}", False)
    engine.dispose()


def test_make_engine_twice_is_a_noop(url: str) -> None:
    engine = make_engine(url)
    with Session(engine) as session:
        session.add(Job(spec_text="relu", out_dir="/tmp/out", stage="generate"))
        session.commit()
    statements: list[str] = []

    def _record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", _record)
    try:
        again = make_engine(url)
    finally:
        event.remove(Engine, "before_cursor_execute", _record)
    changes = [s for s in statements if s.lstrip().upper().startswith(("CREATE", "ALTER", "DROP", "INSERT", "UPDATE"))]
    assert changes == []
    assert _version(again) == HEAD
    with Session(again) as session:
        assert [j.stage for j in session.exec(select(Job)).all()] == ["generate"]
    engine.dispose()
    again.dispose()


def test_processes_migrating_a_fresh_database_at_once_all_succeed(url: str) -> None:
    code = ("import sys; from storage.db import make_engine; print(flush=True); "  # ready: imported
            "sys.stdin.readline(); make_engine(sys.argv[1])")
    root = Path(__file__).resolve().parents[2]
    env = os.environ | {"PYTHONPATH": str(root)}
    procs = [subprocess.Popen([sys.executable, "-c", code, url], cwd=root, env=env, text=True, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    for proc in procs:  # every one has imported; then all are let go at once
        assert proc.stdout is not None and proc.stdout.readline() == "\n"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, errors
    engine = create_engine(url)
    assert _version(engine) == HEAD
    assert _schema_diffs(engine) == []
    engine.dispose()
