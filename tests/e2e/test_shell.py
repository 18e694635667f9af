"""The app shell in a real browser: every lesson, both languages, presenter mode, broken lessons."""

from __future__ import annotations

import shutil

import pytest

from core.lessons import LANGS, ROOT, load_catalog
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

CATALOG = load_catalog()


def h1(page) -> str:
    return page.locator('[data-testid="stMain"] h1').first.inner_text().strip()


@pytest.mark.parametrize("lang", LANGS)
def test_every_lesson_opens_in_both_languages(server, page, lang):
    for lesson in CATALOG.lessons:
        open_app(page, f"{server}/{lesson.id}?lang={lang}" if lesson.order else f"{server}/?lang={lang}")
        assert h1(page) == lesson.title(lang)
        assert page.locator('[data-testid="stException"]').count() == 0, lesson.id
        screenshot(page, f"lesson-{lesson.order:02d}-{lesson.id}-{lang}")
    assert real_console_errors(page) == []


def test_sidebar_navigation_language_switch_and_presenter_mode(server, page):
    open_app(page, f"{server}/?lang=en")
    assert h1(page) == "Home: the course map"
    # navigate with the sidebar, as a student would
    page.locator('[data-testid="stSidebarNav"] a', has_text="The four families of NLP tasks").click()
    wait_idle(page)
    assert h1(page) == "The four families of NLP tasks"
    # switch to Chinese: same lesson, Chinese title, and the URL says so
    page.locator('[data-testid="stSidebar"] label', has_text="中文").click()
    page.wait_for_function("() => document.querySelector('[data-testid=stMain] h1')?.innerText.includes('NLP 任務')")
    assert "/nlp-tasks" in page.url and "lang=zh-TW" in page.url
    # presenter mode: one step at a time, large type, Next reveals the next section
    page.locator('[data-testid="stSidebar"] [data-testid="stWidgetLabel"]', has_text="簡報模式").click()
    wait_idle(page)
    assert page.locator('[data-testid="stMain"] h2').count() == 0
    font = page.evaluate(
        "getComputedStyle(document.querySelector('[data-testid=stMain] [data-testid=stMarkdownContainer] p')).fontSize"
    )
    assert float(font.rstrip("px")) >= 24
    page.locator('[data-testid="stMain"] button', has_text="下一步").click()
    wait_idle(page)
    page.wait_for_function("() => document.querySelectorAll('[data-testid=stMain] h2').length === 1")
    assert "step=2" in page.url and "present=1" in page.url
    screenshot(page, "presenter-nlp-tasks-step1-zh")
    assert real_console_errors(page) == []


def test_deep_link_to_a_presenter_step(server, page):
    open_app(page, f"{server}/nlp-tasks?lang=en&present=1&step=3")
    page.wait_for_function("() => document.querySelectorAll('[data-testid=stMain] h2').length === 2")
    assert page.locator('[data-testid="stMain"] h2').nth(1).inner_text().startswith("Family two")
    assert real_console_errors(page) == []


def test_broken_lessons_show_an_error_card_and_the_rest_works(tmp_path, page):
    lessons = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    (lessons / "01-nlp-tasks" / "lesson.toml").write_text('id = "nlp-tasks"\norder = = 1\n', encoding="utf-8")
    toml = lessons / "02-seq2seq" / "lesson.toml"
    text = toml.read_text(encoding="utf-8")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("page ="))
    toml.write_text(text.replace("[title]", 'page = "pages/deleted_script.py"\n\n[title]'), encoding="utf-8")
    port = free_port()
    proc = start_server(port, env={"ATTENTION_LAB_LESSONS": str(lessons)})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        open_app(page, f"{url}/nlp-tasks?lang=en")
        card = page.locator('[data-testid="stAlertContentError"]').first
        assert "could not be shown" in card.inner_text()
        page.get_by_text("lesson.toml does not parse").wait_for(timeout=10_000)
        screenshot(page, "broken-lesson-card")
        open_app(page, f"{url}/seq2seq?lang=en")
        page.get_by_text("page script pages/deleted_script.py does not exist").wait_for(timeout=10_000)
        open_app(page, f"{url}/bahdanau?lang=en")  # the rest keeps working
        assert h1(page) == CATALOG.get("bahdanau").title("en")
        assert page.locator('[data-testid="stAlertContentError"]').count() == 0
        # a deep link as the very first request of a fresh server works (no "page not found")
        assert real_console_errors(page) == []
    finally:
        stop_server(proc)
