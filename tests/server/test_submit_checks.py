"""What `POST /jobs` refuses at once, with the reason and what to do instead: task books, absent devices."""

from __future__ import annotations

from agent.runtime.devices import detect
from tests.server.live import RELU, LiveServer, submit, wait_final

BOOK = """# Task book: activation kernels

## Task: add_relu

- Description: relu of the sum of a and b
- Inputs: a: Tensor [64, 64], dtype float16; b: Tensor [64], same dtype as a

## Task: scale

- Description: x times 2
- Inputs: x: Tensor [64, 64], dtype float32
"""


def _has(kind: str) -> bool:
    try:
        detect(kind)
    except RuntimeError:
        return False
    return True


def test_a_task_book_is_refused_with_the_way_to_run_it(live: LiveServer) -> None:
    with live.client() as client:
        response = client.post("/jobs", json={"spec": BOOK, "device": "cpu"})
        assert response.status_code == 422
        detail = response.json()["detail"]
        assert detail.startswith("spec: the text holds 2 tasks")
        assert "one task per job" in detail and "kernelgen run --file" in detail and "split_tasks" not in detail
        assert client.get("/jobs").json()["total"] == 0  # nothing was queued


def test_a_device_this_server_lacks_is_refused_with_the_devices_it_has(live: LiveServer) -> None:
    missing = [kind for kind in ("cuda", "npu") if not _has(kind)]
    with live.client() as client:
        for kind in missing:
            response = client.post("/jobs", json={"spec": RELU, "device": kind})
            assert response.status_code == 422, response.text
            detail = response.json()["detail"]
            assert detail.startswith(f"device: {kind} is not available on this server; it has ")
            assert "cpu (" in detail
        assert client.get("/jobs").json()["total"] == 0
        for kind in ("auto", "cpu"):  # always here: the CPU runs kernels in the Triton interpreter
            wait_final(client, submit(client, "foo bar", device=kind))
