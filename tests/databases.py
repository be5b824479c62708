"""Fresh databases for tests: a SQLite file, or a private schema of the local test PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

POSTGRES_URL = os.environ.get("KERNELGEN_TEST_POSTGRES_URL")


@contextmanager
def database_url(kind: str, folder: Path) -> Iterator[str]:
    """Yield a URL of an empty database of this kind; a PostgreSQL schema is dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'kg.db'}"
        return
    if not POSTGRES_URL:
        pytest.skip("KERNELGEN_TEST_POSTGRES_URL is not set: no PostgreSQL variant runs (apt-get install postgresql; "
                    ".ci/run starts it and sets the URL)")
    schema = f"t_{uuid.uuid4().hex[:8]}"
    admin = create_engine(POSTGRES_URL)  # not make_engine: the shared schema is left alone
    with admin.begin() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()
