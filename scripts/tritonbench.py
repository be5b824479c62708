"""Measure the reader on TritonBench-T: read each task's prompt (both forms) and check the reading against the
benchmark's own PyTorch function on the shapes its test uses.

    .venv/bin/python scripts/tritonbench.py OUT [--data DIR] [--refs DIR_OR_GIT] [--tasks torch.abs,relu_sqrt]

DIR holds the benchmark's data files (default ../shared/benchmarks/tritonbench-t from the repository root). The
references (the benchmark repository's data/TritonBench_T_v1/*.py: function, a line of #, its test) come from
--refs: that folder, or a git mirror of thunlp/TritonBench (read with `git show HEAD:...`); by default
DIR/TritonBench_T_v1, then $TRITONBENCH_REFS, then /work/.mirror/thunlp+TritonBench/repo. Nothing of the
benchmark is copied into the repository. OUT gets report.json and report.md; one summary line per form is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelgen.suites.tritonbench.data import FORMS, find_references, load_tasks  # noqa: E402
from kernelgen.suites.tritonbench.report import write_report  # noqa: E402
from kernelgen.suites.tritonbench.run import run  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "benchmarks" / "tritonbench-t"
MIRROR = Path("/work/.mirror/thunlp+TritonBench/repo")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for report.json and report.md")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the benchmark's data folder")
    parser.add_argument("--refs", type=Path, default=None, help="reference files: a folder or a git mirror")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--forms", default=",".join(FORMS), help="prompt forms: simp, comp")
    parser.add_argument("--jobs", type=int, default=2, help="reference subprocesses at once")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds for one reference test")
    parser.add_argument("--quiet", action="store_true", help="no per-task progress on stderr")
    args = parser.parse_args(argv)
    fallbacks = [Path(p) for p in [os.environ.get("TRITONBENCH_REFS", "")] if p] + [MIRROR]
    references = find_references(args.data, args.refs, fallbacks)
    tasks = load_tasks(args.data)
    total = len(tasks)
    if args.tasks:
        wanted = args.tasks.split(",")
        tasks = [t for t in tasks if t.name in wanted]
        missing = set(wanted) - {t.name for t in tasks}
        if missing:
            parser.error(f"no such tasks: {', '.join(sorted(missing))}")
        total = len(tasks)
    forms = args.forms.split(",")
    results = run(tasks, references, forms, jobs=args.jobs, timeout=args.timeout, progress=not args.quiet)
    meta = {"data": str(args.data), "references": references.revision(), "tasks": total, "forms": forms,
            "seeds": [0, 1, 2, 3, 4], "tolerance": {"rtol": 1e-3, "atol": 1e-3}}
    for line in write_report(args.out, results, forms, total, meta):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
