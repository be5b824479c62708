"""PostgreSQL checkpoint writes are all-or-nothing per call although the pool is in autocommit (issue 49): each
`put` and `put_writes` of PostgresSaver is one pipeline with one Sync, which PostgreSQL runs as one implicit
transaction. A failure in the middle of a call (a statement refused, the backend gone) leaves none of its rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint

from kernelgen.settings import Settings
from server.checkpoints import make_checkpointer
from tests.databases import database_url

CONFIG: Any = {"configurable": {"thread_id": "job-1", "checkpoint_ns": "", "checkpoint_id": "c1"}}
WRITES = [("pending", {"index": 0}), ("rounds", [1, 2]), ("status", "verified"), ("message", "done")]


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with database_url("postgresql", tmp_path) as fresh:
        yield fresh


@pytest.fixture
def saver(url: str) -> Iterator[BaseCheckpointSaver[str]]:
    saver = make_checkpointer(Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
    yield saver
    saver.conn.close()  # type: ignore[attr-defined]


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://", 1), autocommit=True)


def _fail_at_the_second_row(url: str, table: str, how: str) -> None:
    """Make the database refuse the task's second write (idx 1), or any checkpoint row: by raising, or by ending
    the backend that runs it, as a database that dies mid-task."""
    column = "idx = 1" if table == "checkpoint_writes" else "true"
    body = "RAISE EXCEPTION 'refused'" if how == "raise" else "PERFORM pg_terminate_backend(pg_backend_pid())"
    with _connect(url) as connection:
        connection.execute(f"CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN IF NEW.{column} THEN {body}; "
                           "END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
        connection.execute(f"CREATE TRIGGER refuse BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION refuse()")


def _rows(url: str, table: str) -> int:
    with _connect(url) as connection:
        row = connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("how", ["raise", "backend ended"])
def test_a_failure_in_the_middle_of_a_tasks_writes_saves_none_of_them(
        url: str, saver: BaseCheckpointSaver[str], how: str) -> None:
    _fail_at_the_second_row(url, "checkpoint_writes", how)
    with pytest.raises(psycopg.Error):
        saver.put_writes(CONFIG, WRITES, "task-1")
    assert _rows(url, "checkpoint_writes") == 0  # row 0 ran before the failure: it was not committed alone
    with _connect(url) as connection:  # the pool's next connection writes a whole task again
        connection.execute("DROP TRIGGER refuse ON checkpoint_writes")
    saver.put_writes(CONFIG, WRITES, "task-1")
    assert _rows(url, "checkpoint_writes") == len(WRITES)


def test_a_checkpoint_refused_after_its_blobs_leaves_no_blob(url: str, saver: BaseCheckpointSaver[str]) -> None:
    _fail_at_the_second_row(url, "checkpoints", "raise")
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"rounds": [{"index": 0}], "spec": {"name": "relu"}}  # blobs, not inline
    with pytest.raises(psycopg.Error):
        saver.put({"configurable": {"thread_id": "job-1", "checkpoint_ns": ""}}, checkpoint, {},
                  {"rounds": "1", "spec": "1"})
    assert (_rows(url, "checkpoint_blobs"), _rows(url, "checkpoints")) == (0, 0)


def test_the_trigger_does_cut_a_series_of_writes_in_the_middle(url: str, saver: BaseCheckpointSaver[str]) -> None:
    # The same rows sent one statement at a time in autocommit (what the saver does not do): the first stays. So
    # the tests above would see a partial commit if the saver made one.
    _fail_at_the_second_row(url, "checkpoint_writes", "raise")
    with _connect(url) as connection, pytest.raises(psycopg.Error):
        for idx, (channel, _) in enumerate(WRITES):
            connection.execute(
                "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "
                "channel, type, blob) VALUES ('job-1', '', 'c1', 'task-1', '', %s, %s, 'json', '\\x7b7d')",
                (idx, channel))
    assert _rows(url, "checkpoint_writes") == 1
