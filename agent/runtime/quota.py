"""A run's disk quota: the size of its folder, measured while it runs, and the run killed once it is over."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

INTERVAL_S = 0.5  # how often the folder is measured: a run writing 1 GB/s overshoots by about half a gigabyte


class Unmeasurable(OSError):
    """A part of the folder the service cannot list (a run that made a folder of its own unreadable)."""


def folder_bytes(folder: Path) -> int:
    """Return the bytes the files under `folder` take, links not followed, each file once (hard links)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    pending = [str(folder)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except FileNotFoundError:
            continue  # removed while we looked
        except OSError as exc:
            raise Unmeasurable(str(exc)) from exc
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise Unmeasurable(str(exc)) from exc
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
            elif (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                # The larger of the two: a sparse file counts at its length, a file still being written at its blocks.
                total += max(info.st_size, info.st_blocks * 512)
    return total


class DiskWatch:
    """Measure a folder every INTERVAL_S in a thread; call `on_over` once when it holds more than `limit` bytes."""

    def __init__(self, folder: Path, limit: int, on_over: Callable[[], None]) -> None:
        self.folder, self.limit, self._on_over = folder, limit, on_over
        self.exceeded = False
        self.reason = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"quota-{folder.name}", daemon=True)

    def __enter__(self) -> DiskWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        if not self.exceeded:
            self.check()  # a run that wrote past the quota faster than one interval is caught here

    def check(self) -> bool:
        """Measure now; on going over, record why and call `on_over`. Return whether the folder is over."""
        try:
            used = folder_bytes(self.folder)
        except Unmeasurable as exc:
            self.reason = f"part of its folder cannot be measured ({exc})"
        else:
            if used <= self.limit:
                return False
            self.reason = f"its folder holds {used / 2**20:.0f} MB"
        self.exceeded = True
        self._on_over()
        return True

    def _watch(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            if self.check():
                return
