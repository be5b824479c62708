"""Run jobs for the HTTP service: queue, durable graph runs keyed by job, cancel, recovery after a restart."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from agent.graph import build_graph
from agent.llm.config import LlmConfigError
from agent.runner import RECURSION_LIMIT, job_context
from agent.runtime.accelerators import AcceleratorSlots, count_accelerators
from agent.runtime.isolation import current_policy, log_state, policy_from_settings
from agent.runtime.sandbox import current_owner, kill_owned
from agent.state import JobRequest
from kernelgen.settings import Settings
from server.checkpoints import make_checkpointer
from server.devices import available_devices
from server.executor import Executor, LocalExecutor
from storage import crud
from storage.db import make_engine
from storage.models import Job

log = logging.getLogger(__name__)

FINAL_STATUSES = ("verified", "failed", "rejected", "cancelled")
# A job interrupted this many times (server killed while it ran) is failed rather than resumed again.
MAX_RESTARTS = 3


class JobCancelled(Exception):
    """Raised inside a job's graph run when the job was cancelled."""


class JobService:
    """Own the database, the checkpointer and the executor; the API calls only these methods."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = make_engine(settings.database_url)
        self.checkpointer = make_checkpointer(settings)
        self.graph = build_graph(self.checkpointer)
        # Every stage that runs kernels holds one accelerator (a Ray worker's service sees the one GPU Ray gave it).
        self.accelerators = AcceleratorSlots(1)
        self.concurrency = settings.concurrency or 2
        self.sandbox = policy_from_settings(settings)
        self.devices: dict[str, str] = {}  # the device kinds jobs can ask for, found at start
        self._cancels: dict[int, threading.Event] = {}
        self._stopping = threading.Event()
        self._executor: Executor | None = None

    def start(self) -> None:
        """Find the devices and the sandbox's isolation, start the workers, then requeue jobs left over."""
        self.devices = available_devices()
        self.accelerators = AcceleratorSlots(count_accelerators())
        # Auto: two jobs, or one per accelerator where there are more, so each GPU has a job measuring on it.
        self.concurrency = self.settings.concurrency or max(2, self.accelerators.count)
        log_state(self.sandbox)  # loud when model-written code would run, or be refused, without isolation
        if self.settings.executor == "ray":
            from server.ray_executor import RayExecutor

            ray_executor = RayExecutor(self.settings, self._fail)
            self.devices = ray_executor.devices() | self.devices  # the cluster's accelerators, named as the cluster's
            self._executor = ray_executor
        else:
            self._executor = LocalExecutor(self._run, self.concurrency)
        self._recover()

    def stop(self) -> None:
        """Stop the workers; running jobs halt at their next step and resume from their checkpoint at the next start."""
        self._stopping.set()
        if self._executor is not None:
            for job_id in self._executor.running():
                kill_owned(job_id)
            self._executor.shutdown()

    def submit(self, request: JobRequest, owner: str | None = None) -> int:
        """Record a queued job of an owner with its options and hand it to the executor."""
        if len(request.spec_text.encode()) > self.settings.max_spec_bytes:
            raise ValueError(f"the spec is longer than {self.settings.max_spec_bytes} bytes")
        options = request.model_dump_json(exclude={"spec_text"})
        job_id = crud.create_job(self.engine, request.spec_text, "", status="queued", options_json=options,
                                 owner=owner)
        if not request.out_dir:  # the folder is named after the id, known only now
            out_dir = str(self.settings.artifact_root / f"job-{job_id}")
            options = request.model_copy(update={"out_dir": out_dir}).model_dump_json(exclude={"spec_text"})
            crud.update_job(self.engine, job_id, out_dir=out_dir, options_json=options)
        crud.add_event(self.engine, job_id, "queued", "job queued")
        self._executor_or_fail().submit(job_id)
        return job_id

    def cancel(self, job_id: int) -> bool:
        """Cancel a queued or running job; False when it is unknown or already finished."""
        job = crud.get_job(self.engine, job_id)
        if job is None or job.status in FINAL_STATUSES:
            return False
        crud.update_job(self.engine, job_id, cancel_requested=True)
        if self._executor_or_fail().withdraw(job_id) or job.status == "queued" and job_id not in self.running():
            self._finish_cancelled(job_id)
            return True
        self._cancels.setdefault(job_id, threading.Event()).set()
        killed = kill_owned(job_id)
        log.info("job %s: cancel requested, %d sandboxed runs killed", job_id, killed)
        return True

    def queue_position(self, job_id: int) -> int | None:
        """Return a queued job's 1-based place in the queue, or None."""
        return self._executor_or_fail().queue_position(job_id)

    def live_status(self, job: Job) -> tuple[str, int | None]:
        """Return a job's status and queue place as the workers see them now, not as last read."""
        assert job.id is not None
        if job.status != "queued":
            return job.status, None
        # A worker pops a job before it writes "running", and writes the final status before it lets go:
        # the row and the executor are read in turns until they agree (twice suffices, see the test).
        for _ in range(3):
            position = self.queue_position(job.id)
            if position is not None:
                return "queued", position
            fresh = crud.get_job(self.engine, job.id)
            if fresh is None or fresh.status != "queued":
                return (fresh or job).status, None
            if job.id in self.running():
                return "running", None
        return "queued", None  # recorded, and not yet handed to the executor

    def running(self) -> list[int]:
        """List the jobs running now."""
        return self._executor_or_fail().running()

    def _executor_or_fail(self) -> Executor:
        if self._executor is None:
            raise RuntimeError("the job service is not started")
        return self._executor

    def _recover(self) -> None:
        for job in crud.jobs_with_status(self.engine, ("queued", "running")):
            assert job.id is not None
            if job.cancel_requested:
                self._finish_cancelled(job.id)
                continue
            if job.status == "running":
                restarts = sum(1 for e in crud.list_events(self.engine, job.id) if e.stage == "restart")
                if restarts >= MAX_RESTARTS:
                    self._fail(job.id, f"the service stopped {restarts + 1} times while this job ran; not resumed "
                                       "again (see its events for the last stage reached)")
                    continue
                crud.add_event(self.engine, job.id, "restart",
                               "the service restarted while this job ran: it resumes from its last checkpoint")
                crud.update_job(self.engine, job.id, status="queued")
            self._executor_or_fail().submit(job.id)

    def run_one(self, job_id: int, watch_s: float = 2.0) -> None:
        """Run one job here, as an executor's worker does (a Ray worker calls this on a service it never starts).

        The cancel comes through the job's row, written by the API's process: a watcher reads it every watch_s and
        kills the job's sandboxed runs at once, so a long timing run does not go on until the next stage.
        """
        done = threading.Event()

        def watch() -> None:
            while not done.wait(watch_s):
                job = crud.get_job(self.engine, job_id)
                if job is not None and job.cancel_requested:
                    self._cancels.setdefault(job_id, threading.Event()).set()
                    kill_owned(job_id)
                    return

        watcher = threading.Thread(target=watch, name=f"kernelgen-cancel-watch-{job_id}", daemon=True)
        watcher.start()
        try:
            self._run(job_id)
        finally:
            done.set()

    def _run(self, job_id: int) -> None:
        job = crud.get_job(self.engine, job_id)
        if job is None or job.status in FINAL_STATUSES:
            return
        if job.cancel_requested:
            self._finish_cancelled(job_id)
            return
        cancel = self._cancels.setdefault(job_id, threading.Event())
        if cancel.is_set():
            self._finish_cancelled(job_id)
            return
        try:
            options = json.loads(job.options_json or "{}")
            request = JobRequest.model_validate(options | {"spec_text": job.spec_text})
        except ValueError as exc:
            self._fail(job_id, f"the job's stored options cannot be read: {exc}")
            return
        try:
            context = job_context(self.settings, self.engine, self._reporter(job_id, cancel), job_id=job_id,
                                  llm=request.llm, accelerators=self.accelerators)
        except LlmConfigError as exc:  # the server's LLM settings changed since the job was queued
            self._fail(job_id, str(exc))
            return
        crud.update_job(self.engine, job_id, status="running")
        config: Any = {"configurable": {"thread_id": f"job-{job_id}"}, "recursion_limit": RECURSION_LIMIT}
        token = current_owner.set(job_id)
        policy = current_policy.set(self.sandbox)  # this service's sandbox settings, not the environment's
        try:
            snapshot = self.graph.get_state(config)
            if snapshot.values and snapshot.tasks:
                # `tasks` also lists steps whose writes were saved before the kill (they are not in `next`).
                pending = ", ".join(dict.fromkeys(task.name for task in snapshot.tasks))
                crud.add_event(self.engine, job_id, "resume", f"resuming from the last checkpoint, at {pending}")
                self.graph.invoke(None, config=config, context=context)
            elif snapshot.values:  # the graph had reached its end; only the final status write was lost
                status = str(snapshot.values.get("status", ""))
                if status not in FINAL_STATUSES:
                    self._fail(job_id, "the job's graph ended without a final status")
                else:
                    crud.update_job(self.engine, job_id, status=status)
            else:
                self.graph.invoke({"job_id": job_id, "request": request}, config=config, context=context)
        except JobCancelled:
            if self._stopping.is_set() and not cancel.is_set():
                log.info("job %s halted by shutdown; it resumes at the next start", job_id)
            else:
                self._finish_cancelled(job_id)
        except Exception as exc:  # the job fails with its reason; the service goes on
            log.exception("job %s failed", job_id)
            self._fail(job_id, f"{type(exc).__name__}: {exc}")
        finally:
            current_policy.reset(policy)
            current_owner.reset(token)
            self._cancels.pop(job_id, None)

    def _reporter(self, job_id: int, cancel: threading.Event) -> Callable[[str, str], None]:
        def report(stage: str, message: str) -> None:
            # Checked before recording: after a stop or a cancel, a stage reports the run they killed ("crashed"),
            # which is not its result. A stopped stage runs again after the restart; a cancelled one never does.
            if cancel.is_set() or self._stopping.is_set():
                raise JobCancelled()
            job = crud.get_job(self.engine, job_id)  # a cancel asked of another process (a Ray worker runs this)
            if job is not None and job.cancel_requested:
                cancel.set()
                raise JobCancelled()
            crud.add_event(self.engine, job_id, stage, message)

        return report

    def _finish_cancelled(self, job_id: int) -> None:
        crud.add_event(self.engine, job_id, "cancelled", "job cancelled")
        crud.update_job(self.engine, job_id, status="cancelled", message="cancelled on request")

    def _fail(self, job_id: int, reason: str) -> None:
        crud.add_event(self.engine, job_id, "error", reason)
        crud.update_job(self.engine, job_id, status="failed", message=reason)
