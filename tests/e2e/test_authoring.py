"""An instructor's new lesson, made by following docs/AUTHORING.md, in a real browser: widgets draw,
the quiz gives feedback and counts in the downloadable progress, presenter and print views work."""

from __future__ import annotations

import shutil

from core.lessons import ROOT
from tests.e2e.conftest import (
    free_port,
    open_app,
    real_console_errors,
    screenshot,
    start_server,
    stop_server,
    wait_healthy,
    wait_idle,
)
from tests.test_authoring import DOCS, follow


def test_authored_lesson_in_the_browser(tmp_path, page):
    lessons = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    follow(DOCS[0], lessons)
    port = free_port()
    proc = start_server(port, env={"ATTENTION_LAB_LESSONS": str(lessons)})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        open_app(page, f"{url}/attention-recap?lang=en", timeout=180_000)
        main = page.locator('[data-testid="stMain"]')
        assert main.locator("h1").first.inner_text() == "Attention, recapped"
        assert main.locator('[data-testid="stPlotlyChart"] .main-svg').count() >= 3
        assert page.locator('[data-testid="stSidebarNav"] a', has_text="Attention, recapped").count() == 1
        # the quiz: a wrong answer, then the right one, with the explanation
        main.locator("label", has_text="only the [CLS] token").click()
        main.get_by_role("button", name="Check").click()
        wait_idle(page)
        assert "Not quite" in main.inner_text()
        main.locator("label", has_text="every token of the sentence, itself included").click()
        main.get_by_role("button", name="Check").click()
        wait_idle(page)
        text = main.inner_text()
        assert "Right." in text and "Self-attention scores every pair of tokens" in text
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
        assert "0 of 1 quiz answers right" in sidebar  # the first answer was wrong: it counts
        with page.expect_download() as dl:
            page.locator('[data-testid="stSidebar"] [data-testid="stDownloadButton"] button').click()
        saved = dl.value.path().read_text(encoding="utf-8")
        assert '"attention-recap"' in saved and '"correct": false' in saved
        screenshot(page, "authored-lesson-en")
        # presenter mode steps through the new lesson too; the Chinese text is there
        open_app(page, f"{url}/attention-recap?lang=zh-TW&present=1", timeout=180_000)
        assert main.locator("h2").count() == 0
        page.locator('[data-testid="stSidebar"] button', has_text="下一步").click()
        wait_idle(page)
        assert main.locator("h2").first.inner_text().startswith("Bahdanau 注意力")
        # the printable view: every step, no sidebar, static figures
        open_app(page, f"{url}/attention-recap?lang=en&print=1", timeout=180_000)
        assert main.locator("h2").count() == 3
        assert not page.locator('[data-testid="stSidebar"]').is_visible()
        screenshot(page, "authored-lesson-print")
        assert real_console_errors(page) == []
    finally:
        stop_server(proc)
