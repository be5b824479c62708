"""Shared helpers: trace trusted test code in-process, and read the corpus code specs once per session."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agent.reader.code import CodeReading, find_code, read_code
from agent.reader.code.read_code import HARNESS_DIR
from agent.reader.errors import SpecQuestion

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # corpus_loader sits one folder up

from corpus_loader import Case, load_corpus  # noqa: E402

from tests.sampling import ci_sample  # noqa: E402

CODE_CASES = [c for c in load_corpus() if c.is_code]
# Refusals whose spec is code (code without shapes): read_code must ask, naming what is missing.
CODE_REFUSALS = [c for c in load_corpus() if c.expect == "refuse" and find_code(c.spec) is not None]
# Each reading starts a sandboxed process (torch imported anew): CI reads a fixed half, a full run reads them all.
READ_CASES = ci_sample(CODE_CASES, every=2, key=lambda c: c.id)
READ_REFUSALS = ci_sample(CODE_REFUSALS, every=2, key=lambda c: c.id)
READ_IDS = {c.id for c in [*READ_CASES, *READ_REFUSALS]}
USER_MODULE = "user_spec"


def trace_here(source: str, folder: Path, declared: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run trace_code.py's trace() in this process on trusted test code (fast: torch is already imported)."""
    sys.path.insert(0, str(HARNESS_DIR))
    try:
        trace_code = importlib.import_module("trace_code")
    finally:
        sys.path.remove(str(HARNESS_DIR))
    (folder / "user_spec.py").write_text(source)
    here = os.getcwd()
    os.chdir(folder)
    try:
        try:
            return trace_code.trace(declared or {}, None)  # type: ignore[no-any-return]
        except trace_code.Refused as exc:
            return {"status": "error", "message": str(exc)}
    finally:
        os.chdir(here)
        sys.modules.pop(USER_MODULE, None)


def declared_of(case: Case) -> dict[str, tuple[list[int], str]] | None:
    """Return the shapes the prose reader would give a function spec (the corpus's own inputs), else None."""
    code = find_code(case.spec)
    if code is not None and "get_inputs" in code.source or not case.inputs:
        return None
    return {i.name: (i.shapes[0], i.dtypes[0]) for i in case.inputs}


def _read(case: Case, root: Path) -> CodeReading | SpecQuestion:
    code = find_code(case.spec)
    assert code is not None, case.id
    try:
        return read_code(code, work_dir=root / case.id, declared=declared_of(case))
    except SpecQuestion as exc:
        return exc


@pytest.fixture(scope="session")
def corpus_readings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, CodeReading | SpecQuestion]]:
    """Read every corpus code spec (and code refusal) through find_code + read_code, two at a time."""
    root = tmp_path_factory.mktemp("corpus-code")
    cases = [*READ_CASES, *READ_REFUSALS]
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        readings = dict(zip((c.id for c in cases), pool.map(lambda c: _read(c, root), cases), strict=True))
    yield readings
