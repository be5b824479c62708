"""Compare a reading's values with the benchmark function's on the same fresh inputs: right or wrong, and why."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from agent.ir.evaluate import evaluate
from agent.ir.parse import parse_text
from agent.reading import Reading

RTOL = ATOL = 1e-3


@dataclass(frozen=True)
class Verdict:
    outcome: str  # "right" or "wrong"
    reason: str = ""
    mapping: str = ""  # how the reading's inputs were matched to the benchmark's: "name" or "order"
    evaluator: str = ""  # "ir" (agent.ir.evaluate on the parsed IR) or "pytorch" (exec of the rendered statements)


def match_inputs(reading: Reading, names: list[str]) -> tuple[dict[str, int], str] | str:
    """Reading input name -> index in the benchmark's tensors: by name when the names agree, else by order."""
    mine = [i.name for i in reading.inputs]
    if sorted(mine) == sorted(names):
        return {n: names.index(n) for n in mine}, "name"
    if len(mine) != len(names):
        return f"the reading has {len(mine)} inputs ({', '.join(mine)}), the benchmark's call {len(names)} " \
               f"({', '.join(names)})"
    return {n: i for i, n in enumerate(mine)}, "order"


def run_reading(reading: Reading, env: dict[str, Any]) -> tuple[Any, str]:
    """The reading's output on env: the IR through agent.ir.evaluate, else its PyTorch statements exec'd."""
    values = env | {k: float(v) for k, v in reading.params.items()}
    if reading.ir:
        try:
            expr = parse_text(reading.ir)
        except Exception:
            expr = None
        if expr is not None:
            return evaluate(expr, values), "ir"
    scope: dict[str, Any] = {"torch": torch, "F": F, "math": math} | values
    exec(compile(reading.pytorch, "<reading>", "exec"), scope)  # the reader's own rendering of the spec
    return scope[reading.output], "pytorch"


def _close(mine: Any, theirs: Any) -> str:
    """'' when the outputs agree (shape, then values to rtol = atol = 1e-3, NaN equal to NaN), else why not."""
    if isinstance(theirs, tuple):
        if len(theirs) == 1:
            theirs = theirs[0]
        else:
            return f"the benchmark returns {len(theirs)} tensors, the reading one"
    if not isinstance(mine, torch.Tensor):
        mine = torch.as_tensor(mine)
    if tuple(mine.shape) != tuple(theirs.shape):
        return f"shape {list(mine.shape)}, the benchmark's {list(theirs.shape)}"
    a, b = mine.detach().to(torch.float64), theirs.detach().to(torch.float64)
    if torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
        return ""
    bad = ~torch.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
    where = bad.nonzero()[0].tolist()
    return f"{int(bad.sum())} of {bad.numel()} values differ (at {where}: {a[tuple(where)].item():.4g} vs " \
           f"{b[tuple(where)].item():.4g})"


def judge(reading: Reading, names: list[str], runs: list[dict[str, Any]]) -> Verdict:
    """Right when the reading matches the benchmark's output on every run (seed); runs hold `inputs` (tensors in
    the benchmark's argument order) and `output`."""
    matched = match_inputs(reading, names)
    if isinstance(matched, str):
        return Verdict("wrong", matched)
    index, mapping = matched
    evaluator = ""
    for run in runs:
        env = {}
        for name, i in index.items():
            x = run["inputs"][i]
            env[name] = x.to(torch.float64) if x.is_floating_point() else x
        try:
            mine, evaluator = run_reading(reading, env)
        except Exception as exc:
            return Verdict("wrong", f"the reading fails on the inputs ({type(exc).__name__}: {exc})"[:300],
                           mapping, evaluator)
        why = _close(mine, run["output"])
        if why:
            return Verdict("wrong", f"seed {run.get('seed', '?')}: {why}", mapping, evaluator)
    return Verdict("right", "", mapping, evaluator)
