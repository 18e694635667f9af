"""Lessons 2-3 in a real browser: figures render, typing changes them, bad input is refused,
live training can be cancelled."""

from __future__ import annotations

from tests.e2e.conftest import open_app, real_console_errors, screenshot, wait_idle


def plots(page):
    return page.locator('[data-testid="stMain"] .js-plotly-plot')


def type_into(page, label: str, text: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(text)
    box.press("Enter")
    page.wait_for_timeout(300)
    wait_idle(page)


def test_seq2seq_page_draws_c_and_the_curves_and_refuses_bad_input(server, page):
    open_app(page, f"{server}/seq2seq?lang=en", timeout=120_000)
    page.get_by_text("c: 128 numbers for an input of 9 characters").wait_for(timeout=30_000)
    assert plots(page).count() >= 6
    # the curve's legend names both models
    assert page.locator(".legendtext", has_text="Bahdanau attention").count() >= 1
    label = "Input for the copy task (lowercase letters a–z, up to 40)"
    type_into(page, label, "<img src=x onerror=alert(1)>")
    page.get_by_text("not in this model's vocabulary").wait_for(timeout=20_000)
    assert page.locator('[data-testid="stMain"] img[src="x"]').count() == 0
    type_into(page, label, "thequickbrownfox")
    page.get_by_text("c: 128 numbers for an input of 16 characters").wait_for(timeout=20_000)
    screenshot(page, "seq2seq-en")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert real_console_errors(page) == []


def test_bahdanau_page_new_input_new_heatmap(server, page):
    open_app(page, f"{server}/bahdanau?lang=zh-TW", timeout=120_000)
    page.locator('[data-testid="stMain"] .heatmaplayer').first.wait_for(timeout=30_000)
    type_into(page, "要轉成標準格式的日期（英文或中文寫法）", "July 20, 1969")
    page.locator('[data-testid="stCode"]', has_text="1969-07-20").first.wait_for(timeout=20_000)
    # the alignment heatmap's x ticks are now the new input's characters
    page.locator(".xtick text", has_text="J").first.wait_for(timeout=20_000)
    screenshot(page, "bahdanau-zh-TW")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert real_console_errors(page) == []


def test_live_training_can_be_cancelled(server, page):
    open_app(page, f"{server}/bahdanau?lang=en", timeout=120_000)
    page.get_by_role("button", name="Train").click()
    page.get_by_text("validation exact match").first.wait_for(timeout=60_000)
    screenshot(page, "bahdanau-live-training")
    page.get_by_role("button", name="Cancel").click()
    page.get_by_text("Training was cancelled").wait_for(timeout=30_000)
    wait_idle(page)
    assert page.get_by_role("button", name="Train").is_enabled()
    assert page.locator('[data-testid="stException"]').count() == 0
    assert real_console_errors(page) == []


def test_live_training_finishes_and_shows_the_new_model(server, page):
    open_app(page, f"{server}/seq2seq?lang=en", timeout=120_000)
    steps = page.get_by_label("Training steps (at most 45 s)")
    steps.fill("30")
    steps.press("Enter")
    page.wait_for_timeout(300)
    wait_idle(page)
    page.get_by_role("button", name="Train").click()
    page.get_by_text("Measured on 200 held-out examples").wait_for(timeout=90_000)
    wait_idle(page)
    assert page.get_by_text("Done: 30 steps").count() == 1
    assert page.get_by_role("button", name="Train").is_enabled()
    assert not page.get_by_role("button", name="Cancel").is_enabled()
    assert page.locator('[data-testid="stException"]').count() == 0
    assert real_console_errors(page) == []
