"""The web page's conversations: threads, messages, and jobs started from a reading."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Request, status

from server import chat
from server.admission import BUSY, run_admitted
from server.chat_schemas import MessageCreate, MessagePublic, StartCreate, ThreadDetail, ThreadsPublic
from server.deps import EngineDep, PrincipalDep, RedactorDep, ServiceDep, SettingsDep, check_spec_size
from server.errors import AUTH_ERRORS, CONFLICT, INPUT_ERRORS, INVALID, NOT_FOUND
from storage import threads
from storage.models import ChatThread, ChatThreadPublic

router = APIRouter(prefix="/threads", tags=["threads"], responses=AUTH_ERRORS)

ThreadId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The thread's id.")]
MessageId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The message's id.")]


def get_thread(thread_id: ThreadId, engine: EngineDep, principal: PrincipalDep) -> ChatThread:
    """Return the thread in the path if the caller may see it; 404 otherwise."""
    thread = threads.get_thread(engine, thread_id)
    if thread is None or not principal.owns(thread.owner):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"thread {thread_id} not found")
    return thread


ThreadDep = Annotated[ChatThread, Depends(get_thread)]


@router.get("", response_model=ThreadsPublic, summary="List threads")
def list_threads(engine: EngineDep, principal: PrincipalDep) -> ThreadsPublic:
    """Return the caller's threads (an admin's: every thread), most recently active first."""
    rows = threads.list_threads(engine, None if principal.admin else principal.name)
    return ThreadsPublic(items=[ChatThreadPublic.model_validate(row.model_dump()) for row in rows])


@router.post("", status_code=status.HTTP_201_CREATED, response_model=ChatThreadPublic, summary="Open a thread")
def create_thread(engine: EngineDep, principal: PrincipalDep) -> ChatThreadPublic:
    """Open an empty thread; its first message names it."""
    return ChatThreadPublic.model_validate(threads.create_thread(engine, principal.name).model_dump())


@router.get("/{thread_id}", response_model=ThreadDetail, summary="Get a thread", responses=NOT_FOUND | INVALID)
def get_thread_detail(thread: ThreadDep, engine: EngineDep) -> ThreadDetail:
    """Return a thread with its messages."""
    assert thread.id is not None
    messages = [MessagePublic.of(m) for m in threads.list_messages(engine, thread.id)]
    return ThreadDetail.model_validate(thread.model_dump() | {"messages": messages})


@router.delete("/{thread_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a thread",
               responses=NOT_FOUND | INVALID)
def delete_thread(thread: ThreadDep, engine: EngineDep) -> None:
    """Delete a thread and its messages; the jobs and batches it started stay (GET /jobs lists them)."""
    assert thread.id is not None
    threads.delete_thread(engine, thread.id)


@router.post("/{thread_id}/messages", response_model=list[MessagePublic], summary="Send a message",
             responses=NOT_FOUND | INPUT_ERRORS | BUSY)
async def send_message(body: MessageCreate, request: Request, thread: ThreadDep, engine: EngineDep,
                       settings: SettingsDep, redactor: RedactorDep, principal: PrincipalDep,
                       service: ServiceDep) -> list[MessagePublic]:
    """Read the message (a spec, an answer, a follow-up) and return it with the reply: a reading or a question."""
    assert thread.id is not None
    check_spec_size(body.text, settings)
    thread_id = thread.id
    # The reply reads code specs in the sandbox: it holds a sandbox slot (429 when none is free), as POST /read does.
    said = await run_admitted(request, principal.name, settings.read_deadline_s,
                              lambda: chat.reply_to(engine, settings, redactor, thread_id, body.text,
                                                    filename=body.filename, devices=service.devices))
    return [MessagePublic.of(m) for m in said]


@router.post("/{thread_id}/messages/{message_id}/start", status_code=status.HTTP_202_ACCEPTED,
             response_model=MessagePublic, summary="Start the job a reading describes",
             responses=NOT_FOUND | CONFLICT | INPUT_ERRORS)
def start_job(message_id: MessageId, thread: ThreadDep, engine: EngineDep, service: ServiceDep,
              principal: PrincipalDep, body: StartCreate | None = None) -> MessagePublic:
    """Queue the job of a reading (or of one task of a task book); 409 if it was started already."""
    assert thread.id is not None
    message = threads.get_message(engine, thread.id, message_id)
    if message is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"message {message_id} not found in thread {thread.id}")
    task = body.task if body and message.kind == "tasks" else None  # a reading has no task number
    started = [m for m in threads.list_messages(engine, thread.id)
               if m.kind == "job" and chat.data_of(m).get("from_message") == message_id
               and chat.data_of(m).get("task") == task]
    if started:
        raise HTTPException(status.HTTP_409_CONFLICT, f"already started as job {started[0].job_id}")
    try:
        job = chat.start(engine, service, thread.id, message, principal.name, task)
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return MessagePublic.of(job)


@router.post("/{thread_id}/messages/{message_id}/batch", status_code=status.HTTP_202_ACCEPTED,
             response_model=MessagePublic, summary="Start a task book's read tasks as a batch",
             responses=NOT_FOUND | CONFLICT | INPUT_ERRORS)
def start_batch(message_id: MessageId, thread: ThreadDep, engine: EngineDep, service: ServiceDep,
                principal: PrincipalDep) -> MessagePublic:
    """Queue one batch with every read task of a task book; 409 if it was started already."""
    assert thread.id is not None
    message = threads.get_message(engine, thread.id, message_id)
    if message is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"message {message_id} not found in thread {thread.id}")
    started = [m for m in threads.list_messages(engine, thread.id)
               if m.kind == "batch" and chat.data_of(m).get("from_message") == message_id]
    if started:
        batch_id = chat.data_of(started[0])["batch_id"]
        raise HTTPException(status.HTTP_409_CONFLICT, f"already started as batch {batch_id}")
    try:
        return MessagePublic.of(chat.start_batch(engine, service, thread.id, message, principal.name))
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
