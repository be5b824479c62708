"""Find processes by a marker in their command line: the host's view, whatever namespace they run in."""

from __future__ import annotations

import time
import uuid
from pathlib import Path


def new_marker() -> str:
    """Return a string unique to one test, to put in the command lines of the processes it starts."""
    return f"kgmark{uuid.uuid4().hex[:12]}"


def processes_with(marker: str) -> list[int]:
    """Return the host PIDs of live (not zombie) processes whose command line holds the marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue  # it ended while we looked
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_gone(marker: str, timeout: float = 5.0) -> list[int]:
    """Wait until no process carries the marker; return those left at the deadline."""
    deadline = time.monotonic() + timeout
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def processes_of_uid(uid: int) -> list[int]:
    """Return the PIDs of live processes whose real uid is `uid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and fields.get("State", "").split()[:1] != ["Z"]:
            found.append(int(entry.name))
    return found
