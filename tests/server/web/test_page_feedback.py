"""What the chat page says while it waits and when it is refused, each checked in the browser on a real server.

The newest message lands above the sticky message box (1280 and 390 px); a message is echoed at once with a
reading indicator until its reading arrives; a busy service (429) says when to retry and keeps the message; a
revoked token's job stream says access was revoked instead of reconnecting for ever.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from agent.runtime.admission import SLOTS
from storage import crud, threads
from storage.db import make_engine
from storage.models import ChatMessage
from storage.users import add_user, revoke_user
from tests.server.live import RELU
from tests.server.test_admission import slow_spec
from tests.server.web.conftest import Browsing
from tests.server.web.test_chat_page import send

CODE_SPEC = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''
READ_S = 120_000  # ms: a code spec is traced in the sandbox, on two shared cores
# Where a node is: inside the window and above the sticky message box, and the topmost thing at its centre.
IN_VIEW = """(node) => {
  const box = node.getBoundingClientRect();
  const composer = document.getElementById("composer").getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return { top: box.top, bottom: box.bottom, composerTop: composer.top, height: innerHeight,
           onTop: node === hit || node.contains(hit) };
}"""


def assert_in_view(locator: Any, whole: bool = True) -> None:
    """The element is not under the message box: its bottom above the box (and its top in the window), on top."""
    where = locator.evaluate(IN_VIEW)
    assert where["onTop"], where
    assert where["bottom"] <= where["composerTop"] + 1, where
    if whole:
        assert where["top"] >= 0, where


def long_thread(server: Any, count: int = 8) -> int:
    """A thread whose earlier messages fill more than a window, so that the newest one has to be scrolled to."""
    engine = make_engine(server.settings.database_url)
    with server.client() as client:
        thread: int = client.post("/threads").json()["id"]
    for index in range(count):
        threads.add_message(engine, thread, ChatMessage(
            thread_id=thread, role="user", text=f"earlier message {index}\n" + "a line of an earlier spec\n" * 6))
    engine.dispose()
    return thread


@pytest.mark.parametrize("width", [1280, 390])
def test_a_message_is_echoed_at_once_with_a_reading_indicator_and_its_reply_lands_in_view(
        width: int, web_server: Any, open_page: Any) -> None:
    """Issue 53, items 2 and 3: the echo and "reading" at once, then the reply (and its Start) above the message box."""
    server = web_server(sandbox_allow_unisolated=True)  # code specs are traced where bubblewrap cannot start too
    thread = long_thread(server)
    browsing: Browsing = open_page(f"{server.url}/#thread={thread}", width=width, height=844 if width < 500 else 900)
    page = browsing.page
    page.locator(".msg.user").nth(7).wait_for()
    # A short question card after a long thread: it used to be hidden completely under the box.
    send(page, "ReLU on x")
    question = page.locator(".msg.question").last
    question.wait_for()
    assert_in_view(question)
    # A code spec takes seconds to read: the message and the indicator show before the reply comes.
    send(page, CODE_SPEC)
    echo = page.locator(".msg.user.pending")
    indicator = page.locator(".msg.reading-pending")
    indicator.wait_for(timeout=2_000)
    assert page.locator(".msg.reading").count() == 0  # still reading: what shows is the page's own feedback
    assert "class Model(nn.Module)" in echo.inner_text()
    assert "Reading your message" in indicator.inner_text()
    assert page.locator("#composer-text").input_value() == ""
    assert_in_view(indicator)
    browsing.shot(f"17-reading-indicator-{width}", view=True)
    reading = page.locator(".msg.reading").last
    reading.wait_for(timeout=READ_S)
    assert indicator.count() == 0 and echo.count() == 0  # replaced by what the service recorded
    assert "class Model(nn.Module)" in page.locator(".msg.user").last.inner_text()
    assert_in_view(reading.locator("button.start"))  # the Start button is not under the box
    room = page.evaluate("innerHeight - document.getElementById('composer').offsetHeight")
    assert_in_view(reading, whole=reading.bounding_box()["height"] <= room - 16)
    browsing.shot(f"18-reading-in-view-{width}", view=True)
    reading.locator("button.start").click()  # the job's card opens with its head in view
    card = page.locator(".msg.job").last
    card.wait_for()
    assert card.evaluate("(node) => node.getBoundingClientRect().top") >= 0
    assert card.evaluate(IN_VIEW)["onTop"]


def test_a_message_sent_while_the_page_loads_keeps_its_reply(web_server: Any, open_page: Any) -> None:
    """A message sent before the page finished loading is answered on the page; the loading does not wipe it.

    CI's loaded cores made the page's first requests slow: the load then opened the thread the message had just
    made, drew it empty, and the reading that came back had nowhere to go. Held requests replay that order.
    """
    server = web_server()
    browsing: Browsing = open_page(server.url)
    page = browsing.page
    loading: list[Any] = []
    sending: list[Any] = []
    def hold_load(route: Any) -> None:
        loading.append(route)  # the page's load waits here

    def hold_message(route: Any) -> None:
        sending.append(route)  # the message waits until the load has gone on

    page.route("**/healthz", hold_load)
    page.route("**/threads/*/messages", hold_message)
    page.reload(wait_until="domcontentloaded")
    send(page, RELU)
    for _ in range(200):
        if sending:
            break
        page.wait_for_timeout(50)
    assert sending, "the message was not sent"
    with page.expect_response(lambda r: r.url.endswith("/threads") and r.request.method == "GET"):
        loading[0].continue_()  # the load goes on: the thread list
    page.wait_for_timeout(1_000)  # what the load does after the list (it opened the message's thread here)
    sending[0].continue_()
    page.locator(".msg.reading").last.wait_for(timeout=READ_S)
    assert page.locator(".msg.user").count() == 1


def test_a_busy_service_says_when_to_retry_and_keeps_the_message(web_server: Any, open_page: Any) -> None:
    """Issue 49: with every sandbox slot held, a message is answered 429; the page says so (English and Chinese),
    with Retry-After's seconds, keeps the message, and sends it once there is room."""
    server = web_server(max_sandboxes=1, max_sandboxes_per_principal=1, sandbox_allow_unisolated=True)
    try:
        browsing: Browsing = open_page(server.url)
        browsing.expect_console_error(r"status of 429")  # Chromium logs the refused request
        page = browsing.page
        # Another read holds the only slot: a code spec whose module sleeps while it is traced.
        def hold() -> None:
            with server.client(timeout=300) as client:
                client.post("/read", json={"spec": slow_spec(6, 0)})

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        deadline = time.monotonic() + 30
        while SLOTS.busy < 1:
            assert time.monotonic() < deadline, "the slow read never took its slot"
            time.sleep(0.05)
        with page.expect_response(lambda r: r.url.endswith("/messages")) as answer:
            send(page, RELU)
        assert answer.value.status == 429
        retry_after = int(answer.value.headers["retry-after"])
        error = page.locator('#composer-error[data-status="429"]')
        error.wait_for()
        said = error.inner_text()
        assert "busy" in said and "not sent" in said and (f"in {retry_after} s" in said or "now" in said), said
        assert page.locator("#composer-text").input_value() == RELU  # the message is kept, not lost
        assert page.locator(".msg.user").count() == 0 and page.locator(".msg.reading-pending").count() == 0
        browsing.shot("19-busy-en", view=True)
        page.locator("#lang-toggle").click()
        said = error.inner_text()
        assert "服务繁忙" in said and "重新发送" in said, said
        browsing.shot("19-busy-zh", view=True)
        holder.join(timeout=240)
        assert not holder.is_alive()
        error.locator("button.retry").click()  # sent again as it was
        page.locator(".msg.reading").last.wait_for(timeout=READ_S)
        assert page.locator(".msg.user").count() == 1
        assert page.locator(".msg.user").inner_text().endswith(RELU)
        assert page.locator("#composer-error").is_hidden()
    finally:
        SLOTS.configure()  # the process's defaults again, for the tests that run sandboxes without a service


