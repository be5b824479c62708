"""Batches over the API: a task book, specs or JSONL in; one job per task; progress, events, report, zip, cancel."""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from storage import batches as stored
from storage.db import make_engine
from tests.databases import database_url
from tests.server.gpu_job import store_gpu_job
from tests.server.live import RELU, SLOW, LiveServer, read_stream
from tests.server.subprocess_server import Server, environment

BOOK = """# 激活函数任务书

统一要求：fp32 使用 rtol=1e-4、atol=1e-4。

## 任务 1：ReLU

- 输入参数：x：torch.Tensor，形状 [64, 64]，数据类型 float32
- 功能描述：out = relu(x)

## 任务 2：Sigmoid

- 输入参数：x：torch.Tensor，形状 [3, 100]，数据类型 float16
- 功能描述：out = sigmoid(x)

## 任务 3：看不懂的

- 做点什么
"""


def wait_batch(client: httpx.Client, batch_id: int, timeout: float = 240.0) -> dict[str, Any]:
    """Poll a batch until every task is over."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        batch: dict[str, Any] = client.get(f"/batches/{batch_id}").raise_for_status().json()
        if batch["status"] in ("done", "cancelled"):
            return batch
        time.sleep(0.3)
    raise AssertionError(f"batch {batch_id} did not finish in {timeout} s: {batch}")


@pytest.mark.slow_on_postgresql
def test_a_task_book_runs_as_a_batch_with_a_report(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as client:
        accepted = client.post("/batches", json={"taskbook": BOOK, "name": "activations", "device": "cpu"})
        assert accepted.status_code == 202, accepted.text
        batch_id = accepted.json()["id"]
        assert accepted.json()["tasks"] == 3
        batch = wait_batch(client, batch_id)
        assert [t["status"] for t in batch["tasks"]] == ["verified", "verified", "rejected"]
        assert [t["title"] for t in batch["tasks"]][:2] == ["ReLU", "Sigmoid"]
        assert batch["counts"]["verified"] == 2 and batch["total"] == 3
        # Its tasks are ordinary jobs.
        assert client.get(f"/jobs/{batch['tasks'][0]['job_id']}").json()["status"] == "verified"
        report = client.get(f"/batches/{batch_id}/report").json()
        assert report["totals"]["verified"] == 2 and report["totals"]["exec_accuracy"] == pytest.approx(2 / 3)
        assert report["totals"]["fast_p_eager"]["0.0"] == pytest.approx(2 / 3)
        assert report["totals"]["fast_p_eager"]["1.0"] == 0.0  # nothing measured on the CPU interpreter
        assert [t["op"] for t in report["tasks"]][:2] == ["relu", "sigmoid"]
        assert report["tasks"][2]["reason"]  # why the third was not verified
        markdown = client.get(f"/batches/{batch_id}/report", params={"format": "md"}).text
        assert "| verified | 2 of 3 (67%) |" in markdown and "| 1 | ReLU | verified | relu |" in markdown
        page = client.get(f"/batches/{batch_id}/report", params={"format": "html"})
        assert page.headers["content-security-policy"] == "default-src 'none'" and "<script" not in page.text
        names = zipfile.ZipFile(io.BytesIO(client.get(f"/batches/{batch_id}/artifacts.zip").content)).namelist()
        assert "task_001_relu/relu_triton.py" in names and "task_002_sigmoid/sigmoid_triton.py" in names
        events = read_stream(client, f"/batches/{batch_id}/events")
        assert events[-1]["event"] == "end"
        assert {e["data"]["task"] for e in events[:-1]} == {0, 1, 2}
        ids = [int(e["id"]) for e in events[:-1]]
        assert ids == sorted(ids)
        resumed = read_stream(client, f"/batches/{batch_id}/events", headers={"Last-Event-ID": str(ids[-3])})
        assert [int(e["id"]) for e in resumed[:-1]] == ids[-2:]


@pytest.mark.bubblewrap
@pytest.mark.slow_on_postgresql
def test_specs_and_jsonl_batches_and_their_refusals(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as client:
        reference = "import torch\n\ndef gelu_ref(x):\n    return torch.nn.functional.gelu(x)\n"
        jsonl = "\n".join(json.dumps(r) for r in ({"spec": RELU, "name": "relu"},
                                                  {"spec": "sigmoid of x [8, 8] float32"},
                                                  {"spec": "GELU, x [8, 40] float32", "reference": reference}))
        batch = client.post("/batches", json={"jsonl": jsonl, "device": "cpu"}).json()
        specs = client.post("/batches", json={"specs": [RELU], "device": "cpu"}).json()
        done = wait_batch(client, batch["id"])
        assert [t["title"] for t in done["tasks"]] == ["relu", "line 2: sigmoid of x [8, 8] float32",
                                                     "line 3: GELU, x [8, 40] float32"]
        assert [t["status"] for t in done["tasks"]] == ["verified", "verified", "verified"]
        checked = client.get(f"/jobs/{done['tasks'][2]['job_id']}").json()
        assert checked["reading"]["source"] == "code" and checked["reading"]["code"]["entry"] == "gelu_ref"
        assert wait_batch(client, specs["id"])["counts"]["verified"] == 1
        for body, words in (({"jsonl": '{"spec": "x"}\nnot json'}, "line 2: not JSON"),
                            ({"jsonl": '{"text": "x"}'}, 'needs a non-empty "spec"'),
                            ({"jsonl": '{"spec": "x", "reference": 3}'}, "a reference is PyTorch code"),
                            ({"jsonl": '{"spec": "relu of x [4] \\u0000"}'}, "NUL"),
                            ({"specs": [RELU], "llm": "openai"}, "llm:"),
                            ({"specs": []}, "no task"),
                            ({"specs": [RELU], "taskbook": BOOK}, "exactly one"),
                            ({}, "exactly one")):
            refused = client.post("/batches", json=body)
            assert refused.status_code == 422 and words in str(refused.json()["detail"]), (body, refused.text)
        assert [b["id"] for b in client.get("/batches").json()["items"]] == [specs["id"], batch["id"]]


def test_cancel_a_batch(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(concurrency=1)
    with live.client() as client:
        batch_id = client.post("/batches", json={"specs": [SLOW, SLOW, RELU], "device": "cpu"}).json()["id"]
        deadline = time.monotonic() + 60
        while client.get(f"/batches/{batch_id}").json()["counts"]["running"] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        cancelled = client.post(f"/batches/{batch_id}/cancel").json()
        assert cancelled["counts"]["queued"] == 0
        batch = wait_batch(client, batch_id)
        assert batch["status"] == "cancelled" and batch["counts"]["cancelled"] >= 2


def test_batches_belong_to_their_owner(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(api_tokens=["alice:tok-a", "bob:tok-b"])
    with live.client("tok-a") as alice, live.client("tok-b") as bob:
        batch_id = alice.post("/batches", json={"specs": [RELU], "device": "cpu"}).json()["id"]
        for path in ("", "/report", "/artifacts.zip", "/events"):
            assert bob.get(f"/batches/{batch_id}{path}").status_code == 404, path
        assert bob.post(f"/batches/{batch_id}/cancel").status_code == 404
        assert bob.get("/batches").json()["items"] == []
        wait_batch(alice, batch_id)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.slow_on_postgresql
def test_a_batch_survives_a_sigkilled_server(tmp_path: Path, backend: str) -> None:
    with database_url(backend, tmp_path) as url:
        env = environment(tmp_path, url)
        server = Server(env)
        try:
            batch_id = server.post("/batches", {"specs": [SLOW, RELU, RELU], "device": "cpu"})["id"]
            deadline = time.monotonic() + 120
            while server.get(f"/batches/{batch_id}")["counts"]["running"] == 0:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            server.kill()
        except BaseException:
            server.stop()
            raise
        server = Server(env)
        try:
            deadline = time.monotonic() + 300
            while (batch := server.get(f"/batches/{batch_id}"))["status"] != "done":
                assert time.monotonic() < deadline, batch
                time.sleep(0.3)
            jobs = [server.get(f"/jobs/{t['job_id']}") for t in batch["tasks"]]
        finally:
            server.stop()
        assert batch["counts"]["verified"] == 3, batch
        assert len({j["id"] for j in jobs}) == 3  # one job per task, none run twice


@pytest.mark.slow_on_postgresql
def test_the_report_plots_a_gpu_task_and_says_when_nothing_was_measured(
    start_server: Callable[..., LiveServer],
) -> None:
    live = start_server()
    engine = make_engine(live.settings.database_url)
    job_id, _, measured = store_gpu_job(engine)
    batch_id = stored.create_batch(engine, None, "h200", "specs", "{}", [("bias+gelu", "fused bias-add + GELU")])
    stored.link_job(engine, stored.list_tasks(engine, batch_id)[0].id or 0, job_id)
    with live.client() as client:
        report = client.get(f"/batches/{batch_id}/report").json()
        task = report["tasks"][0]
        assert task["speedup_vs_eager"] == pytest.approx(measured["best"]["speedup_vs_eager"])
        assert task["speedup_vs_compile"] == pytest.approx(measured["best"]["speedup_vs_compile"])
        assert task["points"] and task["device"] == "NVIDIA H200"
        assert report["totals"]["fast_p_eager"]["2.0"] == 1.0 and report["totals"]["fast_p_compile"]["1.5"] == 0.0
        cpu = client.post("/batches", json={"specs": [RELU], "device": "cpu"}).json()["id"]
        wait_batch(client, cpu)
        for name in ("fast_p", "speedups", "roofline"):
            drawn = client.get(f"/batches/{batch_id}/plots/{name}.png")
            empty = client.get(f"/batches/{cpu}/plots/{name}.png")
            assert drawn.headers["content-type"] == "image/png" and drawn.content[:8] == b"\x89PNG\r\n\x1a\n"
            assert drawn.content != empty.content, name  # the CPU batch's plot says nothing was measured
        assert client.get(f"/batches/{batch_id}/plots/other.png").status_code == 422
