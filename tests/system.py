"""What the full suite needs from the machine beyond pip: four Debian packages, and what skips without each.

The README's test command runs on a bare machine too: a test that needs one of these skips with a reason naming
it, and the session's header and summary say which are missing and how many tests skipped for each (.ci/run
installs all four). A test's skip reason carries the need's `words`, which is how the summary counts it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Need:
    """A system package some tests need."""

    package: str  # the Debian package
    without: str  # what a run without it does not check
    words: str  # what the skip reasons of the tests that need it say
    then: str = "then run the tests again"


def _bubblewrap() -> str | None:
    from agent.runtime.isolation import SandboxPolicy, probe

    isolation = probe(SandboxPolicy())
    return None if isolation.available else isolation.reason


def _chromium() -> str | None:
    found = os.environ.get("KERNELGEN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    return None if found else "chromium is not installed"


def _cjk_font() -> str | None:
    try:
        families = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        families = ""
    return None if families.strip() else "no font with Chinese glyphs (fc-list :lang=zh is empty)"


def _postgresql() -> str | None:
    return None if os.environ.get("KERNELGEN_TEST_POSTGRES_URL") else "KERNELGEN_TEST_POSTGRES_URL is not set"


BUBBLEWRAP = Need("bubblewrap", "the sandbox's isolation, code specs and model-written code (run only inside it)",
                  "apt-get install bubblewrap")
CHECKS = {
    BUBBLEWRAP: _bubblewrap,
    Need("chromium", "the web page's browser tests", "apt-get install chromium"): _chromium,
    Need("fonts-wqy-zenhei", "Chinese text on the browser tests' screenshots (nothing skips: it shows as boxes)",
         "apt-get install fonts-wqy-zenhei"): _cjk_font,
    Need("postgresql", "the PostgreSQL variants of the storage and server tests", "KERNELGEN_TEST_POSTGRES_URL",
         "start it and set KERNELGEN_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test (as "
         ".ci/run does)"): _postgresql,
}


@functools.cache
def missing() -> dict[Need, str]:
    """Return each need that this machine lacks, with why (checked once per process)."""
    return {need: reason for need, check in CHECKS.items() if (reason := check()) is not None}


def bubblewrap_skip_reason() -> str | None:
    """Return the skip reason of a test that needs bubblewrap to start here, or None when it starts."""
    reason = missing().get(BUBBLEWRAP)
    if reason is None:
        return None
    return f"needs bubblewrap, which cannot start here: {reason}" + ("" if BUBBLEWRAP.words in reason else
                                                                      f" ({BUBBLEWRAP.words})")