SECRET = "a stage message the revoked token must not see"


def test_a_revoked_token_s_job_stream_says_access_was_revoked(web_server: Any, open_page: Any) -> None:
    """Issue 49: carol follows her running job; her token is revoked; the card says so once, offers to sign in
    again, and does not reconnect (it used to spin on "Connection lost; resuming…")."""
    server = web_server(api_tokens=["ops:ops-token"])  # token mode whoever is in the users table
    engine = make_engine(server.settings.database_url)
    token = add_user(engine, "carol")  # what `kernelgen users add carol` does
    with server.client(token=token) as client:
        thread = client.post("/threads").json()["id"]
    job = crud.create_job(engine, RELU, "", status="running", owner="carol")
    crud.add_event(engine, job, "queued", "job queued")
    threads.add_message(engine, thread, ChatMessage(
        thread_id=thread, role="assistant", kind="job", text=f"job {job}", spec_text=RELU, job_id=job,
        data_json=json.dumps({"reading": None, "options": {}})))
    browsing: Browsing = open_page(f"{server.url}/#thread={thread}")
    page = browsing.page
    streams: list[str] = []
    page.on("request", lambda r: streams.append(r.url) if r.url.endswith("/events") else None)
    page.locator("#token-input").fill(token)
    page.locator("#token-dialog button[value=save]").click()
    card = page.locator(f'.msg.job[data-job="{job}"]')
    card.locator('.timeline li[data-stage="queued"]').wait_for()
    revoke_user(engine, "carol")  # what `kernelgen users revoke carol` does
    crud.add_event(engine, job, "accuracy", SECRET)
    page.locator(f'.msg.job[data-job="{job}"][data-access="revoked"]').wait_for(timeout=15_000)
    notice = card.locator(".notice").inner_text()
    assert "Access was revoked" in notice and "Sign in again" in notice, notice
    time.sleep(2.5)  # long enough for two reconnections, had there been any
    assert len(streams) == 1, streams
    assert SECRET not in page.locator("body").inner_text() and "resuming" not in card.inner_text()
    assert card.locator(".timeline li").count() == 1
    browsing.shot("20-revoked-en", view=True)
    dialog = page.locator("#token-dialog")
    card.locator("button.sign-in").click()  # asks for a token again
    assert dialog.evaluate("(dialog) => dialog.open")
    page.locator("#token-dialog button[value=cancel]").click()
    # In Chinese: the card's notice, and the next request of the page (its threads, relabelled) refused for the token.
    browsing.expect_console_error(r"status of 401")
    page.locator("#lang-toggle").click()
    assert "访问已被撤销" in card.locator(".notice").inner_text()
    page.locator("#composer-error", has_text="令牌被拒绝").wait_for()
    assert dialog.evaluate("(dialog) => dialog.open")
    engine.dispose()


