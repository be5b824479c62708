"""List, fetch and zip the files a job produced."""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response, status

from server.deps import EngineDep, JobDep, RedactorDep
from server.errors import AUTH_ERRORS, BAD_NAME, INVALID, NOT_FOUND
from server.redact import Redactor
from server.schemas import ArtifactPublic
from storage import crud
from storage.models import Artifact

router = APIRouter(prefix="/jobs", tags=["artifacts"], responses=AUTH_ERRORS)

SEGMENT = re.compile(r"[A-Za-z0-9_.-]{1,128}")
ROUND_DIR = re.compile(r"round_(\d{1,4})")
MEDIA_TYPES = {".py": "text/x-python", ".md": "text/markdown", ".json": "application/json"}


def parse_name(name: str) -> tuple[str, int | None]:
    """Split `file` or `rounds/round_<n>/file` into the file name and round; 400 for anything else."""
    parts = name.split("/")
    bad = (not 1 <= len(parts) <= 3 or any(not SEGMENT.fullmatch(p) or p in (".", "..") for p in parts)
           or (len(parts) == 2) or (len(parts) == 3 and (parts[0] != "rounds" or not ROUND_DIR.fullmatch(parts[1]))))
    if bad:
        raise HTTPException(status.HTTP_400_BAD_REQUEST,
                            f"bad artifact name {name[:200]!r}: use 'file' or 'rounds/round_<n>/file', "
                            "with only letters, digits, '_', '.' and '-'")
    if len(parts) == 1:
        return parts[0], None
    match = ROUND_DIR.fullmatch(parts[1])
    assert match is not None
    return parts[2], int(match.group(1))


def archive_name(artifact: Artifact) -> str:
    """Return an artifact's path in the job folder: round files under rounds/round_<i>/."""
    if artifact.round_index is None or artifact.name.startswith(f"rounds/round_{artifact.round_index}/"):
        return artifact.name
    return f"rounds/round_{artifact.round_index}/{artifact.name}"


def served(artifact: Artifact, redactor: Redactor) -> str:
    """Return a file as the API serves it: server paths in it (a traceback's, a folder's) replaced."""
    return redactor.text(artifact.content)


def media_type(name: str) -> str:
    """Pick the content type of a file by its extension."""
    suffix = name[name.rfind("."):] if "." in name else ""
    return MEDIA_TYPES.get(suffix, "text/plain") + "; charset=utf-8"


@router.get("/{job_id}/artifacts", response_model=list[ArtifactPublic], summary="List a job's files",
            responses=NOT_FOUND | INVALID)
def list_artifacts(job: JobDep, engine: EngineDep, redactor: RedactorDep) -> list[ArtifactPublic]:
    """List the files a job produced so far, with sizes, digests and download links (of the content served)."""
    assert job.id is not None
    rows = sorted(crud.list_artifacts(engine, job.id), key=lambda a: (a.round_index is not None, a.round_index or 0,
                                                                      a.name))
    listed = []
    for row in rows:
        content = served(row, redactor)
        digest = row.sha256 if content == row.content else hashlib.sha256(content.encode()).hexdigest()
        listed.append(ArtifactPublic(name=archive_name(row), round_index=row.round_index, sha256=digest,
                                     size=len(content.encode()), url=f"/jobs/{job.id}/artifacts/{archive_name(row)}"))
    return listed


def zip_name(op: str | None, job_id: int) -> str:
    """Name a job's zip by its op (and number, so two jobs of one op stay apart): relu_job_12.zip."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", op or "").strip("_")[:64]
    return f"{safe}_job_{job_id}.zip" if safe else f"job_{job_id}_artifacts.zip"


@router.get("/{job_id}/artifacts.zip", summary="Download all of a job's files", response_class=Response,
            responses={200: {"content": {"application/zip": {}}, "description": "A zip of every file."}}
            | NOT_FOUND | INVALID)
def zip_artifacts(job: JobDep, engine: EngineDep, redactor: RedactorDep) -> Response:
    """Return a zip of every file the job produced, round files under rounds/round_<i>/."""
    assert job.id is not None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for row in crud.list_artifacts(engine, job.id):
            archive.writestr(archive_name(row), served(row, redactor))
    headers = {"Content-Disposition": f'attachment; filename="{zip_name(job.op_name, job.id)}"'}
    return Response(buffer.getvalue(), media_type="application/zip", headers=headers)


@router.get("/{job_id}/artifacts/{name:path}", summary="Download one of a job's files", response_class=Response,
            responses={200: {"content": {"text/plain": {}, "text/markdown": {}, "application/json": {},
                                         "text/x-python": {}}, "description": "The file's content."}}
            | BAD_NAME | NOT_FOUND | INVALID)
def get_artifact(
    job: JobDep, engine: EngineDep, redactor: RedactorDep, name: str,
    round: Annotated[int | None, Query(ge=0, le=9999, description="The round of a round file.")] = None,
) -> Response:
    """Return a file's content: `name` is `file` or `rounds/round_<n>/file` (or `file?round=<n>`)."""
    assert job.id is not None
    base, round_index = parse_name(name)
    if round is not None and round_index is not None and round != round_index:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"the name says round {round_index} but ?round={round}")
    index = round if round_index is None else round_index
    stored = f"rounds/round_{index}/{base}" if index is not None else base
    row = crud.get_artifact(engine, job.id, stored, index) or crud.get_artifact(engine, job.id, base, index)
    if row is None:
        where = f" of round {index}" if index is not None else ""
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"job {job.id} has no file {base!r}{where}")
    return Response(served(row, redactor), media_type=media_type(base))
