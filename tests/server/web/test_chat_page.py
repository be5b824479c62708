"""The chat page in a real browser: read, start, watch, verify, keep the files; questions, follow-ups, cancel."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

from storage import threads
from storage.db import make_engine
from storage.models import ChatMessage
from tests.server.gpu_job import store_gpu_job
from tests.server.live import RELU, SLOW
from tests.server.web.conftest import Browsing

DATA = Path(__file__).parent / "data"
JOB_S = 180_000  # ms: a job on the CPU interpreter, with CI's two cores shared
BAD_SPEC = "sigmoid of x <script>alert(1)</script>, x [32, 32] float32"
IMG_SPEC = "ReLU on a float32 tensor x of shape [64, 64]. Note: <img src=x onerror=alert(document.cookie)>"


def send(page: Any, text: str) -> None:
    """Type a message and press Enter, as a person does."""
    box = page.locator("#composer-text")
    box.fill(text)
    box.press("Enter")


def start_last_reading(page: Any) -> Any:
    """Press Start on the newest reading and return the job card that appears."""
    before = page.locator(".msg.job").count()
    page.locator(".msg.reading").last.locator("button.start").click()
    page.locator(".msg.job").nth(before).wait_for()
    return page.locator(".msg.job").nth(before)


def wait_status(card: Any, status: str, timeout: int = JOB_S) -> None:
    """Wait until a job card's badge says the status."""
    card.locator(f'.badge[data-status="{status}"]').wait_for(timeout=timeout)


def test_english_spec_reads_runs_live_and_keeps_the_four_files(web_server: Any, open_page: Any) -> None:
    """An English spec: the reading first, then Start, stage events live, verified, each file, the zip."""
    server = web_server()
    browsing: Browsing = open_page(server.url)
    page = browsing.page
    browsing.shot("01-empty")
    send(page, RELU)
    reading = page.locator(".msg.reading").last
    reading.wait_for()
    assert "torch.relu(x)" in reading.locator(".pytorch").inner_text()
    assert "float32" in reading.locator("table.inputs").inner_text()
    browsing.shot("02-reading-en")
    card = start_last_reading(page)
    card.locator(".timeline li").nth(2).wait_for(timeout=JOB_S)  # three stage events arrived on the stream
    stages = card.locator(".timeline li").evaluate_all("items => items.map(i => i.dataset.stage)")
    assert stages[0] == "queued" and "requirements" in stages
    browsing.shot("03-running")
    wait_status(card, "verified")
    card.locator(".results .tabs").wait_for()
    browsing.shot("04-verified")
    for suffix in ("_triton.py", "_baseline.py", "_accuracy.py", "_performance.py"):
        tab = card.locator('[role="tab"]', has_text=suffix)
        tab.click()
        code = card.locator(".tab-panel pre.file")
        code.wait_for()
        text = code.inner_text()
        assert "def relu" in text or "relu" in text, suffix
        assert "import torch" in text, suffix
    assert card.locator(".tab-panel .kg-kw").count() > 0  # highlighted
    browsing.shot("05-file")
    with page.expect_download() as one_file:
        card.locator(".tab-panel button.download").click()
    assert one_file.value.suggested_filename == "relu_performance.py"
    with server.client() as client:
        served = client.get(f"/jobs/{card.get_attribute('data-job')}/artifacts/relu_performance.py").text
    assert open(one_file.value.path()).read() == served  # the file as the service keeps it, byte for byte
    card.locator(".tab-panel button.copy").click()
    assert page.evaluate("navigator.clipboard.readText()").startswith(text.splitlines()[0])
    with page.expect_download() as download_info:
        card.locator("button.zip").click()
    data = open(download_info.value.path(), "rb").read()
    names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    assert {"relu_triton.py", "relu_baseline.py", "relu_accuracy.py", "relu_performance.py", "definition.md",
            "optimization_log.md", "report.json"} <= names
    card.locator('[role="tab"]', has_text="Definition").click()
    card.locator(".tab-panel .markdown table").first.wait_for()  # the document's tables rendered


def test_chinese_interface_and_spec(web_server: Any, open_page: Any) -> None:
    """Switch to 中文, send a Chinese spec: the labels and the reading are in Chinese."""
    server = web_server()
    browsing = open_page(server.url)
    page = browsing.page
    page.locator("#lang-toggle").click()
    assert page.locator("#send").inner_text() == "发送"
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    send(page, "对形状为 [64, 64] 的 float16 张量 x 做 ReLU")
    reading = page.locator(".msg.reading").last
    reading.wait_for()
    assert reading.locator("h3").inner_text() == "理解为"
    assert "float16" in reading.locator("table.inputs").inner_text()
    browsing.shot("06-reading-zh")
    page.reload()  # the language is remembered
    assert page.locator("#send").inner_text() == "发送"
    page.locator(".msg.reading").last.wait_for()


