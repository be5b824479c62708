"""`kernelgen batch`: run every task of a task book, a folder of specs or a JSONL file, resumably, with a report."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from kernelgen.settings import Settings

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


def batch(
    file: Annotated[Path, typer.Argument(help="A task book (.md), a folder of spec files, or a JSONL of specs.",
                                         exists=True)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where the tasks' folders and the report go.")] = Path(
        "kernelgen_batch"),
    device: Annotated[str, typer.Option(help="auto | cuda | npu | cpu")] = "auto",
    rounds: Annotated[int | None, typer.Option(help="Max optimization rounds per task (1-5).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Skip the tasks already finished in --out.")] = False,
) -> None:
    """Run a batch of tasks one after another; write the report (json, md, html) and its plots beside them."""
    from agent.runner import run_job
    from agent.state import JobRequest
    from server import batch_report
    from server.batch_input import BatchInputError, checked
    from storage import batches, crud
    from storage.db import make_engine

    if device not in ("auto", "cuda", "npu", "cpu"):
        raise typer.BadParameter("device must be auto, cuda, npu or cpu", param_hint="--device")
    settings = Settings()
    engine = make_engine(settings.database_url)
    state_file = out / "batch.json"
    if resume and state_file.exists():
        batch_id = int(json.loads(state_file.read_text())["batch"])
        if batches.get_batch(engine, batch_id) is None:
            raise typer.BadParameter(f"batch {batch_id} of {state_file} is not in {settings.database_url}",
                                     param_hint="--resume")
    else:
        try:
            source, tasks = tasks_of(file)
            checked(tasks, settings.max_spec_bytes)
        except (BatchInputError, ValueError) as exc:
            raise typer.BadParameter(str(exc), param_hint="FILE") from None
        options = {"device": device} | ({"rounds": rounds} if rounds else {})
        batch_id = batches.create_batch(engine, None, file.name, f"cli-{source}", json.dumps(options), tasks)
        out.mkdir(parents=True, exist_ok=True)
        state_file.write_text(json.dumps({"batch": batch_id, "file": str(file)}))
    tasks_rows = batches.list_tasks(engine, batch_id)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        overall = progress.add_task("batch", total=len(tasks_rows))
        for task in tasks_rows:
            job = crud.get_job(engine, task.job_id) if task.job_id is not None else None
            if job is not None and job.status in FINAL:
                progress.advance(overall)
                continue
            line = progress.add_task(f"{task.index + 1}. {task.title[:40]}", total=None)

            def report(stage: str, message: str, line: TaskID = line, title: str = task.title[:40],
                       number: int = task.index + 1) -> None:
                progress.update(line, description=f"{number}. {title}: {stage}")

            folder = out / f"task_{task.index + 1:03d}_{_slug(task.title)}"
            request = JobRequest(spec_text=task.spec_text, out_dir=str(folder), device=device, rounds=rounds)
            try:
                final = run_job(request, settings, report)
            except Exception as exc:  # the job row says failed; the next tasks still run (--resume retries this)
                progress.update(line, description=f"{task.index + 1}. {task.title[:40]}: crashed: {exc}"[:120],
                                total=1, completed=1)
                progress.advance(overall)
                continue
            assert task.id is not None
            batches.link_job(engine, task.id, int(final["job_id"]))
            progress.update(line, description=f"{task.index + 1}. {task.title[:40]}: {final.get('status')}",
                            total=1, completed=1)
            progress.advance(overall)
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
    from server.batch_plots import PLOTS, render

    for name in PLOTS:
        (out / f"{name}.png").write_bytes(render(name, built))
    totals = built["totals"]
    console.print(f"verified {totals['verified']} of {totals['tasks']}; report: {out / 'report.md'}")
    raise typer.Exit(code=0 if totals["verified"] == totals["tasks"] else 1)


def _slug(title: str) -> str:
    """Return a folder-safe short form of a task title."""
    return re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_")[:40].lower() or "task"
