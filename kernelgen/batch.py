"""`kernelgen batch`: run every task of a task book, a folder of specs or a JSONL file, resumably, with a report."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from kernelgen.settings import Settings

if TYPE_CHECKING:  # the command line starts fast: torch and the database load when a batch runs
    from sqlalchemy import Engine

    from agent.runtime.accelerators import AcceleratorSlots
    from storage.models import BatchTask

console = Console()
FINAL = ("verified", "failed", "rejected")  # a cancelled or interrupted task runs again on --resume
SPEC_FILES = (".md", ".txt", ".py")


def tasks_of(path: Path) -> tuple[str, list[tuple[str, str]]]:
    """Return the source kind and (title, spec) per task of a task book, a folder of specs or a JSONL file."""
    from server.batch_input import jsonl_tasks, taskbook_tasks

    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in SPEC_FILES and p.is_file())
        return "folder", [(p.stem, p.read_text(encoding="utf-8")) for p in files]
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return "jsonl", jsonl_tasks(text)
    return "taskbook", taskbook_tasks(text)


# The options `kernelgen batch` and `kernelgen bench` share.
OutOption = Annotated[Path, typer.Option("--out", "-o", help="Where the tasks' folders and the report go.")]
DeviceOption = Annotated[str, typer.Option(help="auto | cuda | npu | cpu")]
RoundsOption = Annotated[int | None, typer.Option(help="Max optimization rounds per task (1-5).")]
ResumeOption = Annotated[bool, typer.Option("--resume", help="Skip the tasks already finished in --out.")]
JobsOption = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1, help="Tasks at once (default: one per GPU or NPU here, else 1).")]
ForceOption = Annotated[bool, typer.Option(
    "--force", help="Write over the files an earlier run left in the output folder (default: refuse, or a fresh "
                    "folder <op>-2, <op>-3, ... beside kernelgen_out/<op>).")]


def check_device(device: str) -> None:
    """Refuse, once and before anything is recorded or run, a device name or an accelerator that is not here."""
    if device not in ("auto", "cuda", "npu", "cpu"):
        raise typer.BadParameter("device must be auto, cuda, npu or cpu", param_hint="--device")
    if device in ("cuda", "npu"):
        from agent.runtime.devices import detect  # torch loads only for an accelerator asked for by name

        try:
            detect(device)
        except RuntimeError:
            raise typer.BadParameter(
                f"{device} was asked for, but this machine has no {device.upper()} device that torch can see; "
                "nothing was run. Use --device cpu (the Triton interpreter: accuracy only, nothing is timed) or "
                "--device auto.", param_hint="--device") from None


def refuse_a_used_folder(folder: Path, what: str = "an earlier run's files") -> None:
    """Refuse an output folder that already holds files, unless the caller passes --force."""
    if folder.is_dir() and any(folder.iterdir()):
        raise typer.BadParameter(f"{folder} already holds {what}; choose another --out, or add --force to write "
                                 "over them", param_hint="--out")


def batch(
    file: Annotated[Path, typer.Argument(help="A task book (.md), a folder of spec files, or a JSONL of specs.",
                                         exists=True)],
    out: OutOption = Path("kernelgen_batch"), device: DeviceOption = "auto", rounds: RoundsOption = None,
    resume: ResumeOption = False, jobs: JobsOption = None, force: ForceOption = False,
) -> None:
    """Run a batch of tasks, one per accelerator at a time; write the report (json, md, html) and its plots."""
    run_batch(file, out, device=device, rounds=rounds, resume=resume, jobs=jobs, force=force)


def run_batch(file: Path, out: Path, *, device: str, rounds: int | None, resume: bool, jobs: int | None,
              force: bool = False) -> None:
    """Create (or, resuming, find) the batch of a file, run its unfinished tasks, write the report; exit 0 or 1."""
    from storage import batches
    from storage.db import make_engine
    from storage.runners import fail_abandoned_cli_jobs

    if not resume and not force:  # a second batch into one folder would write over the first one's tasks and report
        refuse_a_used_folder(out, "an earlier batch's files (--resume continues it)")
    check_device(device)
    settings = Settings()
    engine = make_engine(settings.database_url)
    fail_abandoned_cli_jobs(engine)  # a killed command line's jobs (this one's, before --resume) end as failed
    batch_id = _batch_of(engine, settings, file, out, device, rounds, resume)
    tasks_rows = batches.list_tasks(engine, batch_id)
    from agent.runtime.accelerators import AcceleratorSlots, count_accelerators

    present = count_accelerators() if device != "cpu" else 0
    slots = AcceleratorSlots(present)  # kernels of one task at a time on each accelerator
    if not present:  # said before the first task, not found out from the report
        console.print(f"{'No GPU or NPU here' if device != 'cpu' else '--device cpu'}: every task runs on the CPU "
                      "through the Triton interpreter: accuracy only, nothing is timed.", highlight=False)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        overall = progress.add_task("batch", total=len(tasks_rows))
        with ThreadPoolExecutor(max_workers=jobs or max(1, present)) as pool:
            running = [pool.submit(_run_task, engine, settings, task, out, device, rounds, slots, progress, overall)
                       for task in tasks_rows]
            for future in running:
                future.result()  # what is not a job's own failure (the database, say) stops the batch loudly
    _write_report(engine, batch_id, out)


def _batch_of(engine: Engine, settings: Settings, file: Path, out: Path, device: str, rounds: int | None,
              resume: bool) -> int:
    """Return the batch that --out resumes, or record a new one for the file's tasks."""
    from server.batch_input import BatchInputError, checked
    from storage import batches

    state_file = out / "batch.json"
    if resume and state_file.exists():
        batch_id = int(json.loads(state_file.read_text())["batch"])
        if batches.get_batch(engine, batch_id) is None:
            raise typer.BadParameter(f"batch {batch_id} of {state_file} is not in {settings.database_url}",
                                     param_hint="--resume")
        return batch_id
    try:
        source, tasks = tasks_of(file)
        checked(tasks, settings.max_spec_bytes)
    except (BatchInputError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="FILE") from None
    options = {"device": device} | ({"rounds": rounds} if rounds else {})
    batch_id = batches.create_batch(engine, None, file.name, f"cli-{source}", json.dumps(options), tasks)
    out.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps({"batch": batch_id, "file": str(file)}))
    return batch_id


