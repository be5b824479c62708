"""Each stage that runs kernels holds one accelerator, and its sandboxed runs see that one alone."""

import threading
import time
from pathlib import Path

import pytest

from agent.runtime.accelerators import AcceleratorSlots, current_slot
from agent.runtime.sandbox import run_file

REPORTS_VISIBLE_DEVICES = '''
import json, os, sys
with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
    json.dump({"status": "pass", "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
               "npu": os.environ.get("ASCEND_RT_VISIBLE_DEVICES")}, f)
'''


def test_two_stages_at_once_hold_different_accelerators_and_a_third_waits() -> None:
    slots = AcceleratorSlots(2)
    held: list[int] = []
    release = threading.Event()

    def stage() -> None:
        with slots.hold("cuda") as slot:
            held.append(slot)
            release.wait(timeout=10)

    workers = [threading.Thread(target=stage) for _ in range(3)]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + 10
    while len(held) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert sorted(held) == [0, 1] and slots.free() == 0  # the third stage waits for a device to be given back
    release.set()
    for worker in workers:
        worker.join(timeout=10)
    assert len(held) == 3 and held[2] in (0, 1) and slots.free() == 2


def test_a_run_sees_only_the_accelerator_its_stage_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")  # the operator's own choice of GPUs is kept
    slots = AcceleratorSlots(2)
    seen = []
    with slots.hold("cuda") as first, slots.hold("cuda") as second:
        for slot in (first, second):
            token = current_slot.set(slot)  # each run as if its own stage held it
            try:
                run = run_file({"env.py": REPORTS_VISIBLE_DEVICES}, "env.py", tmp_path / f"w{slot}", device="cuda",
                               timeout_s=60, trusted=True)
            finally:
                current_slot.reset(token)
            seen.append(run.result["cuda"])
    assert seen == ["4", "6"]


def test_a_run_outside_any_stage_keeps_the_parents_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # e.g. the one GPU Ray gave this worker
    run = run_file({"env.py": REPORTS_VISIBLE_DEVICES}, "env.py", tmp_path / "w", device="cuda", timeout_s=60,
                   trusted=True)
    assert run.result["cuda"] == "1"
    with AcceleratorSlots(1).hold("npu"):
        run = run_file({"env.py": REPORTS_VISIBLE_DEVICES}, "env.py", tmp_path / "w2", device="npu", timeout_s=60,
                       trusted=True)
    assert run.result["npu"] == "0"


def test_an_interpreter_run_on_the_cpu_holds_no_accelerator() -> None:
    slots = AcceleratorSlots(1)
    with slots.hold("cuda"), slots.hold("cpu") as slot:  # would wait forever if the CPU took the one slot
        assert slot is None and slots.free() == 0
    assert slots.free() == 1


def _hold_in_thread(slots: AcceleratorSlots, shared: bool, log: list[str], name: str,
                    release: threading.Event) -> threading.Thread:
    def stage() -> None:
        with slots.hold("cuda", shared=shared):
            log.append(f"+{name}")
            release.wait(timeout=10)
            log.append(f"-{name}")

    thread = threading.Thread(target=stage)
    thread.start()
    return thread


def _until(condition: object, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)
    time.sleep(0.1)


def test_checks_share_a_device_but_never_with_a_stage_that_times() -> None:
    slots = AcceleratorSlots(1, max_shared=2)
    log: list[str] = []
    checks_done, timing_done = threading.Event(), threading.Event()
    checks = [_hold_in_thread(slots, True, log, f"check{i}", checks_done) for i in range(2)]
    _until(lambda: len(log) == 2)
    assert sorted(log) == ["+check0", "+check1"]  # two accuracy stages of different jobs at once
    timing = _hold_in_thread(slots, False, log, "timing", timing_done)
    late_check = _hold_in_thread(slots, True, log, "late", checks_done)
    time.sleep(0.3)
    assert "+timing" not in log and "+late" not in log  # timing waits for the checks; a new check waits for timing
    checks_done.clear()
    checks_done.set()
    _until(lambda: "+timing" in log)
    assert log.index("+timing") > max(log.index("-check0"), log.index("-check1"))  # alone on the device
    timing_done.set()
    for thread in (*checks, timing, late_check):
        thread.join(timeout=10)
    assert log.index("+late") > log.index("-timing")
    assert slots.free() == 1
