"""`kernelgen patterns` shows what the optimization loop has learned, as a table or as JSON."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from storage import crud
from storage.db import make_engine


def _kernelgen(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"KERNELGEN_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}", "COLUMNS": "250"}
    return subprocess.run([sys.executable, "-m", "kernelgen", "patterns", *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)


def _seed(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    for gain, speedup in ((0.10, 2.0), (0.146, 2.41)):
        crud.record_pattern(
            engine, category="elementwise/row-broadcast", device="NVIDIA H200", bottleneck="memory",
            change="schedule flat -> rows", edit_type="logic", params_before="flat: BLOCK_SIZE=1024, NUM_WARPS=4",
            params_after="rows: BLOCK_M=4, BLOCK_N=1024, NUM_WARPS=4", gain=gain, helped=True, speedup_after=speedup,
        )
    crud.record_pattern(
        engine, category="elementwise/unary", device="NVIDIA H100", bottleneck="latency/launch",
        change="parameter search (flat)", edit_type="parameter", params_before="flat: BLOCK_SIZE=1024, NUM_WARPS=4",
        params_after="flat: BLOCK_SIZE=4096, NUM_WARPS=8", gain=None, helped=False, speedup_after=None,
    )
    engine.dispose()


def test_json_lists_every_pattern_and_filters_by_device(tmp_path: Path) -> None:
    _seed(tmp_path)
    run = _kernelgen(tmp_path, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = json.loads(run.stdout)
    assert [(r["category"], r["device"], r["change"]) for r in rows] == [
        ("elementwise/row-broadcast", "NVIDIA H200", "schedule flat -> rows"),
        ("elementwise/unary", "NVIDIA H100", "parameter search (flat)"),
    ]
    broadcast = rows[0]
    assert (broadcast["times_applied"], broadcast["times_helped"], broadcast["times_measured"]) == (2, 2, 2)
    assert broadcast["mean_gain"] == pytest.approx(0.123) and broadcast["best_speedup"] == 2.41
    assert broadcast["params_after"] == "rows: BLOCK_M=4, BLOCK_N=1024, NUM_WARPS=4"
    assert {"id", "created_at", "updated_at"} <= broadcast.keys()
    only = _kernelgen(tmp_path, "--json", "--device", "NVIDIA H100")
    assert [r["change"] for r in json.loads(only.stdout)] == ["parameter search (flat)"]
    none = _kernelgen(tmp_path, "--json", "--category", "reduction/row")
    assert none.returncode == 0 and json.loads(none.stdout) == []


def test_table_shows_counts_gain_and_best_speedup(tmp_path: Path) -> None:
    _seed(tmp_path)
    run = _kernelgen(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    broadcast = next(line for line in lines if "elementwise/row-broadcast" in line)
    for cell in ("NVIDIA H200", "memory", "schedule flat -> rows", "logic", "+12.3%", "x2.41"):
        assert cell in broadcast
    assert broadcast.split()[-4:] == ["2", "2", "+12.3%", "x2.41"]
    assert "-> rows: BLOCK_M=4, BLOCK_N=1024, NUM_WARPS=4" in run.stdout
    unary = next(line for line in lines if "elementwise/unary" in line)
    assert unary.split()[-4:] == ["1", "0", "-", "-"]


def test_an_empty_store_says_so(tmp_path: Path) -> None:
    run = _kernelgen(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == f"No optimization patterns recorded yet in sqlite:///{tmp_path / 'kg.db'}"
