"""In-process notices that a job's row or events changed, for readers that wait on them (the event streams)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Listener = Callable[[int], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


def subscribe(listener: Listener) -> Callable[[], None]:
    """Call `listener(job_id)` after every committed change of a job; return the function that unsubscribes."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def job_changed(job_id: int) -> None:
    """Tell every listener that a job changed (after the commit, so what they read includes the change)."""
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(job_id)
        except Exception:  # a reader's failure must not fail the writer
            log.exception("a job-change listener failed")
