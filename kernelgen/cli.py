"""The `kernelgen` command line."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelgen.admin import users_app
from kernelgen.batch import ForceOption, batch, check_device, refuse_a_used_folder
from kernelgen.bench import bench
from kernelgen.settings import Settings

if TYPE_CHECKING:  # torch loads with the reader and the generators: `patterns`, `users` and --help start without it
    from agent.state import JobState

app = typer.Typer(help="Turn a plain-language operator spec into a verified Triton kernel.", no_args_is_help=True)
console = Console()
app.add_typer(users_app, name="users")
app.command("batch")(batch)
app.command("bench")(bench)


@app.callback()
def main(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug details.")] = False) -> None:
    """KernelGen command line."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING)


@app.command()
def run(
    spec: Annotated[str | None, typer.Argument(help="The operator spec, in English or Chinese.")] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", help="Read the spec or a task book.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder (default kernelgen_out/<op>); one that holds files needs --force.")] = None,
    device: Annotated[str, typer.Option(help="auto | cuda | npu | cpu")] = "auto",
    rounds: Annotated[int | None, typer.Option(help="Max optimization rounds (1-5).")] = None,
    target_speedup: Annotated[float | None, typer.Option(
        help="Stop once this many times faster than eager PyTorch (default: optimize to the limit, 90% of the "
             "roofline and at least torch.compile).")] = None,
    initial_block_size: Annotated[int | None, typer.Option(help="Start from this BLOCK_SIZE.")] = None,
    initial_num_warps: Annotated[int | None, typer.Option(help="Start from this num_warps.")] = None,
    initial_config: Annotated[str | None, typer.Option(
        help="Start from this configuration, e.g. 'rows: BLOCK_M=2, BLOCK_N=1024, NUM_WARPS=4' "
             "(env KERNELGEN_INITIAL_CONFIG).")] = None,
    llm: Annotated[str | None, typer.Option(
        help="offline | openai | auto: auto uses the LLM when an endpoint is set (env KERNELGEN_LLM).")] = None,
    llm_base_url: Annotated[str | None, typer.Option(
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8001/v1 (env KERNELGEN_LLM_BASE_URL).")] = None,
    llm_model: Annotated[str | None, typer.Option(help="Model name (env KERNELGEN_LLM_MODEL).")] = None,
    force: ForceOption = False,
) -> None:
    """Generate, verify and tune a kernel; exit 0 only when every job gives a verified kernel, 2 on a question."""
    from agent.generators.config_rules import config_from_label
    from agent.llm.config import LlmConfigError, resolve_llm
    from agent.reader import split_tasks
    from agent.runner import run_job
    from agent.state import JobRequest

    if (spec is None) == (file is None):
        raise typer.BadParameter("give the spec text or --file, not both and not neither")
    text = file.read_text(encoding="utf-8") if file is not None else str(spec)
    tasks = split_tasks(text)
    if out is not None and len(tasks) == 1 and not force:
        refuse_a_used_folder(out)
    check_device(device)
    settings = Settings()
    overrides = {k: v for k, v in (("llm_base_url", llm_base_url), ("llm_model", llm_model)) if v is not None}
    settings = settings.model_copy(update=overrides) if overrides else settings
    try:
        resolve_llm(llm, settings)
    except LlmConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--llm") from None
    initial = None
    label, hint = initial_config or settings.initial_config, "--initial-config"
    if not label and (initial_block_size or initial_num_warps):
        label = f"flat: BLOCK_SIZE={initial_block_size or 1024}, NUM_WARPS={initial_num_warps or 4}"
        hint = "--initial-block-size / --initial-num-warps"
    if label:
        try:  # checked before anything runs, naming the rule a bad configuration breaks
            initial = config_from_label(label)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint=hint) from None
    failures = questions = 0
    for index, task in enumerate(tasks):
        if len(tasks) > 1:
            console.rule(f"task {index + 1} of {len(tasks)}")
        single = out is not None and len(tasks) == 1
        request = JobRequest(
            spec_text=task, out_dir=str(out) if single else None, out_root=str(out or "kernelgen_out"),
            overwrite=force, device=device, rounds=rounds,
            target_speedup=target_speedup, initial_config=initial, llm=llm,  # type: ignore[arg-type]
        )
        progress = _Progress()
        final = run_job(request, settings, progress)
        _print_summary(final, progress)
        asked = ended_with_question(final)
        questions += asked
        failures += final.get("status") != "verified" and not asked
    # 2 when a spec raised a question (as `kernelgen read` answers it), else 1 for any other unverified job.
    raise typer.Exit(code=2 if questions else 1 if failures else 0)


def ended_with_question(final: JobState) -> bool:
    """Tell whether a job ended with a question about its spec: rejected while being read, so with no spec."""
    return final.get("status") == "rejected" and "spec" not in final


class _Progress:
    """Print each stage's report as it comes, and remember it, so the summary does not say it again."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def __call__(self, stage: str, message: str) -> None:
        """Print one stage's report."""
        self.lines.append((stage, message))
        if "\n" in message:  # a report of several lines (the reading) goes under its stage, not on after the name
            body = "\n".join(f"{'':>12} {line}" for line in message.splitlines())
            console.print(f"[bold cyan]{stage:>12}[/]\n{escape(body)}", highlight=False)
            return
        console.print(f"[bold cyan]{stage:>12}[/] {escape(message)}", highlight=False)

    def stage_that_said(self, message: str) -> str | None:
        """Return the stage whose report already holds the message, if any."""
        return next((stage for stage, line in self.lines if message and message in line), None)


def _print_summary(final: JobState, progress: _Progress) -> None:
    from agent.targets import standing

    status = final.get("status", "failed")
    if status == "rejected" or "spec" not in final:
        message = final.get("message", "")
        said = progress.stage_that_said(message)
        reason = f"the {said} line above says why" if said else escape(message)
        console.print(f"[bold red]{status}[/]: {reason}", highlight=False)
        console.print("No kernel was written.")
        return
    reduced = status == "verified" and final.get("coverage", {}).get("shapes") == "reduced"
    table = Table(title=f"{final['spec'].name}: {status}{' on reduced shapes only' if reduced else ''}")
    for column in ("round", "edit", "change", "config", "accuracy", "x eager", "x compile", "% roofline", "GB/s",
                   "% of copy", "kept"):
        table.add_column(column, overflow="fold")
    rounds = final.get("rounds", [])
    for r in rounds:
        cases = r.performance.get("cases", [])
        gbs = min((c["gbs"] for c in cases), default=None)
        figures = standing(rounds[0], r)
        compiled, roofline = figures["speedup_vs_compile"], figures["pct_of_roofline"]
        table.add_row(
            str(r.index), r.edit_type, r.action or "-", r.config.label(), r.accuracy_status,
            f"x{r.speedup:.3f}" if r.speedup else r.performance_status,
            f"x{compiled:.3f}" if compiled else "-", f"{roofline:.1f}" if roofline else "-",
            f"{gbs:.0f}" if gbs else "-", f"{r.pct_of_copy:.1f}" if r.pct_of_copy else "-",
            "best" if r.index == final.get("best_round") else ("yes" if r.accepted else "no"),
        )
    Console(width=max(console.width, 160)).print(table)  # folded columns are unreadable at 80
    console.print(escape(final.get("message", "")), highlight=False)
    console.print(f"Output: {final['out_dir']} (generator: {final.get('generator', 'offline')})", highlight=False)


@app.command()
def read(
    spec: Annotated[str | None, typer.Argument(help="The operator spec: English, Chinese, or PyTorch code.")] = None,
    file: Annotated[Path | None,
                    typer.Option("--file", "-f", help="Read the spec from a file (.md, .txt, .py).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reading as JSON.")] = False,
) -> None:
    """Show how a spec (or each task of a task book) is understood, without generating anything.

    Exit 0 when everything reads, 2 when any spec raises a question.
    """
    import json
    import tempfile

    from agent.reader.outcome import read_outcomes

    if (spec is None) == (file is None):
        raise typer.BadParameter("give the spec text or --file, not both and not neither")
    text = file.read_text(encoding="utf-8") if file is not None else str(spec)
    with tempfile.TemporaryDirectory(prefix="kernelgen-read-") as work:
        outcomes = read_outcomes(text, Path(work))
    if as_json:
        shown = [o.model_dump(mode="json") for o in outcomes]
        console.out(json.dumps(shown[0] if len(shown) == 1 else shown, ensure_ascii=False, indent=2))
    for outcome in [] if as_json else outcomes:
        if outcome.task:
            console.rule(escape(outcome.task))
        if outcome.status == "read":
            console.print(escape(outcome.understood or ""), highlight=False, soft_wrap=True)
        else:
            console.print(f"[bold yellow]question[/]: {escape(outcome.question or '')}", highlight=False,
                          soft_wrap=True)
    if any(o.status == "question" for o in outcomes):
        raise typer.Exit(code=2)


@app.command()
def patterns(
    device: Annotated[str | None, typer.Option(help="Only this device, e.g. 'NVIDIA H200'.")] = None,
    category: Annotated[str | None, typer.Option(help="Only this category, e.g. 'elementwise/row-broadcast'.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show the optimization patterns learned so far: what each change did on each device."""
    import json

    from sqlalchemy import make_url

    from storage.db import make_engine
    from storage.models import OptimizationPatternPublic
    from storage.patterns import list_patterns

    url = Settings().database_url
    rows = list_patterns(make_engine(url), device=device, category=category)
    if as_json:
        public = [OptimizationPatternPublic.model_validate(row).model_dump(mode="json") for row in rows]
        console.out(json.dumps(public, indent=2), highlight=False)
        return
    if not rows:
        shown = make_url(url).render_as_string(hide_password=True)
        message = f"No optimization patterns recorded yet in {shown}"
        console.print(message, highlight=False, markup=False, soft_wrap=True)
        return
    table = Table(title="Optimization patterns", box=box.SIMPLE_HEAD)
    for column in ("category", "device", "bottleneck", "change", "edit type", "before -> after"):
        table.add_column(column, overflow="fold")
    for column in ("applied", "helped", "mean\ngain", "best\nspeedup"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(
            escape(row.category), escape(row.device), escape(row.bottleneck), escape(row.change), row.edit_type,
            escape(f"{row.params_before}\n-> {row.params_after}"), str(row.times_applied), str(row.times_helped),
            f"{row.mean_gain * 100:+.1f}%" if row.mean_gain is not None else "-",
            f"x{row.best_speedup:.2f}" if row.best_speedup is not None else "-",
        )
    Console(width=max(console.width, 160)).print(table)  # folded columns are unreadable at 80


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (env KERNELGEN_HOST; default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (env KERNELGEN_PORT; default 8000).")] = None,
) -> None:
    """Run the HTTP job service (needs tokens or users unless bound to loopback)."""
    from server.app import create_app
    from server.principals import tokens_exist
    from server.security import is_loopback
    from server.serving import serve as serve_app
    from storage.db import make_engine

    settings = Settings()
    settings = settings.model_copy(update={"host": settings.host if host is None else host,
                                           "port": settings.port if port is None else port})
    if not is_loopback(settings.host) and not tokens_exist(settings, make_engine(settings.database_url)):
        Console(stderr=True).print(
            f"[bold red]refusing to serve on {escape(settings.host)}[/]: it is reachable from other machines and "
            "no one needs a token. Add a user (kernelgen users add NAME), set "
            "KERNELGEN_API_TOKENS='[\"name:<token>\"]', or bind to 127.0.0.1.",
            highlight=False, soft_wrap=True,
        )
        raise typer.Exit(code=2)
    serve_app(create_app(settings), settings)  # header and keep-alive timeouts, a short graceful shutdown
