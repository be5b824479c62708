"""Alembic environment: migrate the connection make_engine hands over, or the configured URL from the CLI."""

from __future__ import annotations

import os
from logging.config import fileConfig
from typing import Any, Literal

from alembic import context
from sqlalchemy import Connection, DateTime, TypeDecorator, create_engine, pool
from sqlmodel import SQLModel
from sqlmodel.sql.sqltypes import AutoString

from storage import models  # noqa: F401  (registers the tables)

config = context.config
target_metadata = SQLModel.metadata
if config.config_file_name and config.attributes.get("connection") is None:
    fileConfig(config.config_file_name)  # the CLI's alembic.ini logging; make_engine leaves logging alone


def _url() -> str:
    """Return the database URL for CLI use: alembic.ini's sqlalchemy.url, else KERNELGEN_DATABASE_URL."""
    url = config.get_main_option("sqlalchemy.url") or os.environ.get("KERNELGEN_DATABASE_URL")
    if not url:
        raise RuntimeError("set sqlalchemy.url in alembic.ini or KERNELGEN_DATABASE_URL")
    return url


def _render_item(kind: str, obj: Any, _context: Any) -> str | Literal[False]:
    """Write SQLModel's own column types as plain SQLAlchemy ones, so revisions need no sqlmodel import."""
    if kind == "type" and isinstance(obj, AutoString):
        return "sa.String()" if obj.length is None else f"sa.String(length={obj.length})"
    if kind == "type" and isinstance(obj, TypeDecorator) and isinstance(obj.impl, DateTime):  # UTCDateTime
        return f"sa.DateTime(timezone={obj.impl.timezone})"
    return False


def _run(connection: Connection) -> None:
    """Run the migrations on one connection (batch mode, so SQLite can alter tables)."""
    context.configure(
        connection=connection, target_metadata=target_metadata, render_as_batch=True, render_item=_render_item
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """Emit the migrations as SQL."""
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on make_engine's connection, or on a fresh one to the configured URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as fresh:
        _run(fresh)
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
