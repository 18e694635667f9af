"""Presenter mode in a real browser at a projector-ish 1280x720: Next brings the new step into
view, and a clicker's keys (→/PageDown, ←/PageUp) step the lesson, except while typing."""

from __future__ import annotations

import pytest

from core.lessons import load_catalog
from tests.e2e.conftest import open_app, real_console_errors, wait_idle

LESSON = load_catalog().get("bahdanau")
STEPS = LESSON.steps("en")

IN_VIEW_JS = """(id) => {
    const el = document.getElementById(id);
    if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.top < window.innerHeight * 0.5;
}"""


@pytest.fixture
def small(page):
    page.set_viewport_size({"width": 1280, "height": 720})
    return page


def headers(page) -> int:
    return page.locator('[data-testid="stMain"] h2').count()


def wait_step(page, n: int) -> None:
    """Wait until step n (counted from 1) is the last one shown and the address says so."""
    page.wait_for_function(
        f"() => document.querySelectorAll('[data-testid=stMain] h2').length === {n - 1}"
        f" && location.search.includes('step={n}')",
        timeout=60_000,
    )
    wait_idle(page)


def test_next_brings_the_new_step_into_view(server, small):
    page = small
    open_app(page, f"{server}/bahdanau?lang=en&step=2")  # a step link alone opens presenter mode
    assert "present=1" in page.url and headers(page) == 1
    page.locator('[data-testid="stSidebar"] button', has_text="Next step").click()
    wait_step(page, 3)
    anchor = STEPS[2].anchor
    page.wait_for_function(IN_VIEW_JS, arg=anchor, timeout=10_000)  # not appended below the fold
    top = page.evaluate(f"document.getElementById('{anchor}').getBoundingClientRect().top")
    assert 0 <= top < 360
    assert real_console_errors(page) == []


def test_clicker_keys_step_the_lesson_but_not_while_typing(server, small):
    page = small
    open_app(page, f"{server}/bahdanau?lang=en&present=1&step=1")
    page.wait_for_function("() => !!window.__attnlabKeys", timeout=20_000)
    # the sidebar's Next is below the fold at 720 px: the keyboard still reaches it
    page.locator('[data-testid="stMain"] h1').click()
    page.keyboard.press("ArrowRight")
    wait_step(page, 2)
    page.keyboard.press("PageDown")
    wait_step(page, 3)
    page.wait_for_function(IN_VIEW_JS, arg=STEPS[2].anchor, timeout=10_000)
    page.keyboard.press("ArrowLeft")
    wait_step(page, 2)
    page.keyboard.press("PageUp")
    wait_step(page, 1)
    # typing in a text box: arrows move the cursor, the lesson stays where it is
    page.keyboard.press("PageDown")
    wait_step(page, 2)
    box = page.locator('[data-testid="stMain"] input[type="text"]').first
    box.click()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("PageDown")
    page.wait_for_timeout(1500)
    wait_idle(page)
    assert headers(page) == 1 and "step=2" in page.url
    assert real_console_errors(page) == []


def test_presenter_type_is_large_and_metrics_stay_near_their_labels(server, page):
    open_app(page, f"{server}/megatron?lang=en&present=1&step=99")
    size = lambda sel: page.evaluate(  # noqa: E731
        f"parseFloat(getComputedStyle(document.querySelector('[data-testid=stMain] {sel}')).fontSize)"
    )
    body = size("[data-testid=stMarkdownContainer] p")
    assert body >= 24
    assert size("[data-testid=stCaptionContainer]") >= 20
    label, value = size("[data-testid=stMetricLabel] p"), size("[data-testid=stMetricValue]")
    assert value <= 1.5 * label  # a metric's number is not a poster next to its label
    ticks = page.evaluate("""() => Math.max(...[...document.querySelectorAll(
        '[data-testid=stMain] .main-svg .xtick text')].map(t => parseFloat(t.style.fontSize) || 0))""")
    assert ticks >= 15  # figure text grew with the page (Plotly's 12 px x 1.5 = 18)
    open_app(page, f"{server}/megatron?lang=en&present=1&print=1")  # print: never presenter-sized
    assert size("[data-testid=stMarkdownContainer] p") <= 17