def test_refused_spec_raises_a_question_and_the_answer_completes_it(web_server: Any, open_page: Any) -> None:
    """A spec without shapes ends as a question; the next message answers it and the reading follows."""
    server = web_server()
    browsing = open_page(server.url)
    page = browsing.page
    send(page, "ReLU on x")
    question = page.locator(".msg.question").last
    question.wait_for()
    assert "shape" in question.inner_text()
    assert page.locator(".msg.job").count() == 0  # nothing ran
    browsing.shot("07-question")
    send(page, "x is [64, 64] float32")
    reading = page.locator(".msg.reading").last
    reading.wait_for()
    assert "torch.relu(x)" in reading.inner_text() and "[64, 64]" in reading.inner_text()


def test_follow_up_changes_the_dtype_and_the_new_job_verifies(web_server: Any, open_page: Any) -> None:
    """After a verified job, 'use float16' derives a new spec, shown first, and its job verifies too."""
    server = web_server()
    browsing = open_page(server.url)
    page = browsing.page
    send(page, RELU)
    page.locator(".msg.reading").last.wait_for()
    first = start_last_reading(page)
    wait_status(first, "verified")
    send(page, "use float16")
    page.locator(".msg.reading").nth(1).wait_for()
    derived = page.locator(".msg.reading").nth(1)
    assert "float16" in derived.locator("table.inputs").inner_text()
    assert "float32" not in derived.locator("table.inputs").inner_text()
    assert derived.locator(".derived").count() == 1  # linked to the job it came from
    browsing.shot("08-follow-up")
    second = start_last_reading(page)
    wait_status(second, "verified")


def test_cancel_a_running_job(web_server: Any, open_page: Any) -> None:
    """Cancel stops a running job and the card says so."""
    server = web_server()
    browsing = open_page(server.url)
    page = browsing.page
    send(page, SLOW)
    page.locator(".msg.reading").last.wait_for()
    card = start_last_reading(page)
    card.locator('.timeline li[data-stage="accuracy"]').first.wait_for(timeout=JOB_S)
    card.locator("button.cancel").click()
    wait_status(card, "cancelled", timeout=60_000)
    browsing.shot("09-cancelled")


def test_reload_mid_job_resumes_the_stream(web_server: Any, open_page: Any) -> None:
    """A reload in the middle of a job shows its events again and follows it to the end."""
    server = web_server()
    browsing = open_page(server.url)
    page = browsing.page
    send(page, SLOW)
    page.locator(".msg.reading").last.wait_for()
    card = start_last_reading(page)
    card.locator('.timeline li[data-stage="generate"]').first.wait_for(timeout=JOB_S)
    page.reload()
    card = page.locator(".msg.job").last
    card.locator('.timeline li[data-stage="generate"]').first.wait_for()
    browsing.shot("10-reloaded")
    wait_status(card, "verified")
    seqs = card.locator(".timeline li").evaluate_all("items => items.map(i => Number(i.dataset.seq))")
    assert seqs == sorted(set(seqs)), seqs  # each event once, in order


def test_markup_in_a_spec_and_in_a_log_renders_as_text(web_server: Any, open_page: Any) -> None:
    """<script> in a spec and <img onerror> in a job's documents show as text; nothing runs."""
    server = web_server()
    browsing = open_page(server.url)
    page = browsing.page
    send(page, BAD_SPEC)
    page.locator(".msg.question").last.wait_for()
    assert "<script>alert(1)</script>" in page.locator(".msg.user").last.inner_text()
    assert page.locator("#messages script").count() == 0
    send(page, IMG_SPEC)  # a new spec in the same thread: read on its own
    page.locator(".msg.reading").last.wait_for()
    assert "<img src=" in page.locator(".msg.reading").last.inner_text()
    card = start_last_reading(page)
    wait_status(card, "verified")
    card.locator('[role="tab"]', has_text="Definition").click()
    card.locator(".tab-panel .markdown").wait_for()
    assert "<img src=" in card.locator(".tab-panel").inner_text()
    assert page.locator("#messages img").count() == 0
    browsing.shot("11-markup-as-text")


