"""A deterministic sample of a parametrized corpus for CI; the whole corpus where KERNELGEN_TEST_FULL=1."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def full_run() -> bool:
    """Whether this run is a full one (a session's), not CI's."""
    return os.environ.get("KERNELGEN_TEST_FULL") == "1"


def ci_sample(cases: Sequence[T], every: int, key: Callable[[T], str] = str) -> list[T]:
    """Return every case in a full run, else about one in `every`, chosen by a hash of the case's key.

    The hash, not the position, picks the sample: adding a case does not reshuffle which others CI runs.
    """
    if full_run() or every <= 1:
        return list(cases)
    chosen = [case for case in cases if int(hashlib.sha256(key(case).encode()).hexdigest(), 16) % every == 0]
    return chosen or list(cases[:1])
