"""Fixtures of the browser tests: a live server, Debian's chromium driven by Playwright, console errors collected."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from kernelgen.settings import Settings
from tests.server.live import LiveServer, database, serve

playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("KERNELGEN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
# Screenshots go to docs/web/ when asked (KERNELGEN_SCREENSHOTS=docs/web), else next to the test's files.
SCREENSHOTS = os.environ.get("KERNELGEN_SCREENSHOTS")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Start Debian's chromium once for the browser tests (no browser download: .ci/run installs it with apt)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """Start servers (SQLite, offline generator, jobs on the CPU interpreter) with settings overrides."""
    with ExitStack() as stack:

        def start(**overrides: Any) -> LiveServer:
            url = stack.enter_context(database("sqlite", tmp_path))
            settings = Settings(  # type: ignore[call-arg]
                _env_file=None, database_url=url, work_dir=tmp_path / "work", artifact_root=tmp_path / "jobs",
                **overrides,
            )
            return stack.enter_context(serve(settings))

        yield start


class Browsing:
    """A page of the browser with what the tests check afterwards: console errors, dialogs, screenshots."""

    def __init__(self, page: Any, shots: Path) -> None:
        self.page = page
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.expected: list[re.Pattern[str]] = []  # console errors a test causes on purpose (a refused request)
        self.shots = shots
        page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def expect_console_error(self, pattern: str) -> None:
        """Allow console errors matching `pattern` (Chromium logs every refused request: "status of 429")."""
        self.expected.append(re.compile(pattern))

    def unexpected(self) -> list[str]:
        """Return the console errors and dialogs no test asked for."""
        errors = [e for e in self.errors if not any(p.search(e) for p in self.expected)]
        return errors + [f"dialog: {d}" for d in self.dialogs]

    def shot(self, name: str, view: bool = False) -> None:
        """Save a screenshot of the whole page, or (view) of what the window shows, the sticky message box in place."""
        self.shots.mkdir(parents=True, exist_ok=True)
        if view:
            self.page.screenshot(path=str(self.shots / f"{name}.png"))
            return
        self.page.evaluate("document.body.classList.add('capture')")  # sticky parts in place, not mid-page
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)
        self.page.evaluate("document.body.classList.remove('capture')")


@pytest.fixture
def open_page(browser: Any, tmp_path: Path) -> Iterator[Callable[..., Browsing]]:
    """Open pages (each in its own context); at the end, no page may have logged an error or opened a dialog."""
    opened: list[tuple[Any, Browsing]] = []
    shots = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path / "screenshots"

    def start(url: str, width: int = 1280, height: int = 900) -> Browsing:
        context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
        page = context.new_page()
        browsing = Browsing(page, shots)
        opened.append((context, browsing))
        page.goto(url)
        return browsing

    yield start
    problems = [problem for _, b in opened for problem in b.unexpected()]
    for context, _ in opened:
        context.close()
    assert not problems, problems
