"""Read a spec the way a job would, and show the reading without generating anything."""

from __future__ import annotations

from fastapi import APIRouter

from server.chat import read_spec
from server.deps import RedactorDep, SettingsDep, check_spec_size
from server.errors import AUTH_ERRORS, INPUT_ERRORS
from server.schemas import ReadCreate, ReadsPublic

router = APIRouter(prefix="/read", tags=["read"], responses=AUTH_ERRORS)


@router.post("", response_model=ReadsPublic, summary="Read a spec", responses=INPUT_ERRORS)
def read(body: ReadCreate, settings: SettingsDep, redactor: RedactorDep) -> ReadsPublic:
    """Return how the spec (or each task of a task book) is understood, or the question it raises."""
    check_spec_size(body.spec, settings)
    outcomes = read_spec(body.spec, settings)
    asked = sum(o.status == "question" for o in outcomes)
    items = [redactor.value(o.model_dump(mode="json")) for o in outcomes]  # a sandbox message may name a folder
    return ReadsPublic.model_validate({"items": items, "read": len(outcomes) - asked, "questions": asked})
