"""The pattern store counts what each change did, on SQLite and PostgreSQL alike, even under concurrent jobs."""

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Any

import pytest
from sqlalchemy import Engine, event

from storage import crud
from storage.db import make_engine
from storage.models import OptimizationPattern, OptimizationPatternPublic
from tests.databases import database_url

ROWS = "rows: BLOCK_M=4, BLOCK_N=1024, NUM_WARPS=4"
FLAT = "flat: BLOCK_SIZE=1024, NUM_WARPS=4"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with database_url(request.param, tmp_path) as fresh:
        yield fresh


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    engine = make_engine(url)
    yield engine
    engine.dispose()


def _record(engine: Engine, **overrides: Any) -> OptimizationPattern:
    fields: dict[str, Any] = {
        "category": "elementwise/row-broadcast", "device": "NVIDIA H200", "bottleneck": "memory",
        "change": "schedule flat -> rows", "edit_type": "logic", "params_before": FLAT, "params_after": ROWS,
        "gain": 0.10, "helped": True, "speedup_after": 2.0,
    }
    return crud.record_pattern(engine, **(fields | overrides))


def test_first_record_creates_the_row(engine: Engine) -> None:
    row = _record(engine, gain=0.12, speedup_after=2.41)
    assert row.id is not None
    assert (row.times_applied, row.times_helped, row.times_measured) == (1, 1, 1)
    assert row.mean_gain == pytest.approx(0.12) and row.best_speedup == pytest.approx(2.41)
    assert (row.params_before, row.params_after, row.edit_type) == (FLAT, ROWS, "logic")
    assert [p.id for p in crud.list_patterns(engine)] == [row.id]


def test_same_key_updates_counts_mean_gain_and_best_speedup(engine: Engine) -> None:
    first = _record(engine, gain=0.10, speedup_after=2.0)
    second = _record(engine, gain=0.30, speedup_after=2.5, params_after="rows: BLOCK_M=8, BLOCK_N=512, NUM_WARPS=8")
    third = _record(engine, gain=-0.10, helped=False, speedup_after=1.5)
    assert first.id == second.id == third.id and len(crud.list_patterns(engine)) == 1
    assert (third.times_applied, third.times_helped, third.times_measured) == (3, 2, 3)
    assert third.mean_gain == pytest.approx((0.10 + 0.30 - 0.10) / 3)
    assert third.best_speedup == pytest.approx(2.5)  # a later, slower version does not lower the best
    assert third.updated_at >= first.updated_at


def test_a_change_that_did_not_help_keeps_the_config_that_did(engine: Engine) -> None:
    _record(engine, params_before=FLAT, params_after=ROWS)
    row = _record(engine, params_before=ROWS, params_after="rows: BLOCK_M=1, BLOCK_N=4096, NUM_WARPS=16",
                  helped=False, gain=-0.2)
    assert (row.params_before, row.params_after) == (FLAT, ROWS)
    fresh = _record(engine, change="parameter search (rows)", edit_type="parameter", helped=False, gain=-0.2)
    assert fresh.params_after == ROWS and fresh.times_helped == 0  # a new row keeps what it was given


def test_an_unmeasured_change_counts_as_applied_but_not_measured(engine: Engine) -> None:
    _record(engine, gain=0.2, speedup_after=2.0)
    row = _record(engine, gain=None, helped=False, speedup_after=None)
    assert (row.times_applied, row.times_measured) == (2, 1)
    assert row.mean_gain == pytest.approx(0.2) and row.best_speedup == pytest.approx(2.0)
    lone = _record(engine, change="unroll", gain=None, helped=False, speedup_after=None)
    assert (lone.times_applied, lone.times_measured, lone.mean_gain, lone.best_speedup) == (1, 0, None, None)


def test_an_unknown_edit_type_is_refused(engine: Engine) -> None:
    with pytest.raises(ValueError, match="edit_type"):
        _record(engine, edit_type="initial")
    assert crud.list_patterns(engine) == []


