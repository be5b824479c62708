"""Write a job's files to its output folder and to the database together."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sqlalchemy import Engine

from storage import crud


def write_artifact(
    engine: Engine, job_id: int, out_dir: str, name: str, content: str, round_index: int | None = None
) -> Path:
    """Save a file atomically under out_dir and record it in the database."""
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as stream:
        stream.write(content)
    os.replace(temp, path)
    crud.save_artifact(engine, job_id, name, content, round_index)
    return path
