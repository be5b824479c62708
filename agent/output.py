"""Write a job's files to its output folder and to the database together."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sqlalchemy import Engine

from storage import crud

FILE_MODE = 0o644  # what a plain open() writes under the usual umask: the owner writes, everyone reads


def fresh_folder(base: Path, overwrite: bool = False) -> Path:
    """Return base, or base-2, base-3, ...: the first folder that holds no files yet (base itself when overwriting).

    Each candidate is made with mkdir, which only one job can win: two jobs of one op never share a folder.
    """
    if overwrite:
        return base
    candidate, number = base, 1
    while True:
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            if candidate.is_dir() and not any(candidate.iterdir()):
                return candidate
        number += 1
        candidate = base.with_name(f"{base.name}-{number}")


def write_artifact(
    engine: Engine, job_id: int, out_dir: str, name: str, content: str, round_index: int | None = None
) -> Path:
    """Save a file atomically under out_dir and record it in the database."""
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.fchmod(handle, FILE_MODE)  # mkstemp's 0600 would keep the files from the person's other tools and users
    with os.fdopen(handle, "w") as stream:
        stream.write(content)
    os.replace(temp, path)
    crud.save_artifact(engine, job_id, name, content, round_index)
    return path
