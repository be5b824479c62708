"""The reading over HTTP: `POST /read` shows it without running anything, and a job keeps the one it ran on."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.server.live import RELU, LiveServer, submit, wait_final

KERNELBENCH_SWISH = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)

batch_size = 16
dim = 163

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
'''


@pytest.mark.bubblewrap
def test_read_shows_the_reading_of_text_code_and_each_task(live: LiveServer) -> None:
    with live.client() as client:
        quick = client.post("/read", json={"spec": "QuickGELU: x * sigmoid(1.702 * x) for x in bf16, shape [30, 64]."})
        assert quick.status_code == 200, quick.text
        body = quick.json()
        assert (body["read"], body["questions"]) == (1, 0)
        item = body["items"][0]
        assert item["status"] == "read" and item["understood"].startswith("Understood as:")
        assert item["reading"]["ir"] == "x * sigmoid(1.702 * x)"
        assert item["reading"]["inputs"] == [{"name": "x", "dtypes": ["bfloat16"], "shapes": [[30, 64]],
                                              "role": "argument"}]

        code = client.post("/read", json={"spec": KERNELBENCH_SWISH}).json()["items"][0]
        assert code["status"] == "read" and code["reading"]["source"] == "code", code
        assert code["reading"]["inputs"][0]["shapes"] == [[16, 163]]

        book = "# 任务书\n## 任务 1: ReLU\nrelu(x), x [64] fp32\n## 任务 2: 缩放\n把 x 放大\n"
        both = client.post("/read", json={"spec": book}).json()
        assert [i["task"] for i in both["items"]] == ["ReLU", "缩放"]
        assert (both["read"], both["questions"]) == (1, 1)
        question = both["items"][1]
        assert question["status"] == "question" and question["reading"] is None and "shape" in question["question"]

        assert client.post("/read", json={"spec": "   "}).status_code == 422


def test_read_needs_a_token_when_the_server_has_them(start_server: Callable[..., LiveServer]) -> None:
    server = start_server(api_tokens=["alice:tok-a"])
    with server.client() as anonymous:
        assert anonymous.post("/read", json={"spec": RELU}).status_code == 401
    with server.client(token="tok-a") as alice:
        assert alice.post("/read", json={"spec": RELU}).json()["read"] == 1


def test_a_job_shows_what_it_understood_and_a_question_job_shows_none(live: LiveServer) -> None:
    with live.client() as client:
        job = wait_final(client, submit(client, RELU))
        assert job["status"] == "verified" and job["coverage"] == "spec"  # every spec shape ran
        assert job["understood"].startswith("Understood as: relu")
        assert job["reading"]["ir"] == "relu(x)" and job["reading"]["inputs"][0]["shapes"] == [[64, 64]]
        vague = wait_final(client, submit(client, "make x faster please"))
        assert vague["status"] == "rejected" and vague["understood"] is None and vague["reading"] is None
