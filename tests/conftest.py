"""Test-wide setup: the Triton interpreter (no GPU in CI), and the split between CI's run and a full run.

CI runs on two cores under a 45-minute bar, so the slowest tests (whole corpora, fuzz runs, kill loops, the larger
interpreter shapes) are marked `slow` and run only where KERNELGEN_TEST_FULL=1 is set: a session runs the whole
suite that way before it lands work. Parametrized corpora take a deterministic sample in CI instead
(`tests.sampling.ci_sample`), so every class of case still runs on every push.

A bare machine runs the suite too: the tests that need a system package (`tests/system.py`: bubblewrap, chromium,
a CJK font, PostgreSQL) skip with a reason naming it, and the run's last lines count those skips per package.
"""

import os

import pytest

# Must be set before anything imports triton.
os.environ["TRITON_INTERPRET"] = "1"
os.environ["KERNELGEN_DEVICE"] = "cpu"

FULL_RUN = os.environ.get("KERNELGEN_TEST_FULL") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _skip_where_bubblewrap_cannot_start(items)
    if FULL_RUN:
        return
    skip = pytest.mark.skip(reason="slow: runs where KERNELGEN_TEST_FULL=1 (a session's full run), not in CI")
    for item in items:
        if item.get_closest_marker("slow") is not None or _postgresql_variant_of_slow(item):
            item.add_marker(skip)


def _skip_where_bubblewrap_cannot_start(items: list[pytest.Item]) -> None:
    """Skip, saying why, the tests marked `bubblewrap` (untrusted code runs only inside it) where it cannot start.

    `@pytest.mark.bubblewrap(needed=False)` on a test of a marked module keeps it: the refusal without isolation.
    """
    needing = [item for item in items
               if (marker := item.get_closest_marker("bubblewrap")) is not None and marker.kwargs.get("needed", True)]
    if not needing:
        return
    from tests.system import bubblewrap_skip_reason

    reason = bubblewrap_skip_reason()
    if reason is not None:
        for item in needing:
            item.add_marker(pytest.mark.skip(reason=reason))


def _postgresql_variant_of_slow(item: pytest.Item) -> bool:
    """A test marked `slow_on_postgresql` runs on SQLite in CI; its PostgreSQL variant runs in a full run."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return item.get_closest_marker("slow_on_postgresql") is not None and params.get("db_kind") == "postgresql"


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Name the system packages this machine lacks, before anything runs (tests/system.py)."""
    from tests.system import missing

    return [f"missing {need.package}: {reason}; not checked: {need.without}" for need, reason in missing().items()]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Count the tests each missing system package skipped, and say how to install it: skips are never silent."""
    from tests.system import missing

    lacking = missing()
    if not lacking:
        return
    # A skip's longrepr is (path, line, reason); a list once it has come back from an xdist worker.
    reasons = [str(report.longrepr[2] if isinstance(report.longrepr, (tuple, list)) else report.longrepr)
               for report in terminalreporter.stats.get("skipped", [])]
    terminalreporter.write_sep("=", "system packages missing (README.md, Set up; .ci/run installs them)")
    for need, reason in lacking.items():
        skipped = sum(need.words in text for text in reasons)
        terminalreporter.write_line(f"{need.package}: {skipped} test(s) skipped ({reason}); not checked: "
                                    f"{need.without}. To check it: apt-get install {need.package}, {need.then}.")
