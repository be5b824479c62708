"""Engine creation for SQLite (default) or PostgreSQL, with the schema migrated to the newest revision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, event, inspect, pool, text
from sqlmodel import create_engine

from storage import models  # noqa: F401  (registers the tables)

MIGRATIONS = Path(__file__).resolve().with_name("migrations")
# Any constant will do: it only has to be the same in every process that migrates this database.
_PG_LOCK_KEY = 0x6B67_6D69  # "kgmi"


def make_engine(url: str) -> Engine:
    """Create an engine and migrate its database to the newest schema; a SQLite file's folder is created too."""
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            url = "sqlite:///" + str(Path(path).expanduser())
    engine = create_engine(url, connect_args={"check_same_thread": False} if url.startswith("sqlite") else {})
    migrate(engine)
    return engine


def alembic_config(connection: Connection | None = None) -> Config:
    """Return an Alembic config for the packaged migrations, independent of the working directory."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def migrate(engine: Engine) -> None:
    """Upgrade the database to head in one transaction that no other migrator can enter at the same time."""
    if _at_head(engine):
        return  # the usual start: no write lock taken
    if engine.dialect.name == "sqlite" and not _in_memory(engine):
        # pysqlite neither wraps DDL in a transaction nor takes the write lock before it: on a second engine
        # of the same file, begin with BEGIN IMMEDIATE so a concurrent migrator waits and then finds head.
        locked = create_engine(engine.url, poolclass=pool.NullPool, connect_args={"timeout": 60})
        event.listen(locked, "connect", _driver_autocommit)
        event.listen(locked, "begin", lambda connection: connection.exec_driver_sql("BEGIN IMMEDIATE"))
        try:
            with locked.begin() as connection:
                _upgrade(connection)
        finally:
            locked.dispose()
        return
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        _upgrade(connection)


def _at_head(engine: Engine) -> bool:
    """Tell whether the database is already at the newest revision."""
    with engine.connect() as connection:
        current = MigrationContext.configure(connection).get_current_heads()
    return set(current) == set(ScriptDirectory.from_config(alembic_config()).get_heads())


def _upgrade(connection: Connection) -> None:
    """Stamp a database that create_all made (tables, no version), then upgrade it to head."""
    config = alembic_config(connection)
    legacy = _legacy_revision(connection)
    if legacy is not None:
        command.stamp(config, legacy)
    command.upgrade(config, "head")


def _legacy_revision(connection: Connection) -> str | None:
    """Return the revision a version-less database made by create_all is at, or None if it has none."""
    inspector = inspect(connection)
    tables = set(inspector.get_table_names())
    if "alembic_version" in tables or "job" not in tables:
        return None
    if "stage" in {column["name"] for column in inspector.get_columns("job")}:
        return "0003"
    return "0002" if "optimizationpattern" in tables else "0001"


def _in_memory(engine: Engine) -> bool:
    """Tell whether a SQLite engine's database lives in memory (so a second engine would not see it)."""
    database = engine.url.database
    return not database or database == ":memory:" or "mode=memory" in str(engine.url)


def _driver_autocommit(dbapi_connection: Any, _record: Any) -> None:
    """Stop pysqlite from issuing its own BEGIN, so the begin listener's BEGIN IMMEDIATE is the one."""
    dbapi_connection.isolation_level = None
