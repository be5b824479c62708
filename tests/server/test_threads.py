"""The conversation API behind the web page: threads, readings before runs, answers, follow-ups, owners, origins."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.server.live import RELU, LiveServer, wait_final

TASK_BOOK = """# 激活函数任务书

统一要求：fp32 使用 rtol=1e-4、atol=1e-4；目标加速比 > 1.0。

## 任务 1：ReLU

- 算子名称：relu
- 输入参数：x：torch.Tensor，形状 [64, 64]，数据类型 float32
- 功能描述：out = relu(x)

## 任务 2：随便做点什么

- 输入参数：y，数据类型 float16
"""


def _thread(client: object) -> int:
    response = client.post("/threads")  # type: ignore[attr-defined]
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def test_a_spec_is_read_before_anything_runs_and_started_once(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as client:
        thread = _thread(client)
        said = client.post(f"/threads/{thread}/messages", json={"text": RELU}).json()
        assert [m["kind"] for m in said] == ["text", "reading"]
        reading = said[1]
        assert reading["data"]["reading"]["pytorch"] == "out = torch.relu(x)"
        where = reading["data"]["runs_on"]  # said before Start: on the CPU interpreter nothing is timed
        assert where["timed"] == (where["kind"] != "cpu") and where["asked"] is None
        assert client.get("/jobs").json()["total"] == 0  # nothing runs before Start
        started = client.post(f"/threads/{thread}/messages/{reading['id']}/start", json={})
        assert started.status_code == 202, started.text
        job_id = started.json()["job_id"]
        assert started.json()["data"]["runs_on"] == where  # the job card says it too
        assert wait_final(client, job_id)["status"] == "verified"
        again = client.post(f"/threads/{thread}/messages/{reading['id']}/start", json={})
        assert again.status_code == 409 and str(job_id) in again.json()["detail"]
        # A task number on a reading is no way around it (a reading has no tasks).
        assert client.post(f"/threads/{thread}/messages/{reading['id']}/start", json={"task": 0}).status_code == 409
        detail = client.get(f"/threads/{thread}").json()
        assert detail["title"] == RELU[:80]
        assert [m["kind"] for m in detail["messages"]] == ["text", "reading", "job"]
        # A user message cannot be started (422: it exists); a message of another thread is not found there.
        assert client.post(f"/threads/{thread}/messages/{said[0]['id']}/start").status_code == 422
        other = _thread(client)
        assert client.post(f"/threads/{other}/messages/{reading['id']}/start").status_code == 404


def test_a_question_is_answered_by_the_next_message(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as client:
        thread = _thread(client)
        asked = client.post(f"/threads/{thread}/messages", json={"text": "ReLU on x"}).json()[1]
        assert asked["kind"] == "question" and "shape" in asked["text"]
        answered = client.post(f"/threads/{thread}/messages", json={"text": "x is [64, 64] float32"}).json()[1]
        assert answered["kind"] == "reading"
        assert answered["data"]["reading"]["inputs"][0]["shapes"] == [[64, 64]]
        assert answered["spec_text"] == "ReLU on x\nx is [64, 64] float32"
        # A message that reads on its own after a question is a new spec, not an answer.
        asked = client.post(f"/threads/{thread}/messages", json={"text": "sigmoid of y"}).json()[1]
        assert asked["kind"] == "question"
        fresh = client.post(f"/threads/{thread}/messages", json={"text": RELU}).json()[1]
        assert fresh["kind"] == "reading" and fresh["spec_text"] == RELU


@pytest.mark.slow_on_postgresql
def test_a_follow_up_derives_the_next_spec_from_the_last_job(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as client:
        thread = _thread(client)
        reading = client.post(f"/threads/{thread}/messages", json={"text": RELU}).json()[1]
        job_id = client.post(f"/threads/{thread}/messages/{reading['id']}/start").json()["job_id"]
        wait_final(client, job_id)
        derived = client.post(f"/threads/{thread}/messages", json={"text": "use bf16, 3 more rounds"}).json()[1]
        assert derived["kind"] == "reading", derived
        assert derived["data"]["reading"]["inputs"][0]["dtypes"] == ["bfloat16"]
        assert derived["data"]["options"]["rounds"] == 3
        assert derived["data"]["derived_from"] == job_id
        assert derived["data"]["options"]["initial_config"]  # continues from the best version's configuration
        second = client.post(f"/threads/{thread}/messages/{derived['id']}/start").json()["job_id"]
        job = wait_final(client, second)
        assert job["status"] == "verified" and "bfloat16" in job["spec_text"]


def test_a_task_book_lists_each_task_and_starts_them_one_by_one(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    book = TASK_BOOK
    with live.client() as client:
        thread = _thread(client)
        tasks = client.post(f"/threads/{thread}/messages", json={"text": book}).json()[1]
        assert tasks["kind"] == "tasks" and [t["status"] for t in tasks["data"]["tasks"]] == ["read", "question"]
        first = next(i for i, t in enumerate(tasks["data"]["tasks"]) if t["status"] == "read")
        started = client.post(f"/threads/{thread}/messages/{tasks['id']}/start", json={"task": first})
        assert started.status_code == 202, started.text
        assert client.post(f"/threads/{thread}/messages/{tasks['id']}/start", json={"task": first}).status_code == 409
        assert client.post(f"/threads/{thread}/messages/{tasks['id']}/start", json={"task": 1}).status_code == 422
        assert client.post(f"/threads/{thread}/messages/{tasks['id']}/start", json={"task": 99}).status_code == 422
        assert wait_final(client, started.json()["job_id"])["status"] == "verified"


def test_threads_belong_to_their_owner(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(api_tokens=["alice:tok-alice", "bob:tok-bob"])
    with live.client("tok-alice") as alice, live.client("tok-bob") as bob, live.client("") as nobody:
        thread = _thread(alice)
        alice.post(f"/threads/{thread}/messages", json={"text": "ReLU on x"})
        assert [t["id"] for t in alice.get("/threads").json()["items"]] == [thread]
        assert bob.get("/threads").json()["items"] == []
        assert bob.get(f"/threads/{thread}").status_code == 404
        assert bob.post(f"/threads/{thread}/messages", json={"text": RELU}).status_code == 404
        assert nobody.get("/threads").status_code == 401
        assert nobody.get("/").status_code == 200  # the page itself holds no data
        # Only its owner deletes a thread; its messages go with it.
        assert bob.delete(f"/threads/{thread}").status_code == 404
        assert nobody.delete(f"/threads/{thread}").status_code == 401
        assert alice.delete(f"/threads/{thread}").status_code == 204
        assert alice.get(f"/threads/{thread}").status_code == 404 and alice.get("/threads").json()["items"] == []


def test_cross_site_writes_are_refused(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as client:
        evil = client.post("/threads", headers={"Origin": "https://evil.example"})
        assert evil.status_code == 403
        # DNS rebinding: another site's name pointed at 127.0.0.1 is not this loopback server's name.
        rebound = client.get("/threads", headers={"Host": "evil.example:8000"})
        assert rebound.status_code == 403 and "not this loopback server" in rebound.json()["detail"]
        assert client.get("/threads", headers={"Host": "localhost"}).status_code == 200
        assert client.get("/threads").json()["items"] == []
        same = client.post("/threads", headers={"Origin": live.url})
        assert same.status_code == 201
        form = client.post(f"/threads/{same.json()['id']}/messages", content=f"text={RELU}",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert form.status_code == 422  # a form post (no preflight) is not JSON: refused before reading


def test_the_page_and_its_assets_carry_a_strict_policy(start_server: Callable[..., LiveServer]) -> None:
    live = start_server()
    with live.client() as client:
        page = client.get("/")
        assert page.status_code == 200 and 'src="/static/app.js"' in page.text
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert "<script>" not in page.text  # no inline script
        for name in ("app.js", "render.js", "charts.js", "job.js", "results.js", "batch.js", "i18n.js", "api.js",
                     "app.css", "icon.svg"):
            assert client.get(f"/static/{name}").status_code == 200, name
        assert client.get("/static/../kernelgen/settings.py").status_code == 404
        assert client.get("/static/missing.js").status_code == 404