def test_narrow_screen_and_keyboard_only(web_server: Any, open_page: Any) -> None:
    """At 390 px nothing overflows sideways, and a spec can be sent and started with the keyboard alone."""
    server = web_server()
    browsing = open_page(server.url, width=390, height=844)
    page = browsing.page
    page.keyboard.press("Tab")  # the skip link first
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "composer-text"
    page.keyboard.type(RELU)
    page.keyboard.press("Enter")
    page.locator(".msg.reading").last.wait_for()
    start = page.locator(".msg.reading").last.locator("button.start")
    start.focus()
    page.keyboard.press("Enter")
    page.locator(".msg.job").last.wait_for()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width
    browsing.shot("12-narrow")


def test_token_is_asked_for_and_never_put_in_a_url(web_server: Any, open_page: Any) -> None:
    """With tokens configured the page asks for one, sends it in a header, and keeps it out of every URL."""
    server = web_server(api_tokens=["alice-token-123"])
    browsing = open_page(server.url)
    page = browsing.page
    urls: list[str] = []
    page.on("request", lambda r: urls.append(r.url))
    dialog = page.locator("#token-dialog")
    dialog.wait_for()
    page.locator("#token-input").fill("alice-token-123")
    page.locator("#token-dialog button[value=save]").click()
    send(page, RELU)
    page.locator(".msg.reading").last.wait_for()
    assert not any("alice-token-123" in url for url in urls + [page.url])


def test_a_job_measured_on_a_gpu_shows_its_rounds_charts_and_diffs(web_server: Any, open_page: Any) -> None:
    """A real H200 job (kept in tests/server/web/data): the rounds table, both charts with points, the diffs."""
    server = web_server()
    engine = make_engine(server.settings.database_url)
    job_id, measured, report = store_gpu_job(engine)
    with server.client() as client:
        thread = client.post("/threads").json()["id"]
    threads.add_message(engine, thread, ChatMessage(
        thread_id=thread, role="assistant", kind="job", text=f"job {job_id}", spec_text=measured["spec"], job_id=job_id,
        data_json=json.dumps({"reading": report["understood"], "options": {"rounds": 3}})))
    browsing = open_page(f"{server.url}/#thread={thread}")
    card = browsing.page.locator(".msg.job").last
    card.locator(".results .tabs").wait_for()
    rows = card.locator("table.rounds tbody tr")
    assert rows.count() == len(report["rounds"])
    best = rows.nth(report["best_round"]).inner_text()
    assert f"{report['rounds'][report['best_round']]['speedup']:.2f}" in best and "1.08" in best  # x eager, x compile
    speed, roof = card.locator(".charts figure").nth(0), card.locator(".charts figure").nth(1)
    assert speed.locator(".kg-pt").count() == 2 * len(report["rounds"])  # eager and torch.compile per round
    assert roof.locator(".kg-pt").count() >= len(report["rounds"])  # each version's measured cases
    assert speed.locator(".kg-kept").count() >= 1
    card.locator('[role="tab"]', has_text="Changes").click()
    assert card.locator(".tab-panel .kg-diff").count() >= 2  # the rounds that changed the kernel
    browsing.shot("13-gpu-results")


BOOK = """# 任务书

## 任务 1：ReLU

- 输入参数：x：torch.Tensor，形状 [64, 64]，数据类型 float32
- 功能描述：out = relu(x)

## 任务 2：Sigmoid

- 输入参数：x：torch.Tensor，形状 [3, 100]，数据类型 float16
- 功能描述：out = sigmoid(x)

## 任务 3：看不懂的

- 做点什么
"""


def test_a_task_book_file_becomes_a_batch_with_a_status_table(web_server: Any, open_page: Any, tmp_path: Path) -> None:
    """A task book dropped in as a file lists its tasks; one click runs the read ones as a batch, with a report."""
    server = web_server()
    browsing = open_page(server.url)
    page = browsing.page
    book = tmp_path / "book.md"
    book.write_text(BOOK)
    page.locator("#composer-file").set_input_files(str(book))
    tasks = page.locator(".msg.tasks").last
    tasks.wait_for()
    assert tasks.locator("tbody tr").count() == 3
    tasks.locator("button.start-batch").click()
    card = page.locator(".msg.batch").last
    card.wait_for()
    page.locator('.msg.batch[data-status="done"]').wait_for(timeout=JOB_S)
    statuses = card.locator("table.batch-tasks tbody tr").evaluate_all("rows => rows.map(r => r.dataset.status)")
    assert statuses == ["verified", "verified"]  # the unread task is not run
    card.locator(".results .markdown table").first.wait_for()
    assert "2 of 2" in card.locator(".results").inner_text()
    browsing.shot("14-batch")