# The words of the Chinese page that may be ASCII: names of products and formats, dtypes, units, keys, tensor names.
ALLOWED = {"KernelGen", "PyTorch", "Triton", "CPU", "GPU", "CUDA", "NPU", "NVIDIA", "API", "FLOP", "TFLOP", "GB",
           "ms", "eager", "torch", "compile", "zip", "md", "py", "txt", "Enter", "Shift", "float16", "float32",
           "float64", "bfloat16", "fp16", "fp32", "bf16", "int32", "int64", "bool", "out", "bias", "weight"}
# Every ASCII word of the page's own words on screen (text, accessible names, placeholders), leaving out what the
# person wrote, code and files, names (translate="no"), the service's own messages (data-source="service": stage
# events, the reader's notes and questions, verdicts, the documents) and the language switch (lang="en").
ENGLISH_WORDS = """(allowed) => {
  const skip = '.msg.user, pre, code, textarea, title, [translate="no"], [data-source="service"], body [lang="en"]';
  const shown = (node) => node.checkVisibility({ visibilityProperty: true }) && !node.closest(skip);
  const found = [];
  const words = (text, where) => {
    for (const [word] of String(text || "").matchAll(/[A-Za-z][A-Za-z0-9]+/g)) {
      if (!allowed.includes(word) && !/^[A-Z]?\\d/.test(word)) found.push(`${word} (${where})`);
    }
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent && shown(parent)) words(node.data, parent.className || parent.tagName);
  }
  // A delete button's name quotes its thread's title: what the person wrote, not a word of the page.
  const titles = [...document.querySelectorAll(".thread-title[translate='no']")].map((node) => node.textContent);
  for (const node of document.querySelectorAll("[aria-label], [placeholder]")) {
    if (!shown(node)) continue;
    let label = `${node.getAttribute("aria-label") || ""} ${node.getAttribute("placeholder") || ""}`;
    for (const title of titles) label = label.replace(title, "");
    words(label, `${node.tagName} label`);
  }
  return found;
}"""
CHINESE_SPEC = "对形状为 [64, 64] 的 float16 张量 x 做 ReLU"


