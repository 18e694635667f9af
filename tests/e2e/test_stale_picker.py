"""A picker whose options come from the input is rebuilt with it: after the date changes, lesson
3's step picker shows a step of the NEW output, the one the figures use."""

from __future__ import annotations

from tests.e2e.conftest import open_app, real_console_errors, wait_idle


def test_step_picker_follows_a_new_input(server, page):
    open_app(page, f"{server}/bahdanau?lang=en")
    thumb = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]').first
    thumb.focus()
    page.keyboard.press("End")  # the last step of "2 December 2026" → "2026-12-02"
    wait_idle(page)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stCode]')].some(c => c.innerText.includes('y_11 = </s>'))",
        timeout=30_000,
    )
    box = page.get_by_role("textbox", name="A date to normalise (English or Chinese spelling)")
    box.fill("二〇二六年十二月二日")
    box.press("Enter")
    wait_idle(page)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stCode]')].some(c => c.innerText.startsWith('y_1 = '))",
        timeout=30_000,
    )
    label = page.locator('[data-testid="stMain"] [data-testid="stSliderThumbValue"]').first.inner_text()
    assert label.startswith("step 1: ")  # the picker and the figures agree on the step
    assert real_console_errors(page) == []
