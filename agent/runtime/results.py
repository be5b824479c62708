"""Make a model-written test's JSON result safe to read: known fields get their types, the rest is dropped."""

from __future__ import annotations

import math
from typing import Any

_CASE_TEXT = ("status", "message", "kind")
_CASE_NUMBERS = ("max_abs_err", "max_rel_err")


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
    cleaned["max_abs_err"] = given if given is not None else (max(errors) if errors else None)
    cleaned["skipped"] = [s for s in result.get("skipped", []) if isinstance(s, dict)] if isinstance(
        result.get("skipped"), list) else []
    cleaned["message"] = str(result.get("message", ""))[:2000]
    return cleaned


def _clean_case(case: dict[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {"shapes": case.get("shapes"), "dtypes": case.get("dtypes")}
    cleaned |= {k: str(case[k])[:500] for k in _CASE_TEXT if case.get(k) is not None}
    cleaned |= {k: number(case.get(k)) for k in _CASE_NUMBERS}
    cleaned["seed"] = count(case.get("seed"))
    if "first_mismatch" in case:
        cleaned["first_mismatch"] = str(case["first_mismatch"])[:300]
    return cleaned
