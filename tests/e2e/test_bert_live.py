"""Lesson 7's "watch BERT learn" in a real browser: start, progress visible, stop, and two pages training
at once, both finishing (each session's run is its own background thread, polled by a fragment)."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import _block_remote, open_app, real_console_errors, screenshot, wait_idle

LONG = 600_000  # ms: a first visit loads the model and fits the sentiment head; two runs share 2 cores


def _main(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def _steps(page, presses_right: int) -> None:
    """Set the "Training steps" slider with the keyboard: Home = 10, each → adds 10."""
    thumb = page.get_by_role("slider", name=re.compile("Training steps|訓練步數"))
    thumb.scroll_into_view_if_needed()
    thumb.focus()
    thumb.press("Home")
    for _ in range(presses_right):
        thumb.press("ArrowRight")
    page.wait_for_timeout(800)  # the slider sends its value on release; the script reruns


def _start(page) -> None:
    button = page.get_by_role("button", name=re.compile("^(Start pre-training|開始預訓練)$"))
    button.scroll_into_view_if_needed()
    button.click()


def _second_page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    context.route("**/*", _block_remote)
    pg = context.new_page()
    pg.console_errors, pg.blocked, pg.bad_responses = [], [], []
    pg.on("response", lambda r: pg.bad_responses.append(r.url) if r.status >= 400 else None)
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.console_errors.append(f"pageerror: {e}"))
    return context, pg


@pytest.mark.slow
def test_two_pages_train_at_once_and_both_finish(server, browser, page):
    other_ctx, other = _second_page(browser)
    try:
        open_app(page, f"{server}/bert-outputs?lang=en", timeout=LONG)
        open_app(other, f"{server}/bert-outputs?lang=zh-TW", timeout=LONG)
        assert "Watch BERT learn" in _main(page) and "看 BERT 學習" in _main(other)
        _steps(page, 1)  # 20 steps
        _steps(other, 1)
        _start(page)
        _start(other)
        # progress is visible while the run goes on, and moves
        page.get_by_text(re.compile(r"Step \d+ of 20")).first.wait_for(timeout=LONG)
        other.get_by_text(re.compile(r"第 \d+ 步，共 20 步")).first.wait_for(timeout=LONG)
        page.get_by_text("Done: 20 steps").wait_for(timeout=LONG)
        other.get_by_text("完成：20 步").wait_for(timeout=LONG)
        for pg in (page, other):
            wait_idle(pg, LONG)  # the run's last full rerun
            pg.locator('[data-testid="stVegaLiteChart"]').first.wait_for(timeout=60_000)  # the two losses
            assert re.search(r"(MLM loss|MLM 損失) \d+\.\d\d", _main(pg))  # the caption under them
        screenshot(page, "bert-live-en-done")
        screenshot(other, "bert-live-zh-TW-done")
        assert real_console_errors(page) == [] and real_console_errors(other) == []
    finally:
        other_ctx.close()


@pytest.mark.slow
def test_stop_cancels_a_run(server, page):
    open_app(page, f"{server}/bert-outputs?lang=en", timeout=LONG)
    _steps(page, 11)  # 120 steps: long enough to stop in the middle
    _start(page)
    page.get_by_text(re.compile(r"Step [1-9]\d* of 120")).first.wait_for(timeout=LONG)
    stop = page.locator('[data-testid="stMain"]').get_by_role("button", name="Stop", exact=True)  # not the header's
    stop.click()
    page.get_by_text(re.compile(r"Stopped after step \d+ of 120")).wait_for(timeout=LONG)
    step = int(re.search(r"Stopped after step (\d+) of 120", _main(page)).group(1))
    assert 1 <= step < 120
    assert page.locator('[data-testid="stMain"]').get_by_role("button", name="Start pre-training").is_enabled()
    screenshot(page, "bert-live-en-stopped")
    assert real_console_errors(page) == []
