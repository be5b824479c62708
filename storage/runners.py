"""Who runs a job: a server (by its id) or a command line (by host and process), and whether that one is gone.

Each door owns its jobs. A server recovers only the jobs it ran (or rows from before runners were recorded); the
command line's jobs are its own, and one left running by a killed `kernelgen run` is failed the next time a
command line on the same machine starts.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from storage import crud
from storage.models import Job

CLI_PREFIX = "cli:"
SERVER_PREFIX = "server:"
# Rows the command line wrote before runners were recorded (migration 0009): no process of theirs is alive.
UNKNOWN_CLI = "cli:unknown:0"


def cli_runner() -> str:
    """Return this command line's runner id."""
    return f"{CLI_PREFIX}{socket.gethostname()}:{os.getpid()}"


def server_runner(server_id: str, home: Path) -> str:
    """Return a server's runner id: its configured id, else one kept in `home` (made at its first start).

    Kept in a file beside the job folders, not taken from the host name, so a restarted server (a container made
    anew, too) keeps its id as long as it keeps its folders, and recovers its jobs.
    """
    if not server_id:
        path = home / ".server-id"
        home.mkdir(parents=True, exist_ok=True)
        try:
            with path.open("x") as stream:  # created once, even by two processes starting at once
                stream.write(uuid.uuid4().hex)
        except FileExistsError:
            pass
        server_id = path.read_text().strip()
    return f"{SERVER_PREFIX}{server_id}"


def cli_is_gone(runner: str) -> bool:
    """Tell whether a command line's process has ended; one on another machine is never known to have."""
    if not runner.startswith(CLI_PREFIX):
        return False
    host, _, pid = runner.removeprefix(CLI_PREFIX).rpartition(":")
    if runner == UNKNOWN_CLI:
        return True
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, under another user
        return False
    return False


def fail_abandoned_cli_jobs(engine: Engine) -> list[int]:
    """Fail the unfinished jobs of command lines that have ended (killed mid-job); return their ids."""
    with Session(engine) as session:
        rows = session.exec(select(Job).where(col(Job.status).in_(("queued", "running")),
                                              col(Job.runner).startswith(CLI_PREFIX))).all()
        abandoned = [job for job in rows if job.runner is not None and cli_is_gone(job.runner)]
    for job in abandoned:
        assert job.id is not None
        crud.update_job(engine, job.id, status="failed",
                        message="the command line that ran this job ended before it finished (killed?)")
    return [job.id for job in abandoned if job.id is not None]
