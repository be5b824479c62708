"""The conformance suite's report: each verified kernel checked again, outside its job, against the suite's reference.

`kernelgen bench conformance` gives the jobs the suite's prose alone (as users write it: the references are not
appended to the specs, so the reader's own reading is what each job verifies against), runs the batch, then runs
`conformance_check.py` once in the sandbox over every verified kernel, on fresh inputs, against the suite's plain
PyTorch reference. `conformance.json` / `conformance.md` give per case: verified, independently correct (with the
kernel's and eager's distances from float64), kernel / eager / torch.compile ms, % of roofline, job seconds and
stage seconds. `python -m kernelgen.conformance OUT` writes them again for a batch folder (after an interrupted run).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelgen.settings import Settings

CHECK = Path(__file__).with_name("conformance_check.py")
STAGES = "stage_seconds"  # one file per task: the seconds each stage of its job took
CHECK_TIMEOUT_S = 900.0
SUITE = Path(__file__).with_name("suites") / "conformance.jsonl"


def independent(suite: Path) -> bool:
    """Tell whether a suite's references are checked outside the jobs (the conformance suite) or read as its specs."""
    return suite.stem.startswith("conformance")


def records(suite: Path) -> list[dict[str, Any]]:
    """Return the suite's records: name, spec and reference."""
    return [json.loads(line) for line in suite.read_text(encoding="utf-8").splitlines() if line.strip()]


