"""`kernelgen bench`: run a benchmark suite (a built-in one by name, or a file) and write the batch report."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from kernelgen.batch import DeviceOption, ForceOption, JobsOption, OutOption, ResumeOption, RoundsOption, run_batch
from kernelgen.conformance import independent, prose_suite, write_report

SUITES = Path(__file__).resolve().with_name("suites")


def suite_names() -> list[str]:
    """List the built-in suites."""
    return sorted(p.stem for p in SUITES.glob("*.jsonl"))


def bench(
    suite: Annotated[str, typer.Argument(
        help="A built-in suite's name (families: 24 operators of every family; conformance: every engine x dtype x "
             "odd shapes, checked against its own references) or a task book, folder or JSONL.")
    ] = "families",
    out: OutOption = Path("kernelgen_bench"), device: DeviceOption = "auto", rounds: RoundsOption = None,
    resume: ResumeOption = False, jobs: JobsOption = None, force: ForceOption = False,
) -> None:
    """Run a suite like a batch: each task verified (against its reference, where a record gives one) and timed."""
    path = SUITES / f"{suite}.jsonl" if suite in suite_names() else Path(suite)
    if not path.exists():
        raise typer.BadParameter(f"{suite!r} is neither a built-in suite ({', '.join(suite_names())}) nor a file",
                                 param_hint="SUITE")
    if not independent(path):
        run_batch(path, out, device=device, rounds=rounds, resume=resume, jobs=jobs, force=force)
        return
    # The conformance suite: the jobs read the prose alone; its references check the verified kernels afterwards.
    code = 0
    with tempfile.TemporaryDirectory(prefix="kernelgen-suite-") as folder:
        try:
            run_batch(prose_suite(path, Path(folder)), out, device=device, rounds=rounds, resume=resume, jobs=jobs,
                      force=force)
        except typer.Exit as exc:
            code = exc.exit_code
    totals = write_report(out, path, device)["totals"]
    typer.echo(f"independently correct {totals['correct']} of {totals['cases']}; report: {out / 'conformance.md'}")
    raise typer.Exit(code=code or int(totals["correct"] != totals["cases"]))
