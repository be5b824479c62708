"""Run the reader on TritonBench-T: probe each reference out of process, then read and judge every spec here."""

from __future__ import annotations

import json
import logging
import re
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Queue
from typing import Any

import torch

from agent.reader.errors import ReaderBug
from agent.reader.read import read_spec
from agent.spec import SpecError
from kernelgen.suites.tritonbench.compare import judge
from kernelgen.suites.tritonbench.data import References, Task
from kernelgen.suites.tritonbench.faults import reference_fault
from kernelgen.suites.tritonbench.spec_text import inputs_line, parameters_line, spec_text

PROBE = Path(__file__).with_name("probe.py")
SEEDS = [0, 1, 2, 3, 4]  # five fresh draws: tiny benchmark shapes let a wrong index agree by chance on two
READ_SECONDS = 60


class ReadTimeout(BaseException):  # not an Exception: read_spec's own handler must not turn it into a question
    pass


class ProbeServer:
    """A `probe.py serve` process: torch imported once, each reference run in a forked, limited child."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, str(PROBE), "serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def run(self, source: Path, hint: str, out_dir: Path, timeout: float) -> str:
        assert self.process.stdin and self.process.stdout
        job = {"source": str(source), "hint": hint, "out_dir": str(out_dir), "seeds": SEEDS, "timeout": timeout}
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        return str(json.loads(answer)["status"]) if answer else "the probe server ended"

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def probe(task: Task, references: References, scratch: Path, servers: Queue[ProbeServer],
          timeout: float) -> dict[str, Any]:
    """The task's first call and reference runs ({"capture", "runs"}), or {"reason"} when there is no reference."""
    source = references.source(task.file)
    if source is None:
        return {"reason": f"no reference file {task.file}"}
    where = scratch / Path(task.file).stem
    where.mkdir(parents=True, exist_ok=True)
    (where / "reference.py").write_text(source, encoding="utf-8")
    server = servers.get()
    try:
        status = server.run(where / "reference.py", Path(task.file).stem, where, timeout)
    finally:
        servers.put(server)
    if status == "timeout":
        return {"reason": f"the benchmark's test ran past {timeout:g} s"}
    try:
        capture = json.loads((where / "capture.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"reason": f"the test process ended without a result ({status})"}
    if not capture.get("ok"):
        return {"reason": capture.get("error", "unknown"), "capture": capture}
    runs = torch.load(where / "reference.pt", weights_only=True)
    return {"capture": capture, "runs": runs}


def _timeout(signum: int, frame: Any) -> None:
    raise ReadTimeout()


def read_and_judge(task: Task, form: str, probed: dict[str, Any]) -> dict[str, Any]:
    """One (task, form) result: its outcome and what explains it."""
    result: dict[str, Any] = {"task": task.name, "file": task.file, "form": form}
    capture = probed.get("capture") or {}
    if "runs" not in probed:
        return result | {"outcome": "no reference", "reason": probed["reason"]}
    result["reference"] = {k: capture.get(k) for k in ("entry", "inputs_from", "precision", "random", "test_error")}
    result["appended"] = [line for line in (inputs_line(capture["tensors"]), parameters_line(capture["others"]))
                          if line]
    text = spec_text(task.instructions[form], capture)
    signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(READ_SECONDS)
    try:
        spec = read_spec(text)
    except ReaderBug as exc:
        found = re.search(r"\((\w+(?:Error|Exception|Warning)?):", str(exc))
        return result | {"outcome": "reader exception", "exception": found.group(1) if found else "ReaderBug",
                         "question": str(exc)}
    except SpecError as exc:
        return result | {"outcome": "question", "question": str(exc)}
    except ReadTimeout:
        return result | {"outcome": "reader exception", "exception": "timeout", "question": f"> {READ_SECONDS} s"}
    except Exception as exc:
        return result | {"outcome": "reader exception", "exception": type(exc).__name__, "question": str(exc)}
    finally:
        signal.alarm(0)
    reading = spec.reading
    if reading is None:
        return result | {"outcome": "reader exception", "exception": "NoReading", "question": "no reading"}
    result |= {"pytorch": reading.pytorch.strip(), "ir": reading.ir, "source": reading.source,
               "reading_inputs": [i.name for i in reading.inputs]}
    if capture.get("random"):
        return result | {"outcome": "no reference", "reason": "the benchmark's function is random (two calls "
                                                            "on the same inputs differ)"}
    names = [t["name"] for t in capture["tensors"]]
    verdict = judge(reading, names, probed["runs"])
    result |= {"outcome": verdict.outcome, "reason": verdict.reason, "mapping": verdict.mapping,
               "evaluator": verdict.evaluator}
    fault = reference_fault(task.name, reading.ir, verdict.outcome)
    if fault is not None:  # wrong against a benchmark function that departs from its own text: said so, not hidden
        result |= {"outcome": "reference fault", "reason": f"{fault.why}; against it: {verdict.reason}"}
    return result


def run(tasks: list[Task], references: References, forms: list[str], *, jobs: int = 2,
        timeout: float = 20.0, progress: bool = True) -> list[dict[str, Any]]:
    """Every (task, form) result, tasks in the benchmark's order."""
    logging.getLogger("agent").setLevel(logging.CRITICAL)  # reader bugs are counted, not logged with traces
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="tritonbench-") as scratch:
        servers: Queue[ProbeServer] = Queue()
        for _ in range(jobs):
            servers.put(ProbeServer())
        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                probed = list(pool.map(lambda t: probe(t, references, Path(scratch), servers, timeout), tasks))
        finally:
            while not servers.empty():
                servers.get().close()
        results = []
        for i, (task, found) in enumerate(zip(tasks, probed, strict=True)):
            for form in forms:
                results.append(read_and_judge(task, form, found))
            if progress:
                print(f"[{i + 1}/{len(tasks)}] {task.name}: " + ", ".join(
                    r["outcome"] for r in results[-len(forms):]), file=sys.stderr, flush=True)
    return results
