"""Test-wide setup: the Triton interpreter (no GPU in CI), and the split between CI's run and a full run.

CI runs on two cores under a 45-minute bar, so the slowest tests (whole corpora, fuzz runs, kill loops, the larger
interpreter shapes) are marked `slow` and run only where KERNELGEN_TEST_FULL=1 is set: a session runs the whole
suite that way before it lands work. Parametrized corpora take a deterministic sample in CI instead
(`tests.sampling.ci_sample`), so every class of case still runs on every push.
"""

import os

import pytest

# Must be set before anything imports triton.
os.environ["TRITON_INTERPRET"] = "1"
os.environ["KERNELGEN_DEVICE"] = "cpu"

FULL_RUN = os.environ.get("KERNELGEN_TEST_FULL") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if FULL_RUN:
        return
    skip = pytest.mark.skip(reason="slow: runs where KERNELGEN_TEST_FULL=1 (a session's full run), not in CI")
    for item in items:
        if item.get_closest_marker("slow") is not None or _postgresql_variant_of_slow(item):
            item.add_marker(skip)


def _postgresql_variant_of_slow(item: pytest.Item) -> bool:
    """A test marked `slow_on_postgresql` runs on SQLite in CI; its PostgreSQL variant runs in a full run."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return item.get_closest_marker("slow_on_postgresql") is not None and params.get("db_kind") == "postgresql"
