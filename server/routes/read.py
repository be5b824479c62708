"""Read a spec the way a job would, and show the reading without generating anything."""

from __future__ import annotations

from fastapi import APIRouter, Request

from server.admission import BUSY, run_admitted
from server.chat import read_spec
from server.deps import PrincipalDep, RedactorDep, SettingsDep, check_spec_size
from server.errors import AUTH_ERRORS, INPUT_ERRORS
from server.schemas import ReadCreate, ReadsPublic

router = APIRouter(prefix="/read", tags=["read"], responses=AUTH_ERRORS)


@router.post("", response_model=ReadsPublic, summary="Read a spec", responses=INPUT_ERRORS | BUSY)
async def read(body: ReadCreate, request: Request, settings: SettingsDep, redactor: RedactorDep,
               principal: PrincipalDep) -> ReadsPublic:
    """Return how the spec (or each task of a task book) is understood, or the question it raises.

    A code spec is traced in the sandbox, so every read holds one sandbox slot: 429 with `Retry-After` when none
    is free for the caller.
    """
    check_spec_size(body.spec, settings)
    outcomes = await run_admitted(request, principal.name, settings.read_deadline_s,
                                  lambda: read_spec(body.spec, settings))
    asked = sum(o.status == "question" for o in outcomes)
    items = [redactor.value(o.model_dump(mode="json")) for o in outcomes]  # a sandbox message may name a folder
    return ReadsPublic.model_validate({"items": items, "read": len(outcomes) - asked, "questions": asked})
