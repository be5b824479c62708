"""A round's lesson is counted in the pattern store exactly once, even when a kill cuts the log stage between the
count and the round (issue 49): the two are one transaction, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.nodes.log import log
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from agent.state import JobRequest, JobState, RoundRecord
from storage import crud
from storage.db import make_engine
from tests.databases import database_url

SPEC = "fused bias-add + GELU, x [16, 96] fp32, bias [96]"
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", peak_gbs=4800.0, peak_tflops=67.0, multiprocessors=132)
CHANGE = "parameter search (flat)"
ROOT = Path(__file__).resolve().parents[3]

# The log stage in a process that SIGKILLs itself as its round's INSERT starts, after the pattern's count was
# written: what reached the database is what a server killed there leaves.
KILLED_AT_THE_ROUND = """
import os, sys
from pathlib import Path
from sqlalchemy import event
from agent.nodes.log import log
from tests.agent.nodes.test_log_lesson_once import stage_of

runtime, state = stage_of(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))

def die_at_the_round(conn, cursor, statement, *args):
    if statement.lstrip().upper().startswith("INSERT INTO ROUND"):
        os.kill(os.getpid(), 9)

event.listen(runtime.context.engine, "before_cursor_execute", die_at_the_round)
log(state, runtime)
"""


def stage_of(url: str, folder: Path, job_id: int) -> tuple[Runtime[JobContext], JobState]:
    """Return the log stage's runtime and input for round 1 of the job: a measured parameter search over v0."""
    runtime = Runtime(context=JobContext(engine=make_engine(url), work_dir=folder / "work"))
    spec = read_spec(SPEC)
    first = ElementwiseGenerator().generate(spec, LaunchConfig(block_size=256, num_warps=8))
    better = LaunchConfig(block_size=1024, num_warps=1)
    v0 = RoundRecord(index=0, edit_type="initial", config=first.config, reason="first", accuracy_status="pass",
                     performance_status="pass", speedup=1.25, accepted=True)
    v1 = RoundRecord(index=1, edit_type="parameter", config=better, reason="search", accuracy_status="pass",
                     performance_status="pass", speedup=2.5, action=CHANGE, base_index=0,
                     diagnosis={"bottleneck": "memory", "evidence": {"pct_of_copy": 30.9}})
    state: JobState = {
        "job_id": job_id, "request": JobRequest(spec_text=SPEC), "spec": spec, "device": H200,
        "out_dir": str(folder / "out"), "files": ElementwiseGenerator().generate(spec, better), "best_files": first,
        "rounds": [v0], "best_round": 0, "category": "elementwise/row-broadcast", "done": [], "refusals": [],
        "pending": v1,
    }
    return runtime, state


def _applied(runtime: Runtime[JobContext]) -> int:
    [pattern] = crud.list_patterns(runtime.context.engine, device=H200.name)
    return pattern.times_applied


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_kill_between_the_patterns_count_and_the_round_counts_the_lesson_once(
        tmp_path: Path, backend: str) -> None:
    with database_url(backend, tmp_path) as url:
        engine = make_engine(url)
        job_id = crud.create_job(engine, SPEC, str(tmp_path / "out"))
        crud.record_pattern(  # another job taught the same change before: its count is the one to keep
            engine, category="elementwise/row-broadcast", device=H200.name, bottleneck="memory", change=CHANGE,
            edit_type="parameter", params_before="a", params_after="b", gain=0.1, helped=True, speedup_after=1.5)
        engine.dispose()
        run = subprocess.run([sys.executable, "-c", KILLED_AT_THE_ROUND, url, str(tmp_path), str(job_id)],
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert run.returncode == -9, run.stderr
        runtime, state = stage_of(url, tmp_path, job_id)
        try:
            # Before, the count was committed alone: 2 here, and 3 once the stage ran again.
            assert _applied(runtime) == 1 and crud.get_round(runtime.context.engine, job_id, 1) is None
            log(state, runtime)  # the stage run again after the restart
            assert _applied(runtime) == 2
            log(state, runtime)  # and once more: killed after its writes, before its checkpoint was saved
            assert _applied(runtime) == 2
            rounds = crud.list_rounds(runtime.context.engine, job_id)
            assert [r.index for r in rounds] == [1] and rounds[0].accepted
            log_md = crud.get_artifact(runtime.context.engine, job_id, "optimization_log.md")
            assert log_md is not None and "helped 2 of 2 times" in log_md.content  # the re-run shows the one count
        finally:
            runtime.context.engine.dispose()
