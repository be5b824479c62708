"""Engine creation for SQLite (default) or PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import SQLModel, create_engine

from storage import models  # noqa: F401  (registers the tables)


def make_engine(url: str) -> Engine:
    """Create an engine and the tables; a SQLite file's folder is created too."""
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            url = "sqlite:///" + str(Path(path).expanduser())
    engine = create_engine(url, connect_args={"check_same_thread": False} if url.startswith("sqlite") else {})
    SQLModel.metadata.create_all(engine)
    return engine
