"""Read the optimization patterns learned so far."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.deps import EngineDep
from server.errors import AUTH_ERRORS, INVALID
from storage import crud
from storage.models import OptimizationPatternPublic

router = APIRouter(prefix="/patterns", tags=["patterns"], responses=AUTH_ERRORS)

Filter = Annotated[str | None, Query(max_length=200, pattern=r"^[^\x00]*$")]


@router.get("", response_model=list[OptimizationPatternPublic], summary="List optimization patterns",
            responses=INVALID)
def list_patterns(engine: EngineDep, device: Filter = None, category: Filter = None) -> list[OptimizationPatternPublic]:
    """Return what each change did on each device and op category, most helpful first."""
    rows = crud.list_patterns(engine, device=device, category=category)
    return [OptimizationPatternPublic.model_validate(row, from_attributes=True) for row in rows]
