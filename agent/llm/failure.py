"""Describe why a version failed, in the terms the repair prompt gives the model."""

from __future__ import annotations

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
    if status in ("timeout", "crashed"):
        summary = str(result.get("message") or f"the accuracy test {status} without writing its result")
        return Failure(stage=f"accuracy test {status}", summary=summary, log=log)
    check = result.get("cross_check", {})
    own_cases = [c for c in result.get("cases", []) if isinstance(c, dict) and c.get("status") != "pass"]
    check_cases = [c for c in check.get("cases", []) if isinstance(c, dict) and c.get("status") != "pass"]
    # Both sources get room: the independent check may say what the model's own test cannot.
    half = MAX_CASES // 2 if own_cases and check_cases else MAX_CASES
    cases = own_cases[:half] + check_cases[:MAX_CASES - min(half, len(own_cases))]
    failing = [FailingCase(**{k: v for k, v in c.items() if k in FailingCase.model_fields}) for c in cases]
    own = f"{result.get('cases_failed', '?')}/{result.get('cases_run', '?')} cases of the accuracy test failed"
    if check and check.get("status") != "pass":
        own += (f"; the independent check failed {check.get('cases_failed', '?')}/{check.get('cases_run', '?')} "
                f"cases{': ' + str(check['message']) if check.get('message') else ''}")
    elif result.get("status") == "pass":
        own = str(check.get("message", "the independent check failed"))
    return Failure(stage="failed accuracy", summary=own, cases=failing, log=log)
