"""Read a spec the way a job would, and show the reading without generating anything."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from fastapi import APIRouter

from agent.reader.outcome import read_outcomes
from server.deps import RedactorDep, SettingsDep, check_spec_size
from server.errors import AUTH_ERRORS, INPUT_ERRORS
from server.schemas import ReadCreate, ReadsPublic

router = APIRouter(prefix="/read", tags=["read"], responses=AUTH_ERRORS)


@router.post("", response_model=ReadsPublic, summary="Read a spec", responses=INPUT_ERRORS)
def read(body: ReadCreate, settings: SettingsDep, redactor: RedactorDep) -> ReadsPublic:
    """Return how the spec (or each task of a task book) is understood, or the question it raises."""
    check_spec_size(body.spec, settings)
    Path(settings.work_dir).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="read-", dir=settings.work_dir))  # code specs are traced in a sandbox here
    try:
        outcomes = read_outcomes(body.spec, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    asked = sum(o.status == "question" for o in outcomes)
    items = [redactor.value(o.model_dump(mode="json")) for o in outcomes]  # a sandbox message may name a folder
    return ReadsPublic.model_validate({"items": items, "read": len(outcomes) - asked, "questions": asked})