def _run_task(engine: Engine, settings: Settings, task: BatchTask, out: Path, device: str, rounds: int | None,
              slots: AcceleratorSlots, progress: Progress, overall: TaskID) -> None:
    """Run one task as a job (unless it finished before) and show its progress; a crash fails only this task."""
    from agent.runner import run_job
    from agent.state import JobRequest
    from storage import batches, crud

    job = crud.get_job(engine, task.job_id) if task.job_id is not None else None
    if job is not None and job.status in FINAL:
        progress.advance(overall)
        return
    title, number = task.title[:40], task.index + 1
    line = progress.add_task(f"{number}. {title}", total=None)

    def report(stage: str, message: str) -> None:
        progress.update(line, description=f"{number}. {title}: {stage}")

    folder = out / f"task_{number:03d}_{_slug(task.title)}"
    request = JobRequest(spec_text=task.spec_text, out_dir=str(folder), device=device, rounds=rounds)
    try:
        from kernelgen.conformance import stage_clock  # each stage's seconds, for the suite's report
        final = run_job(request, settings, stage_clock(folder, report), accelerators=slots)
    except Exception as exc:  # the job row says failed; the other tasks still run (--resume retries this one)
        progress.update(line, description=f"{number}. {title}: crashed: {exc}"[:120], total=1, completed=1)
        progress.advance(overall)
        return
    assert task.id is not None
    batches.link_job(engine, task.id, int(final["job_id"]))
    progress.update(line, description=f"{number}. {title}: {final.get('status')}", total=1, completed=1)
    progress.advance(overall)


def _write_report(engine: Engine, batch_id: int, out: Path) -> None:
    """Write report.json, .md, .html and the plots; exit 0 when every task verified, else 1."""
    from server import batch_report
    from server.batch_plots import PLOTS, render
    from storage import batches, crud

    stored = batches.get_batch(engine, batch_id)
    assert stored is not None
    rows = []
    for task in batches.list_tasks(engine, batch_id):
        job = crud.get_job(engine, task.job_id) if task.job_id is not None else None
        rows.append((task, job, job.status if job else "queued"))  # no server: the row's status is the live one
    built = batch_report.build(engine, stored, rows)
    (out / "report.json").write_text(json.dumps(built, indent=1, ensure_ascii=False))
    (out / "report.md").write_text(batch_report.to_markdown(built))
    (out / "report.html").write_text(batch_report.to_html(built))
    for name in PLOTS:
        (out / f"{name}.png").write_bytes(render(name, built))
    totals = built["totals"]
    untimed = "; nothing was timed (accuracy only)" if not totals["measured"] else ""
    console.print(f"verified {batch_report.verified_line(totals)}{untimed}; report: {out / 'report.md'}",
                  highlight=False, soft_wrap=True)
    raise typer.Exit(code=0 if totals["verified"] == totals["tasks"] else 1)


def _slug(title: str) -> str:
    """Return a folder-safe short form of a task title."""
    return re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_")[:40].lower() or "task"