def english_words(page: Any) -> list[str]:
    """Return the ASCII words of the Chinese page's own words on screen (empty when it is all Chinese)."""
    return list(page.evaluate(ENGLISH_WORDS, sorted(ALLOWED)))


@pytest.mark.parametrize("width", [1280, 390])
def test_the_chinese_page_is_chinese_throughout(width: int, web_server: Any, open_page: Any) -> None:
    """Issue 53, item 12: on the Chinese page every word of the page's own is Chinese: the empty page, a question, a
    reading, a task book, a batch and its task's job, a job's rounds, charts and files; switched in place and
    after a reload."""
    from tests.server.web.test_chat_page import BOOK
    from tests.server.web.test_page_items import stored_thread

    server = web_server()
    stored, jobs = stored_thread(server)
    browsing: Browsing = open_page(server.url, width=width, height=844 if width < 500 else 900)
    page = browsing.page
    page.locator("#lang-toggle").click()
    assert english_words(page) == []  # the empty page
    send(page, BOOK)  # a task book (its third task is a question), then a question, then its answer
    page.locator(".msg.tasks").last.wait_for()
    send(page, "对 x 做 ReLU")
    page.locator(".msg.question").last.wait_for()
    send(page, CHINESE_SPEC)
    page.locator(".msg.reading").last.wait_for()
    assert english_words(page) == []
    fresh = page.url
    page.goto(f"{server.url}/#thread={stored}")  # the stored batch and the H200 job
    page.locator(f'.msg.job[data-job="{jobs["gpu"]}"] .results .charts').wait_for()
    page.locator('.msg.batch[data-status="done"] .results .markdown').wait_for()
    page.locator(f'button.open-job[data-job="{jobs["relu"]}"]').click()
    page.locator(f'.batch-jobs .msg.job[data-job="{jobs["relu"]}"] .results .tabs').wait_for()
    assert english_words(page) == []
    browsing.shot(f"21-chinese-{width}")
    page.locator("#lang-toggle").click()  # in English, then in Chinese again in place: relabelled, charts redrawn
    assert "Speedup per round" in page.locator(".charts").first.inner_text()
    assert len(english_words(page)) > 100  # the check sees the page's words: in English, it finds them
    page.locator("#lang-toggle").click()
    assert "各轮加速比" in page.locator(".charts").first.inner_text()
    assert english_words(page) == []
    page.goto(fresh)  # drawn in Chinese from the start (the language is remembered)
    page.reload()
    page.locator(".msg.reading").last.wait_for()
    assert page.locator("#send").inner_text() == "发送"
    assert english_words(page) == []
