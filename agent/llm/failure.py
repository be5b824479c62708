"""Describe why a version failed, in the terms the repair prompt gives the model."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from agent.state import RoundRecord

MAX_CASES = 6
LOG_CHARS = 3000


class FailingCase(BaseModel):
    """One failing shape and dtype with its errors."""

    shapes: Any = None
    dtypes: Any = None
    seed: Any = None
    status: Any = "fail"
    max_abs_err: Any = None
    max_rel_err: Any = None
    first_mismatch: Any = None
    message: Any = ""


class Failure(BaseModel):
    """What went wrong with one version: the stage, a summary, the failing cases, the run's output."""

    stage: str
    summary: str
    cases: list[FailingCase] = []
    log: str = ""


def describe_failure(record: RoundRecord) -> Failure:
    """Collect the failing cases and messages of a round that did not pass accuracy."""
    result = record.accuracy
    status = record.accuracy_status
    if status == "refused":
        return Failure(stage="was refused before running", summary=record.verdict or str(result.get("message", "")))
    log = str(result.get("stderr_tail", ""))[-LOG_CHARS:]
    if status in ("timeout", "crashed", "killed"):
        summary = str(result.get("message") or f"the accuracy test {status} without writing its result")
        return Failure(stage=f"accuracy test {status}", summary=summary, log=log)
    check = result.get("cross_check", {})
    own_cases, check_cases = (_distinct_first([c for c in source.get("cases", []) if isinstance(c, dict)
                                               and c.get("status") != "pass"]) for source in (result, check))
    # Both sources get room: the independent check may say what the model's own test cannot.
    half = MAX_CASES // 2 if own_cases and check_cases else MAX_CASES
    cases = own_cases[:half] + check_cases[:MAX_CASES - min(half, len(own_cases))]
    failing = [FailingCase(**{k: v for k, v in c.items() if k in FailingCase.model_fields}) for c in cases]
    parts = []
    if result.get("status") != "pass":
        parts.append(f"{result.get('cases_failed', '?')}/{result.get('cases_run', '?')} cases of the accuracy test "
                     "failed")
    if check and check.get("status") != "pass":
        parts.append(f"the independent check failed {check.get('cases_failed', '?')}/{check.get('cases_run', '?')} "
                     f"cases{': ' + str(check['message']) if check.get('message') else ''}")
    audit = result.get("audit")
    if isinstance(audit, dict) and audit.get("status") == "fail":
        parts.append(str(audit.get("message", "")))
    summary = "; ".join(parts) or "the accuracy test failed"
    return Failure(stage="failed accuracy", summary=summary, cases=failing, log=log)


def _distinct_first(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Order failing cases so each distinct shape shows once before any repeats (seeds and dtypes of one shape)."""
    seen: set[str] = set()
    first: list[dict[str, Any]] = []
    repeats: list[dict[str, Any]] = []
    for case in cases:
        key = json.dumps(case.get("shapes"), sort_keys=True, default=str)
        (repeats if key in seen else first).append(case)
        seen.add(key)
    return first + repeats
