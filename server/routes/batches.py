"""Submit batches of tasks, follow them, and fetch their report and files."""

from __future__ import annotations

import io
import zipfile
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response, status
from fastapi.responses import HTMLResponse, PlainTextResponse, StreamingResponse

from agent.generators.config_rules import config_from_label
from agent.llm.config import LlmConfigError, resolve_llm
from server import batch_plots, batch_report, batches
from server.batch_input import BatchInputError, checked, jsonl_tasks, spec_tasks, taskbook_tasks
from server.batch_schemas import BatchAccepted, BatchCreate, BatchDetail, BatchesPublic
from server.deps import BearerDep, EngineDep, PrincipalDep, RedactorDep, ServiceDep, SettingsDep
from server.errors import AUTH_ERRORS, INPUT_ERRORS, INVALID, NOT_FOUND
from server.routes.artifacts import archive_name, served
from server.routes.batch_events import stream_batch
from server.stream_access import StreamAccess
from storage import batches as stored
from storage import crud
from storage.models import Batch

router = APIRouter(prefix="/batches", tags=["batches"], responses=AUTH_ERRORS)
BatchId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The batch's id.")]


def get_batch(batch_id: BatchId, engine: EngineDep, principal: PrincipalDep) -> Batch:
    """Return the batch in the path if the caller may see it; 404 otherwise."""
    batch = stored.get_batch(engine, batch_id)
    if batch is None or not principal.owns(batch.owner):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"batch {batch_id} not found")
    return batch


BatchDep = Annotated[Batch, Depends(get_batch)]


def _report(service: ServiceDep, batch: Batch) -> dict[str, object]:
    """Build a batch's report from its tasks' jobs."""
    assert batch.id is not None
    rows = batches.task_rows(service, stored.list_tasks(service.engine, batch.id))
    return batch_report.build(service.engine, batch, rows)


def _detail(service: ServiceDep, batch: Batch) -> BatchDetail:
    return BatchDetail.model_validate(batch.model_dump() | batches.progress(service, batch))


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=BatchAccepted, summary="Submit a batch",
             responses=INPUT_ERRORS)
def submit(body: BatchCreate, response: Response, service: ServiceDep, settings: SettingsDep,
           principal: PrincipalDep) -> BatchAccepted:
    """Queue one job per task of a task book, a list of specs, or JSONL records."""
    try:
        source = "taskbook" if body.taskbook is not None else "specs" if body.specs is not None else "jsonl"
        tasks = (taskbook_tasks(body.taskbook) if body.taskbook is not None
                 else spec_tasks(body.specs) if body.specs is not None else jsonl_tasks(body.jsonl or ""))
        checked(tasks, settings.max_spec_bytes)
    except BatchInputError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    if body.device != "auto" and body.device not in service.devices:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"device: {body.device} is not available here")
    try:
        resolve_llm(body.llm, settings)  # an LLM the server does not have fails now, not in every task
    except LlmConfigError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"llm: {exc}") from None
    options = body.model_dump(include={"device", "rounds", "target_speedup", "llm", "initial_config"},
                              exclude_none=True)
    if "initial_config" in options:
        options["initial_config"] = config_from_label(options["initial_config"]).model_dump()
    batch_id = batches.submit_batch(service, principal.name, body.name, source, tasks, options)
    base = f"/batches/{batch_id}"
    response.headers["Location"] = base
    links = {"self": base, "events": f"{base}/events", "report": f"{base}/report", "zip": f"{base}/artifacts.zip",
             "cancel": f"{base}/cancel"}
    return BatchAccepted(id=batch_id, tasks=len(tasks), links=links)


@router.get("", response_model=BatchesPublic, summary="List batches")
def list_batches(service: ServiceDep, principal: PrincipalDep) -> BatchesPublic:
    """Return the caller's batches (an admin's: every batch), newest first."""
    rows = stored.list_batches(service.engine, None if principal.admin else principal.name)
    return BatchesPublic(items=[_detail(service, row) for row in rows])