def prose_suite(suite: Path, folder: Path) -> Path:
    """Write the suite without its references into folder (same file name); the jobs read the prose alone."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / suite.name
    target.write_text("".join(json.dumps({"name": r["name"], "spec": r["spec"]}, ensure_ascii=False) + "\n"
                              for r in records(suite)), encoding="utf-8")
    return target


def stage_clock(folder: Path, report: Callable[[str, str], None]) -> Callable[[str, str], None]:
    """Wrap a job's progress callback so each stage's seconds are kept in OUT/stage_seconds/<task folder>.json."""
    target = folder.parent / STAGES / f"{folder.name}.json"
    marks: list[tuple[str, float]] = []

    def timed(stage: str, message: str) -> None:
        marks.append((stage, time.monotonic()))
        seconds: dict[str, float] = {}
        for (name, start), (_, end) in zip(marks, marks[1:], strict=False):
            seconds[name] = round(seconds.get(name, 0.0) + end - start, 2)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"stages": seconds, "last": stage,
                                      "total": round(marks[-1][1] - marks[0][1], 2)}))
        report(stage, message)

    return timed


def write_report(out: Path, suite: Path, device: str, settings: Settings | None = None,
                 check_timeout_s: float = CHECK_TIMEOUT_S) -> dict[str, Any]:
    """Check the batch's verified kernels against the suite's references; write conformance.json and .md."""
    from server import batch_report
    from storage import batches, crud
    from storage.db import make_engine

    settings = settings or Settings()
    engine = make_engine(settings.database_url)
    batch_id = int(json.loads((out / "batch.json").read_text())["batch"])
    stored = batches.get_batch(engine, batch_id)
    assert stored is not None, f"batch {batch_id} is not in {settings.database_url}"
    references = {r["name"]: r["reference"] for r in records(suite)}
    cases, plan, files = [], [], {}
    for task in batches.list_tasks(engine, batch_id):
        job = crud.get_job(engine, task.job_id) if task.job_id is not None else None
        line = batch_report.task_figures(engine, task, job, job.status if job else "not run")
        report = _job_report(engine, job)
        case = _case(task.title, line, report, _stages(out, task.index + 1))
        cases.append(case)
        source = _kernel_source(engine, job, report) if line["status"] == "verified" else None
        if source is not None and task.title in references:
            module = f"k{task.index + 1:03d}_{report['op']}_triton.py"
            files[module] = source
            inputs = [[i["name"], i["dtypes"][0], i["shapes"][0]] for i in (report.get("understood") or {})
                      .get("inputs", []) if i.get("role", "argument") == "argument"]
            plan.append({"name": task.title, "module": module, "entry": report["op"], "family": case["family"],
                         "inputs": inputs, "reference": references[task.title]})
    verdicts = _run_checks(plan, files, out, device, settings, check_timeout_s) if plan else {}
    for case in cases:
        verdict = verdicts.get(case["name"])
        if verdict is not None:
            case |= {"correct": bool(verdict.get("correct")), "kernel_err": verdict.get("kernel_err"),
                     "eager_err": verdict.get("eager_err"), "check": verdict.get("why") or "ok"}
    built = {"batch": batch_id, "suite": str(suite), "device": device,
             "totals": _totals(cases), "cases": cases}
    (out / "conformance.json").write_text(json.dumps(built, indent=1, ensure_ascii=False))
    (out / "conformance.md").write_text(to_markdown(built), encoding="utf-8")
    return built


def _job_report(engine: Any, job: Any) -> dict[str, Any]:
    from storage import crud

    if job is None or job.id is None:
        return {}
    stored = crud.get_artifact(engine, job.id, "report.json")
    try:
        return json.loads(stored.content) if stored else {}
    except ValueError:
        return {}


def _kernel_source(engine: Any, job: Any, report: dict[str, Any]) -> str | None:
    """Return the kept kernel file of a verified job: from its folder, else from the database."""
    from storage import crud

    name = f"{report.get('op')}_triton.py"
    if job.out_dir and (Path(job.out_dir) / name).is_file():
        return (Path(job.out_dir) / name).read_text(encoding="utf-8")
    stored = crud.get_artifact(engine, job.id, name)
    return stored.content if stored else None


def _stages(out: Path, number: int) -> dict[str, Any]:
    found = sorted((out / STAGES).glob(f"task_{number:03d}_*.json"))
    return json.loads(found[0].read_text()) if found else {}


def _case(name: str, line: dict[str, Any], report: dict[str, Any], stages: dict[str, Any]) -> dict[str, Any]:
    """Return one case's row: the batch line's figures, the best version's first timed case, the stage seconds."""
    rounds = report.get("rounds") or []
    best: dict[str, Any] = next((r for r in rounds if r.get("index") == report.get("best_round")), {})
    timed = (best.get("performance") or {}).get("cases") or []
    first = ((rounds[0].get("performance") or {}).get("cases") or []) if rounds else []
    understood = report.get("understood") or {}
    inputs = understood.get("inputs") or []
    dtypes = sorted({i["dtypes"][0] for i in inputs if i.get("dtypes")})
    status, reason = line["status"], line["reason"]
    if status == "not run" and stages:  # started, then stopped with the command (a device call's time limit)
        status, reason = "cut off", f"stopped in its {stages.get('last')} stage after {stages.get('total')} s"
    return {"name": name, "status": status, "op": line["op"], "family": line["family"],
            "dtype": "/".join(dtypes), "shape": inputs[0]["shapes"][0] if inputs and inputs[0].get("shapes") else None,
            "verified": line["status"] == "verified", "correct": None, "kernel_err": None, "eager_err": None,
            "check": "not checked (not verified)" if line["status"] != "verified" else "not checked",
            "kernel_ms": timed[0].get("triton_ms") if timed else None,
            "eager_ms": timed[0].get("eager_ms") if timed else None,
            "compile_ms": first[0].get("compile_ms") if first else None,
            "x_eager": line["speedup_vs_eager"], "x_compile": line["speedup_vs_compile"],
            "pct_of_roofline": line["pct_of_roofline"], "rounds": line["rounds"], "job_s": line["seconds"],
            "stage_s": stages.get("stages") or {}, "reason": reason}


