"""One round per (job, index): recording a round again replaces it, and migration 0009 removes old duplicates."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlmodel import Session, select

from agent.nodes.log import log_before
from storage import crud
from storage.db import alembic_config, make_engine
from storage.models import Job, Round
from tests.databases import database_url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(request.param, tmp_path) as fresh:
        yield fresh


def _round(index: int, verdict: str) -> Round:
    return Round(job_id=0, index=index, edit_type="initial", config="flat", accuracy_status="pass",
                 performance_status="ok", verdict=verdict)


def test_a_round_recorded_again_replaces_its_row(url: str) -> None:
    engine = make_engine(url)
    job_id = crud.create_job(engine, "relu", "/o")
    crud.add_round(engine, job_id, _round(0, "first run of the log stage"))
    crud.add_round(engine, job_id, _round(0, "the same stage run again after a kill"))
    crud.add_round(engine, job_id, _round(1, "next round"))
    rounds = crud.list_rounds(engine, job_id)
    assert [(r.index, r.verdict) for r in rounds] == [(0, "the same stage run again after a kill"), (1, "next round")]
    engine.dispose()


def test_the_migration_keeps_the_latest_of_duplicate_rounds_and_marks_old_cli_jobs(url: str) -> None:
    old = create_engine(url)
    with old.begin() as connection:
        command.upgrade(alembic_config(connection), "0008")
        at = {"at": "2025-01-02 03:04:05"}
        for options in ("{}", '{"device": "cpu"}'):  # the command line's row, then the service's
            connection.execute(text(
                "INSERT INTO job (spec_text, status, out_dir, message, stage, options_json, cancel_requested, "
                "generator, created_at, updated_at) VALUES ('relu', 'running', '/o', '', '', :options, false, "
                "'offline', :at, :at)"), at | {"options": options})
        for index, verdict in ((0, "old"), (0, "latest"), (1, "only")):
            connection.execute(text(
                'INSERT INTO round ("index", edit_type, config, reason, accuracy_status, performance_status, '
                "accepted, verdict, figures_json, job_id, created_at) VALUES (:index, 'initial', 'flat', '', "
                "'pass', 'ok', false, :verdict, '{}', 1, :at)"), at | {"index": index, "verdict": verdict})
    old.dispose()
    engine = make_engine(url)
    assert [(r.index, r.verdict) for r in crud.list_rounds(engine, 1)] == [(0, "latest"), (1, "only")]
    with Session(engine) as session:
        assert [j.runner for j in session.exec(select(Job).order_by(Job.id)).all()] == ["cli:unknown:0", None]  # type: ignore[arg-type]
    engine.dispose()


def test_the_log_cut_before_a_round_drops_that_rounds_section_only() -> None:
    text_ = "# Optimization log: `relu`\n\n## Round 0: initial edit\nbody 0\n## Round 1: parameter edit\nbody 1\n"
    assert log_before(text_, 1) == "# Optimization log: `relu`\n\n## Round 0: initial edit\nbody 0\n"
    assert log_before(text_, 2) == text_  # a round not logged yet: the log as it is