@router.get("/{batch_id}", response_model=BatchDetail, summary="Get a batch", responses=NOT_FOUND | INVALID)
def get(batch: BatchDep, service: ServiceDep) -> BatchDetail:
    """Return a batch's progress: tasks per status, each task's job and stage, and the time left."""
    return _detail(service, batch)


@router.post("/{batch_id}/cancel", status_code=status.HTTP_202_ACCEPTED, response_model=BatchDetail,
             summary="Cancel a batch", responses=NOT_FOUND | INVALID)
def cancel(batch: BatchDep, service: ServiceDep) -> BatchDetail:
    """Cancel every unfinished task; finished ones keep their results."""
    batches.cancel_batch(service, batch)
    return _detail(service, stored.get_batch(service.engine, batch.id or 0) or batch)


@router.get("/{batch_id}/report", summary="Get a batch's report", response_model=None,
            responses={200: {"content": {"application/json": {}, "text/markdown": {}, "text/html": {}}}}
            | NOT_FOUND | INVALID)
def report(batch: BatchDep, service: ServiceDep, redactor: RedactorDep,
           format: Annotated[Literal["json", "md", "html"], Query(description="json, md or html")] = "json",
           ) -> Response | dict[str, object]:
    """Return the report: each task's figures, exec accuracy, fast_p vs eager and torch.compile, geomeans."""
    built = redactor.value(_report(service, batch))
    if format == "md":
        return PlainTextResponse(batch_report.to_markdown(built), media_type="text/markdown; charset=utf-8")
    if format == "html":
        return HTMLResponse(batch_report.to_html(built), headers={"Content-Security-Policy": "default-src 'none'"})
    return dict(built)


@router.get("/{batch_id}/plots/{name}.png", summary="Get a plot of a batch's report", response_class=Response,
            responses={200: {"content": {"image/png": {}}}} | NOT_FOUND | INVALID)
def plot(batch: BatchDep, service: ServiceDep, name: Literal["fast_p", "speedups", "roofline"]) -> Response:
    """Return the fast_p curve, the speedup distribution or the roofline scatter of the batch, as PNG."""
    built = _report(service, batch)
    return Response(batch_plots.render(name, built), media_type="image/png")


@router.get("/{batch_id}/artifacts.zip", summary="Download every task's files", response_class=Response,
            responses={200: {"content": {"application/zip": {}}}} | NOT_FOUND | INVALID)
def zip_all(batch: BatchDep, engine: EngineDep, redactor: RedactorDep) -> Response:
    """Return a zip with one folder per task (task_<n>_<op>/), each holding its job's files."""
    assert batch.id is not None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for task in stored.list_tasks(engine, batch.id):
            job = crud.get_job(engine, task.job_id) if task.job_id is not None else None
            if job is None or job.id is None:
                continue
            folder = f"task_{task.index + 1:03d}_{job.op_name or 'unread'}"
            for row in crud.list_artifacts(engine, job.id):
                archive.writestr(f"{folder}/{archive_name(row)}", served(row, redactor))
    headers = {"Content-Disposition": f'attachment; filename="batch_{batch.id}.zip"'}
    return Response(buffer.getvalue(), media_type="application/zip", headers=headers)


@router.get("/{batch_id}/events", summary="Follow a batch", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}}} | NOT_FOUND | INVALID)
def events(request: Request, batch: BatchDep, service: ServiceDep, redactor: RedactorDep, settings: SettingsDep,
           credentials: BearerDep) -> StreamingResponse:
    """Stream every task's job events (with the task index), then `end` once every task is over."""
    assert batch.id is not None
    after = request.headers.get("last-event-id", "0")
    start = int(after) if after.isdigit() and len(after) <= 12 else 0
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    access = StreamAccess(settings, service.engine, credentials, batch.owner)  # re-checked while it streams
    return StreamingResponse(stream_batch(request, service, redactor, batch.id, start, access),
                             media_type="text/event-stream", headers=headers)