def _run_checks(plan: list[dict[str, Any]], files: dict[str, str], out: Path, device: str, settings: Settings,
                timeout_s: float) -> dict[str, dict[str, Any]]:
    """Run conformance_check.py once over every case in the sandbox; return its verdicts by case name."""
    from agent.runtime.sandbox import run_file

    kind = "cuda" if device in ("auto", "cuda") and _has_cuda() else device if device != "auto" else "cpu"
    files = files | {CHECK.name: CHECK.read_text(encoding="utf-8"),
                     "plan.json": json.dumps({"device": kind, "cases": plan})}
    run = run_file(files, CHECK.name, Path(settings.work_dir) / f"conformance-{out.resolve().name}", device=kind,
                   timeout_s=timeout_s, trusted=True)  # offline kernels and the suite's own references
    verdicts: dict[str, dict[str, Any]] = dict(run.result.get("verdicts") or {})
    for case in plan:  # a run cut short: the cases it never reached say why
        verdicts.setdefault(case["name"], {"correct": False, "why": f"check run {run.status}: "
                                                                     f"{run.stderr_tail[-300:]}"})
    return verdicts


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _totals(cases: list[dict[str, Any]]) -> dict[str, Any]:
    verified = [c for c in cases if c["verified"]]
    correct = [c for c in verified if c["correct"]]
    ratios = [c["x_compile"] for c in correct if c["x_compile"]]
    seconds = sorted(c["job_s"] for c in cases if c["job_s"] is not None)
    return {"cases": len(cases), "verified": len(verified), "correct": len(correct),
            "pass_rate": len(correct) / len(cases) if cases else 0.0,
            "not_run": sum(1 for c in cases if c["status"] in ("not run", "cut off", "queued", "running")),
            "below_0_95_compile": sum(1 for r in ratios if r < 0.95),
            "geomean_x_compile": math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None,
            "median_job_s": seconds[len(seconds) // 2] if seconds else None, "sum_job_s": round(sum(seconds), 1)}


COLUMNS = (("name", "case"), ("family", "family"), ("dtype", "dtype"), ("shape", "shape"), ("status", "job"),
           ("correct", "independent"), ("kernel_err", "kernel err"), ("eager_err", "eager err"),
           ("kernel_ms", "kernel ms"), ("eager_ms", "eager ms"), ("compile_ms", "compile ms"),
           ("x_compile", "x compile"), ("pct_of_roofline", "% roofline"), ("job_s", "job s"),
           ("stage_s", "stage s"), ("why", "why not"))


def _cell(case: dict[str, Any], key: str) -> str:
    value = case.get(key)
    if key == "why":
        value = case["reason"] if not case["verified"] else case["check"] if case["check"] != "ok" else None
    if key == "stage_s" and isinstance(value, dict):
        value = ", ".join(f"{k} {v:.0f}" for k, v in sorted(value.items(), key=lambda kv: -kv[1])[:4]) or None
    if key == "correct" and case["verified"]:
        value = "yes" if value else "NO" if value is False else "-"
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.1e}" if key.endswith("_err") else f"{value:.4f}" if key.endswith("_ms") else f"{value:.2f}"
    return " ".join(str(value).split()).replace("|", "\\|")[:160]


def to_markdown(report: dict[str, Any]) -> str:
    """Render the conformance report: totals, then one row per case."""
    t = report["totals"]
    lines = [f"# Conformance: {report['suite']} ({report['device']})", "",
             f"independently correct {t['correct']} of {t['cases']} ({100 * t['pass_rate']:.0f}%); verified "
             f"{t['verified']}; not run {t['not_run']}; median job {t['median_job_s']} s, sum {t['sum_job_s']} s; "
             f"below 0.95x torch.compile: {t['below_0_95_compile']}", "",
             "| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(c, k) for k, _ in COLUMNS) + " |" for c in report["cases"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    """`python -m kernelgen.conformance OUT [--suite FILE] [--device D]`: write the report of a batch folder again."""
    import typer

    def run(out: Path, suite: Path = SUITE, device: str = "auto", check_timeout_s: float = CHECK_TIMEOUT_S) -> None:
        built = write_report(out, suite, device, check_timeout_s=check_timeout_s)
        t = built["totals"]
        typer.echo(f"independently correct {t['correct']} of {t['cases']}; verified {t['verified']}; "
                   f"report: {out / 'conformance.md'}")

    typer.run(run)


if __name__ == "__main__":
    main()
