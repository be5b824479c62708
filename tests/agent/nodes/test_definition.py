"""The definition document fills every section of the seed template from the spec and the generator's plan."""

import re
from pathlib import Path

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.generators.base import LaunchConfig
from agent.nodes.definition import definition
from agent.reader import read_spec
from agent.state import JobRequest
from storage import crud
from storage.db import make_engine

# The seed template's sections, in its order (1 (1)-(5), 2.1-2.5, 3.1-3.6, 4.1-4.3), and our verdict section.
SECTIONS = ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5",
            "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "4.1", "4.2", "4.3"]


def _definition(tmp_path: Path, text: str, initial: LaunchConfig | None = None) -> str:
    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    runtime = Runtime(context=JobContext(engine=engine, work_dir=tmp_path / "work"))
    job_id = crud.create_job(engine, text, str(tmp_path / "out"))
    request = JobRequest(spec_text=text, device="cpu", initial_config=initial)
    definition({"job_id": job_id, "request": request, "spec": read_spec(text), "out_dir": str(tmp_path / "out")},
               runtime)
    return (tmp_path / "out" / "definition.md").read_text()


def _section(text: str, number: str) -> str:
    return text.split(f"### {number} ")[1].split("\n## ")[0].split("\n### ")[0]


def _rows(section: str) -> list[list[str]]:
    """Read a section's markdown table rows (header and rule left out)."""
    lines = [line for line in section.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if not line.startswith("|---")]


def test_a_broadcast_op_fills_every_template_section_with_its_own_figures(tmp_path: Path) -> None:
    text = _definition(tmp_path, "fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]")
    assert re.findall(r"^### (\d\.\d) ", text, re.M) == SECTIONS
    assert "## 5. What the verdict covers" in text
    # 3.3 goes beyond warps: programs, threads and elements per thread of the starting flat configuration.
    assert _rows(_section(text, "3.3")) == [["x [8192, 4096], bias [4096]", "32,768", "4", "128", "8", "-"]]
    assert "132 SMs of H100 (reference)" in _section(text, "3.1")
    # 3.5: the bias is needed by all 8192 rows; read once it is 8 KiB, from memory every time 64 MiB.
    x, bias = _rows(_section(text, "3.5"))
    assert x[2:7] == ["`x`", "33,554,432", "1", "67,108,864", "67,108,864"]
    assert bias[2:7] == ["`bias`", "4,096", "8192", "8,192", "67,108,864"]
    assert "served by L1/L2" in bias[7]
    # 4.2 lists the changes this op can get: a search of its schedule and switches to the others.
    changes = [row[0] for row in _rows(_section(text, "4.2"))]
    assert changes == ["`parameter search (flat)`", "`schedule flat -> rows`", "`schedule flat -> persistent`"]
    assert "On this device none of these figures is measured" in _section(text, "4.1")
    assert "success, failure and\nnext direction" in _section(text, "4.3")


def test_a_row_op_says_how_its_schedule_reuses_each_row(tmp_path: Path) -> None:
    spec = "layer norm of x [32, 4096] fp32 over the last dim"
    whole = _definition(tmp_path / "whole", spec)
    [row] = _rows(_section(whole, "3.5"))
    # Mean, variance and the output each need every element: three uses, one read while the row sits in registers.
    assert row[2:7] == ["`x`", "131,072", "3", "524,288", "1,572,864"]
    assert row[7] == "the row is held in registers: one read from memory serves all 3 pass(es)"
    # Reduced twice before it is written: 8 warps (256 threads) take 16 elements each.
    assert _rows(_section(whole, "3.3")) == [["x [32, 4096]", "32", "8", "256", "16", "-"]]
    looped = _definition(tmp_path / "looped", spec, LaunchConfig(schedule="looped_row", block_m=1, block_size=512))
    [row] = _rows(_section(looped, "3.5"))
    assert row[7].startswith("read in BLOCK_K chunks once per pass (3)")
    assert _rows(_section(looped, "3.3")) == [["x [32, 4096]", "32", "4", "128", "4", "-"]]
    assert "the loop over `BLOCK_K` chunks" in _section(looped, "3.3")
