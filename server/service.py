"""Run jobs for the HTTP service: queue, durable graph runs keyed by job, cancel, recovery after a restart."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from agent.graph import build_graph
from agent.llm.config import LlmConfigError
from agent.runner import RECURSION_LIMIT, job_context, remove_work_dir
from agent.runtime.accelerators import AcceleratorSlots, count_accelerators
from agent.runtime.admission import SLOTS
from agent.runtime.isolation import current_policy, log_state, policy_from_settings
from agent.runtime.sandbox import current_owner, kill_owned
from agent.state import JobRequest
from kernelgen.settings import Settings
from server.checkpoints import make_checkpointer
from server.devices import available_devices
from server.executor import Executor, LocalExecutor
from storage import batches, crud
from storage.db import make_engine
from storage.models import Job
from storage.runners import cli_is_gone, server_runner

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
        # Recorded on this server's jobs; its recovery takes only those.
        self.runner = server_runner(settings.server_id, settings.artifact_root)
        self.engine = make_engine(settings.database_url)
        self.checkpointer = make_checkpointer(settings)
        self.graph = build_graph(self.checkpointer)
        # Every stage that runs kernels holds one accelerator (a Ray worker's service sees the one GPU Ray gave it).
        self.accelerators = AcceleratorSlots(1)
        self.concurrency = settings.concurrency or 2
        self.sandbox = policy_from_settings(settings)
        # The process's sandbox slots, which reads, chat and this service's jobs share (agent/runtime/admission.py).
        SLOTS.configure(settings.max_sandboxes, settings.max_sandboxes_per_principal)
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

    def submit(self, request: JobRequest, owner: str | None = None, task_id: int | None = None) -> int:
        """Record a queued job of an owner with its options and hand it to the executor.

        With a batch task, the job is recorded and linked to the task in one transaction, so a kill cannot leave a
        job its batch does not know; a task that has its job already gets no second one (its id is returned).
        """
        if len(request.spec_text.encode()) > self.settings.max_spec_bytes:
            raise ValueError(f"the spec is longer than {self.settings.max_spec_bytes} bytes")
        options = request.model_dump_json(exclude={"spec_text"})
        job = Job(spec_text=request.spec_text, out_dir="", status="queued", options_json=options, owner=owner,
                  runner=self.runner)

        def place(row: Job) -> None:  # the folder is named after the id, known once the row is flushed
            if not request.out_dir:
                row.out_dir = str(self.settings.artifact_root / f"job-{row.id}")
                row.options_json = request.model_copy(update={"out_dir": row.out_dir}).model_dump_json(
                    exclude={"spec_text"})

        if task_id is None:
            job_id = crud.insert_job(self.engine, job, place)
        else:
            job_id, created = batches.create_task_job(self.engine, task_id, job, place)
            if not created:
                return job_id
        crud.add_event(self.engine, job_id, "queued", "job queued")
        self._executor_or_fail().submit(job_id)
        return job_id

    def cancel(self, job_id: int) -> bool:
        """Cancel any unfinished job; False when it is unknown or already finished.

        A queued job, or one whose row says running while no worker of this server runs it (the worker is gone: a
        killed server's job not yet recovered, a graph that stopped without a status, a killed command line's job),
        is cancelled at once. A running one is stopped at its next step, its sandboxed runs killed now.
        """
        job = crud.get_job(self.engine, job_id)
        if job is None or job.status in FINAL_STATUSES:
            return False
        crud.update_job(self.engine, job_id, cancel_requested=True)
        if self._executor_or_fail().withdraw(job_id) or job_id not in self.running() and self._unattended(job):
            fresh = crud.get_job(self.engine, job_id)
            if fresh is not None and fresh.status not in FINAL_STATUSES:  # it may have just ended on its own
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

    def _unattended(self, job: Job) -> bool:
        """Tell whether no live worker has this job (it is not running here): ours, of none, or a dead CLI's."""
        if job.runner is None or job.runner == self.runner:
            return True
        return cli_is_gone(job.runner)  # another server's, or a live command line's, finishes its own

    def _recover(self) -> None:
        # Only this server's jobs (and rows from before runners): another server's, and the command line's, are theirs.
        for job in crud.jobs_with_status(self.engine, ("queued", "running"), runner=self.runner):
            assert job.id is not None
            if job.runner is None:
                crud.update_job(self.engine, job.id, runner=self.runner)
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
                self._settle(job_id, self.graph.invoke(None, config=config, context=context, durability="sync"))
            elif snapshot.values:  # the graph had reached its end; only the final status write was lost
                self._settle(job_id, snapshot.values)
            else:
                # "sync": a step's checkpoint is saved before the next step starts, so a kill re-runs at most the
                # step it cut (whose writes are idempotent), never one whose side effects are already recorded.
                initial: Any = {"job_id": job_id, "request": request}
                self._settle(job_id, self.graph.invoke(initial, config=config, context=context, durability="sync"))
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
            job = crud.get_job(self.engine, job_id)
            if job is not None and job.status in FINAL_STATUSES:  # one halted by shutdown resumes from its folder
                remove_work_dir(self.settings, job_id)

    def _settle(self, job_id: int, values: Any) -> None:
        """After the graph's end: keep the final status it wrote, or write the state's, or fail the job now."""
        job = crud.get_job(self.engine, job_id)
        if job is None or job.status in FINAL_STATUSES:
            return
        status = str(values.get("status", "")) if isinstance(values, dict) else ""
        if status in FINAL_STATUSES:
            crud.update_job(self.engine, job_id, status=status)
        else:  # not left running until the next restart
            self._fail(job_id, "the job's graph ended without a final status")

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
