"""Read tests' JSON results: a model-written one made safe (known fields typed, the rest dropped), a failure's cause."""

from __future__ import annotations

import math
import re
from typing import Any

_CASE_TEXT = ("status", "message", "kind")
_CASE_NUMBERS = ("max_abs_err", "max_rel_err")
CAUSE_CHARS = 300  # a cause is one line of a report; the whole message stays in report.json
_EXCEPTION = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)):")


def number(value: object) -> float | None:
    """Return a finite or infinite float, or None for anything else (strings, NaN, bools)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def count(value: object) -> int | None:
    """Return a non-negative int, or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def clean_accuracy(result: dict[str, Any]) -> dict[str, Any]:
    """Return the accuracy result with typed fields: cases a list of dicts, counts ints, errors floats."""
    cleaned = dict(result)
    cases = [_clean_case(c) for c in result.get("cases", []) if isinstance(c, dict)] if isinstance(
        result.get("cases"), list) else []
    cleaned["cases"] = cases
    cleaned["cases_run"] = count(result.get("cases_run")) if count(result.get("cases_run")) is not None else len(cases)
    failed = count(result.get("cases_failed"))
    cleaned["cases_failed"] = failed if failed is not None else sum(1 for c in cases if c.get("status") != "pass")
    errors = [c["max_abs_err"] for c in cases if c.get("max_abs_err") is not None]
    given = number(result.get("max_abs_err"))
    if cases and not errors:
        given = None  # no case compared anything (they all raised): there is no error to report, not 0.0
    cleaned["max_abs_err"] = given if given is not None else (max(errors) if errors else None)
    cleaned["skipped"] = [s for s in result.get("skipped", []) if isinstance(s, dict)] if isinstance(
        result.get("skipped"), list) else []
    cleaned["message"] = str(result.get("message", ""))[:2000]
    return cleaned


def _clean_case(case: dict[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {"shapes": case.get("shapes"), "dtypes": case.get("dtypes")}
    cleaned |= {k: clip(str(case[k]), 500) for k in _CASE_TEXT if case.get(k) is not None}
    cleaned |= {k: number(case.get(k)) for k in _CASE_NUMBERS}
    cleaned["seed"] = count(case.get("seed"))
    if "first_mismatch" in case:
        cleaned["first_mismatch"] = str(case["first_mismatch"])[:300]
    return cleaned


def clip(text: str, limit: int) -> str:
    """Shorten a message to its two ends: a compiler error says its cause on its last line."""
    return text if len(text) <= limit else f"{text[:limit // 3]} ... {text[-(limit - limit // 3 - 5):]}"


def failure_cause(result: dict[str, Any]) -> str | None:
    """Return why a run failed in one line: the first case that raised, else the run's own message."""
    cases = result.get("cases")
    for case in cases if isinstance(cases, list) else []:
        if isinstance(case, dict) and case.get("status") == "error" and case.get("message"):
            return last_line(str(case["message"]))
    message = result.get("message") or result.get("reason")  # the run's own words (a refusal, a crash, a timeout)
    return clip(" ".join(str(message).split()), CAUSE_CHARS) if message else None


def last_line(message: str) -> str:
    """Return a message's last line, where a compiler error says its cause, with the exception's type kept."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    kind = _EXCEPTION.match(lines[0])
    if len(lines) > 1 and kind and not _EXCEPTION.match(line):
        line = f"{kind.group(1)}: {line}"  # `CompilationError: at 3:4: <source> ... ValueError(...)`
    return line if len(line) <= CAUSE_CHARS else line[:CAUSE_CHARS - 3] + "..."
