"""The spec a user would send for a task: the prompt's description part, plus the benchmark's first call."""

from __future__ import annotations

import json
from typing import Any

START = "Functional Description:"
END = "After generation"
DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "float64": "float32",
          "int64": "int64", "int32": "int64", "int16": "int64", "int8": "int64", "uint8": "int64", "bool": "bool"}


def description_part(instruction: str) -> str:
    """The instruction from 'Functional Description:' up to 'After generation' (its parts left as they are)."""
    start = instruction.find(START)
    text = instruction[start:] if start >= 0 else instruction
    end = text.find(END)
    return (text[:end] if end >= 0 else text).strip()


def inputs_line(tensors: list[dict[str, Any]]) -> str:
    """`Inputs: x float32 [4, 5], ...`: the first call's tensors (float64 written float32, other ints int64)."""
    items = [f"{t['name']} {DTYPES.get(t['dtype'], t['dtype'])} [{', '.join(str(s) for s in t['shape'])}]"
             for t in tensors]
    return "Inputs: " + ", ".join(items)


def parameters_line(others: list[dict[str, Any]]) -> str:
    """`Parameters: dim = 1, ...`: the first call's non-tensor arguments that differ from the signature's default."""
    items = [f"{o['name']} = {_value(o['value'])}" for o in others if o.get("differs")]
    return "Parameters: " + ", ".join(items) if items else ""


def _value(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool) or value is None:
        return str(value)
    return json.dumps(value)


def spec_text(instruction: str, capture: dict[str, Any]) -> str:
    lines = [description_part(instruction), inputs_line(capture["tensors"])]
    params = parameters_line(capture["others"])
    return "\n".join(lines + ([params] if params else []))
