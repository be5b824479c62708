"""LangGraph checkpointers keyed by job: SQLite by default, PostgreSQL with a PostgreSQL URL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from kernelgen.settings import Settings

# The job state holds these pydantic models; only they may be rebuilt from a checkpoint.
STATE_TYPES = [
    ("agent.state", "JobRequest"), ("agent.state", "RoundRecord"), ("agent.spec", "OpSpec"),
    ("agent.spec", "TensorSpec"), ("agent.spec", "ScalarSpec"), ("agent.spec", "Tolerance"),
    ("agent.runtime.devices", "DeviceInfo"), ("agent.generators.base", "KernelFiles"),
    ("agent.generators.base", "LaunchConfig"), ("agent.diagnosis", "Diagnosis"), ("agent.diagnosis", "Action"),
    ("agent.diagnosis", "PatternHint"),
]


def checkpoint_url(settings: Settings) -> str:
    """Resolve where checkpoints live: the setting, or beside the job database."""
    if settings.checkpoint_url:
        return settings.checkpoint_url
    url = settings.database_url
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///")).expanduser()
        return f"sqlite:///{path.with_name(path.stem + '-checkpoints.db')}"
    return url


def make_checkpointer(settings: Settings) -> BaseCheckpointSaver[str]:
    """Open (and set up) the checkpointer for the configured URL."""
    url = checkpoint_url(settings)
    serde = JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES)  # type: ignore[arg-type]
    if url.startswith("sqlite:///"):
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = Path(url.removeprefix("sqlite:///")).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        # The default (deferred) isolation level, not autocommit: SqliteSaver commits once per put/put_writes, so a
        # task's writes land all together or not at all. In autocommit each row committed alone, and a kill between
        # them left a task with some of its writes, which LangGraph then took as done (issue 49).
        connection = sqlite3.connect(str(path), check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")  # readers do not block the job threads' writes
        saver = SqliteSaver(connection, serde=serde)
        saver.setup()
        return saver
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    # Autocommit, as PostgresSaver.setup needs (CREATE INDEX CONCURRENTLY runs outside a transaction). Writes stay
    # whole all the same: each put / put_writes sends its statements in one pipeline with one Sync (or, where
    # libpq has no pipeline, in conn.transaction()), and PostgreSQL runs what precedes a Sync as one implicit
    # transaction, so a failure or a kill mid-call saves none of its rows (tests/server/test_postgres_checkpoints.py).
    conninfo = url.replace("postgresql+psycopg://", "postgresql://", 1)
    pool = ConnectionPool(conninfo, min_size=1, max_size=max(4, settings.concurrency * 2), open=True,
                          kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
    postgres = PostgresSaver(pool, serde=serde)  # type: ignore[arg-type]
    postgres.setup()
    return postgres
