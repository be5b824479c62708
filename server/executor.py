"""Run jobs outside the request: a bounded local executor behind a small interface."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)


class Executor(Protocol):
    """Where queued jobs run; a distributed executor can replace the local one."""

    def submit(self, job_id: int) -> None:
        """Queue a job to run."""
        ...

    def withdraw(self, job_id: int) -> bool:
        """Take a job off the queue before it starts; False if it is not queued."""
        ...

    def queue_position(self, job_id: int) -> int | None:
        """Return a queued job's 1-based place in the queue, or None if it is not queued."""
        ...

    def running(self) -> list[int]:
        """List the jobs running now."""
        ...

    def shutdown(self) -> None:
        """Stop taking jobs and wait for the workers to finish their current job."""
        ...


class LocalExecutor:
    """A FIFO queue drained by a fixed number of worker threads."""

    def __init__(self, run: Callable[[int], None], concurrency: int) -> None:
        self._run = run
        self._queue: deque[int] = deque()
        self._running: set[int] = set()
        self._lock = threading.Condition()
        self._stopping = False
        self._workers = [
            threading.Thread(target=self._work, name=f"kernelgen-worker-{i}", daemon=True)
            for i in range(max(1, concurrency))
        ]
        for worker in self._workers:
            worker.start()

    def submit(self, job_id: int) -> None:
        """Queue a job to run."""
        with self._lock:
            if job_id not in self._queue and job_id not in self._running:
                self._queue.append(job_id)
                self._lock.notify()

    def withdraw(self, job_id: int) -> bool:
        """Take a job off the queue before it starts; False if it is not queued."""
        with self._lock:
            if job_id in self._queue:
                self._queue.remove(job_id)
                return True
            return False

    def queue_position(self, job_id: int) -> int | None:
        """Return a queued job's 1-based place in the queue, or None if it is not queued."""
        with self._lock:
            return self._queue.index(job_id) + 1 if job_id in self._queue else None

    def running(self) -> list[int]:
        """List the jobs running now."""
        with self._lock:
            return sorted(self._running)

    def shutdown(self) -> None:
        """Stop taking jobs and wait (briefly) for the workers to finish their current job."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        for worker in self._workers:
            worker.join(timeout=5)

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopping:
                    self._lock.wait()
                if self._stopping:
                    return
                job_id = self._queue.popleft()
                self._running.add(job_id)
            try:
                self._run(job_id)
            except Exception:  # a job's failure is recorded by the runner; the worker lives on
                log.exception("job %s crashed its worker", job_id)
            finally:
                with self._lock:
                    self._running.discard(job_id)
