"""Jobs, rounds and artifacts survive in SQLite and PostgreSQL alike."""


from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from storage import crud
from storage.db import make_engine
from storage.models import Round
from tests.databases import database_url


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path) -> Iterator[Engine]:  # type: ignore[no-untyped-def]
    with database_url(request.param, tmp_path / "nested") as url:  # the SQLite folder does not exist yet
        yield make_engine(url)


def test_a_job_keeps_its_rounds_and_artifacts(engine: Engine) -> None:
    job_id = crud.create_job(engine, "relu on x [4, 4] fp32", "/tmp/out")
    crud.add_round(engine, job_id, Round(job_id=job_id, index=0, edit_type="initial", config="BLOCK_SIZE=1024",
                                         accuracy_status="pass", performance_status="skipped"))
    crud.save_artifact(engine, job_id, "relu_triton.py", "v1")
    crud.save_artifact(engine, job_id, "relu_triton.py", "v2")  # same name and round: replaced, not duplicated
    crud.save_artifact(engine, job_id, "rounds/round_0/relu_triton.py", "v1", round_index=0)
    crud.update_job(engine, job_id, status="verified", op_name="relu")
    job = crud.get_job(engine, job_id)
    assert job is not None and job.status == "verified" and job.op_name == "relu"
    assert [r.accuracy_status for r in crud.list_rounds(engine, job_id)] == ["pass"]
    artifacts = {(a.name, a.round_index): a.content for a in crud.list_artifacts(engine, job_id)}
    assert artifacts == {("relu_triton.py", None): "v2", ("rounds/round_0/relu_triton.py", 0): "v1"}


def test_updating_a_missing_job_is_an_error(engine: Engine) -> None:
    with pytest.raises(KeyError):
        crud.update_job(engine, 999_999, status="verified")