def test_list_filters_by_device_and_category_in_order(engine: Engine) -> None:
    _record(engine, change="a", helped=False, gain=None)
    _record(engine, change="b", gain=0.05)
    _record(engine, change="c", gain=0.20)
    _record(engine, change="d", gain=None)  # helped once, never measured: after the measured ones
    _record(engine, device="NVIDIA H100")
    _record(engine, category="elementwise/unary")
    assert [p.change for p in crud.list_patterns(engine, device="NVIDIA H200", category="elementwise/row-broadcast")] \
        == ["c", "b", "d", "a"]
    assert {(p.category, p.device) for p in crud.list_patterns(engine, device="NVIDIA H100")} == {
        ("elementwise/row-broadcast", "NVIDIA H100")}
    assert [p.category for p in crud.list_patterns(engine, device="NVIDIA H200")] == [
        "elementwise/row-broadcast"] * 4 + ["elementwise/unary"]
    assert [(p.category, p.device) for p in crud.list_patterns(engine)][:2] == [
        ("elementwise/row-broadcast", "NVIDIA H100"), ("elementwise/row-broadcast", "NVIDIA H200")]


def test_helpful_patterns_leave_out_what_never_helped_and_put_the_fastest_first(engine: Engine) -> None:
    _record(engine, change="never", helped=False, speedup_after=9.0)
    _record(engine, change="slow", speedup_after=1.5, gain=0.5)
    _record(engine, change="fast", speedup_after=3.0, gain=0.1)
    _record(engine, change="fast-too", speedup_after=3.0, gain=0.2)
    _record(engine, change="elsewhere", device="NVIDIA H100", speedup_after=5.0)
    found = crud.helpful_patterns(engine, device="NVIDIA H200", category="elementwise/row-broadcast")
    assert [p.change for p in found] == ["fast-too", "fast", "slow"]


@contextmanager
def _first_reads_meet(engines: list[Engine], timeout: float) -> Iterator[None]:
    """Hold each thread after its first read of the pattern table until the other thread has read too (or timeout)."""
    barrier = threading.Barrier(len(engines), timeout=timeout)
    waited = threading.local()

    def hold(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM optimizationpattern" in statement and not getattr(waited, "done", False):
            waited.done = True
            with suppress(threading.BrokenBarrierError):  # the other thread is blocked on our row lock
                barrier.wait()

    for e in engines:
        event.listen(e, "after_cursor_execute", hold)
    try:
        yield
    finally:
        for e in engines:
            event.remove(e, "after_cursor_execute", hold)


def _record_at_once(url: str, timeout: float) -> list[OptimizationPattern]:
    engines = [make_engine(url), make_engine(url)]
    with _first_reads_meet(engines, timeout), ThreadPoolExecutor(max_workers=2) as pool:
        rows = list(pool.map(lambda e: _record(e, gain=0.1), engines))
    for e in engines:
        e.dispose()
    return rows


def test_two_jobs_recording_the_same_new_key_at_once_both_count(url: str, engine: Engine) -> None:
    if url.startswith("sqlite"):
        pytest.skip("concurrent writers are a PostgreSQL concern; SQLite serializes its writers")
    rows = _record_at_once(url, timeout=10)  # both see "no row", both insert: one must retry as an update
    assert sorted(r.times_applied for r in rows) == [1, 2]
    (stored,) = crud.list_patterns(engine)
    assert (stored.times_applied, stored.times_helped, stored.times_measured) == (2, 2, 2)


def test_two_jobs_updating_the_same_row_at_once_lose_no_count(url: str, engine: Engine) -> None:
    if url.startswith("sqlite"):
        pytest.skip("concurrent writers are a PostgreSQL concern; SQLite serializes its writers")
    _record(engine, gain=0.4)
    _record_at_once(url, timeout=2)  # the second reader waits on the first one's row lock, then sees its count
    (stored,) = crud.list_patterns(engine)
    assert (stored.times_applied, stored.times_measured) == (3, 3)
    assert stored.mean_gain == pytest.approx(0.2)


def test_a_pattern_records_the_job_and_owner_that_last_changed_it(engine: Engine) -> None:
    first = crud.create_job(engine, "relu", "/o", owner="alice")
    second = crud.create_job(engine, "relu", "/o", owner="bob")
    assert (_record(engine, job_id=first).last_job_id, _record(engine).last_owner) == (first, "alice")
    row = _record(engine, job_id=second)
    assert (row.last_job_id, row.last_owner, row.times_applied) == (second, "bob", 3)
    assert not {"last_job_id", "last_owner"} & set(OptimizationPatternPublic.model_fields)  # not shown by the API
