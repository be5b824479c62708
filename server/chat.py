"""The web page's conversation: read what the person wrote, answer with a reading or a question, start jobs."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from agent.generators.config_rules import config_from_label
from agent.reader.followup import FollowUp, FollowUpError, derive
from agent.reader.outcome import ReadOutcome, read_outcomes
from agent.reading import Reading
from agent.state import JobRequest
from kernelgen.settings import Settings
from server.redact import Redactor
from server.service import JobService
from storage import crud, threads
from storage.models import ChatMessage

REPLY_KINDS = ("reading", "question", "tasks", "job")  # what a later message can refer back to (not a batch)


def data_of(message: ChatMessage) -> dict[str, Any]:
    """Parse a message's data (an empty dict for a damaged row)."""
    try:
        data = json.loads(message.data_json or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def last_reply(engine: Engine, thread_id: int) -> ChatMessage | None:
    """Return the service's latest reply that a new message may answer or follow up on."""
    for message in reversed(threads.list_messages(engine, thread_id)):
        if message.role == "assistant" and message.kind in REPLY_KINDS:
            return message
    return None


def read_spec(spec: str, settings: Settings) -> list[ReadOutcome]:
    """Read a spec (or each task of a task book) in a scratch folder, as `POST /read` does."""
    Path(settings.work_dir).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="chat-", dir=settings.work_dir))  # code specs are traced in a sandbox here
    try:
        return read_outcomes(spec, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def runs_on(devices: dict[str, str], asked: str | None = None) -> dict[str, Any]:
    """Say where a job started here runs: on an accelerator (timed), or on the CPU interpreter (accuracy only).

    `asked` is the device the spec names (a task book's "device: CUDA"); the jobs run where the server can.
    """
    kind = next((k for k in ("cuda", "npu") if k in devices), "cpu")
    wanted = asked.lower() if asked else None
    return {"kind": kind, "name": devices.get(kind, "CPU"), "timed": kind != "cpu",
            "asked": wanted if wanted in ("cuda", "npu") and wanted != kind else None}


def reply_to(engine: Engine, settings: Settings, redactor: Redactor, thread_id: int, text: str,
             filename: str | None = None, devices: dict[str, str] | None = None) -> list[ChatMessage]:
    """Record the person's message (with the name of the file it came from) and the service's reply; return both."""
    said = threads.add_message(engine, thread_id, ChatMessage(
        thread_id=thread_id, role="user", text=text, data_json=json.dumps({"file": filename} if filename else {})))
    here = devices if devices is not None else {"cpu": "CPU"}
    before = last_reply(engine, thread_id)
    spec, options, changes, derived_from = text, {}, [], None
    alone = read_spec(text, settings)
    if before is not None and before.kind == "question" and before.spec_text and not _reads(alone):
        spec = f"{before.spec_text}\n{text}"  # the answer completes the spec that raised the question
        alone = []
    elif before is not None and before.kind in ("reading", "job") and before.spec_text:
        try:
            follow = _follow_up(before, text)
        except FollowUpError as exc:
            return [said, _add(engine, thread_id, "error", str(exc))]
        if follow is not None:
            spec, changes, derived_from = follow.spec_text, follow.changes, before.job_id
            options = {k: v for k, v in (("rounds", follow.rounds), ("target_speedup", follow.target_speedup)) if v}
            options |= {k: v for k, v in data_of(before).get("options", {}).items() if k not in options}
            if follow.rounds and before.job_id:
                options |= _continue_from(engine, before.job_id)
    outcomes = alone if spec == text and alone else read_spec(spec, settings)
    if len(outcomes) > 1:
        tasks = [redactor.value(o.model_dump(mode="json")) for o in outcomes]
        read = sum(o.status == "read" for o in outcomes)
        asked = next((o.reading.device for o in outcomes if o.reading is not None
                      and o.reading.device.lower() in ("cuda", "npu")), None)
        reply = _add(engine, thread_id, "tasks", f"{len(outcomes)} tasks, {read} read", spec,
                     {"tasks": tasks, "runs_on": runs_on(here, asked)})
        return [said, reply]
    outcome = outcomes[0]
    if outcome.status == "question" or outcome.reading is None:
        return [said, _add(engine, thread_id, "question", redactor.text(outcome.question or ""), spec)]
    data = {"reading": redactor.value(outcome.reading.model_dump(mode="json")), "options": options,
            "changes": changes, "derived_from": derived_from, "runs_on": runs_on(here, outcome.reading.device)}
    return [said, _add(engine, thread_id, "reading", redactor.text(outcome.understood or ""), spec, data)]


def start(engine: Engine, service: JobService, thread_id: int, message: ChatMessage, owner: str | None,
          task: int | None = None) -> ChatMessage:
    """Submit the job a reading describes (or one task of a task book) and record it in the thread."""
    data = data_of(message)
    if message.role != "assistant":
        raise ValueError("only a reading (the service's reply) can be started, not what was written")
    if message.kind == "tasks":
        tasks = data.get("tasks", [])
        if task is None or not 0 <= task < len(tasks) or tasks[task].get("status") != "read":
            raise ValueError("pick a task that was read")
        spec = _task_spec(message.spec_text or "", task)
        reading, options = tasks[task].get("reading"), {}
    elif message.kind == "reading":
        spec, reading, options = message.spec_text or "", data.get("reading"), data.get("options", {})
    else:
        raise ValueError("only a reading can be started")
    request = JobRequest(spec_text=spec, rounds=options.get("rounds"), target_speedup=options.get("target_speedup"),
                         initial_config=config_from_label(options["initial_config"])
                         if options.get("initial_config") else None)
    job_id = service.submit(request, owner=owner)
    asked = reading.get("device") if isinstance(reading, dict) else None
    job_data = {"reading": reading, "options": options, "from_message": message.id, "task": task,
                "derived_from": data.get("derived_from"), "runs_on": runs_on(service.devices, asked)}
    return threads.add_message(engine, thread_id, ChatMessage(
        thread_id=thread_id, role="assistant", kind="job", text=f"job {job_id}", spec_text=spec,
        data_json=json.dumps(job_data), job_id=job_id))


def start_batch(engine: Engine, service: JobService, thread_id: int, message: ChatMessage,
                owner: str | None) -> ChatMessage:
    """Submit every read task of a task book as one batch and record it in the thread."""
    from server.batches import submit_batch

    tasks = data_of(message).get("tasks", []) if message.role == "assistant" else []
    chosen = [(t.get("task") or f"task {i + 1}", _task_spec(message.spec_text or "", i))
              for i, t in enumerate(tasks) if t.get("status") == "read"]
    if message.kind != "tasks" or not chosen:
        raise ValueError("only a task book with read tasks can be started as a batch")
    batch_id = submit_batch(service, owner, chosen[0][0] if len(chosen) == 1 else f"{len(chosen)} tasks", "taskbook",
                            chosen, {})
    return threads.add_message(engine, thread_id, ChatMessage(
        thread_id=thread_id, role="assistant", kind="batch", text=f"batch {batch_id}", spec_text=message.spec_text,
        data_json=json.dumps({"batch_id": batch_id, "from_message": message.id, "tasks": len(chosen),
                              "runs_on": runs_on(service.devices, data_of(message).get("runs_on", {}).get("asked"))})))


def _follow_up(before: ChatMessage, text: str) -> FollowUp | None:
    """Read a message as a change to the spec of the last reading or job (None: a spec of its own)."""
    reading = data_of(before).get("reading")
    if not reading or before.spec_text is None:
        return None
    return derive(before.spec_text, Reading.model_validate(reading), text)


def _reads(outcomes: list[ReadOutcome]) -> bool:
    """Tell whether a text read on its own (a new spec rather than an answer to the pending question)."""
    return bool(outcomes) and all(o.status == "read" for o in outcomes)


def _task_spec(book: str, task: int) -> str:
    """Return one task's text of a task book (with the book's shared header lines)."""
    from agent.reader import split_tasks

    return split_tasks(book)[task]


def _continue_from(engine: Engine, job_id: int) -> dict[str, Any]:
    """Return the option that starts a follow-up job from the previous job's best configuration."""
    job = crud.get_job(engine, job_id)
    if job is None or job.best_round is None:
        return {}
    best = [r for r in crud.list_rounds(engine, job_id) if r.index == job.best_round]
    if not best or not best[0].config:
        return {}
    try:
        config_from_label(best[0].config)
    except ValueError:
        return {}
    return {"initial_config": best[0].config}


def _add(engine: Engine, thread_id: int, kind: str, text: str, spec: str | None = None,
         data: dict[str, Any] | None = None) -> ChatMessage:
    """Append one of the service's replies."""
    return threads.add_message(engine, thread_id, ChatMessage(
        thread_id=thread_id, role="assistant", kind=kind, text=text, spec_text=spec, data_json=json.dumps(data or {})))
