"""A batch's tasks get titles a report's reader can tell apart."""

from __future__ import annotations

import json

from server.batch_input import TITLE_CHARS, jsonl_tasks, spec_tasks


def test_a_list_of_specs_is_titled_by_place_and_first_line() -> None:
    long = "y = residual + alpha * y_in with alpha = 0.5, residual and y_in float16 [8192, 4096]"
    tasks = spec_tasks(["\n  fused bias-add +   GELU, x [8192, 4096] fp16\nbias [4096]", long, "\n \n"])
    assert [title for title, _ in tasks] == [
        "spec 1: fused bias-add + GELU, x [8192, 4096] fp16",
        f"spec 2: {long[:TITLE_CHARS]}…",
        "spec 3",
    ]
    assert tasks[0][1].endswith("bias [4096]")  # the spec itself is kept whole


def test_unnamed_jsonl_records_keep_their_line_number_and_named_ones_their_name() -> None:
    text = "\n".join(json.dumps(r) for r in ({"spec": "对 x 的每一行做 softmax，x [2048, 5000] float32"},
                                            {"spec": "relu of x [8, 8]", "name": "relu"}))
    titles = [title for title, _ in jsonl_tasks(text)]
    assert titles == ["line 1: 对 x 的每一行做 softmax，x [2048, 5000] float32", "relu"]
