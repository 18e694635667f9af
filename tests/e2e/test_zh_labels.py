"""Every lesson in zh-TW at 1400 px in Chromium: the rendered text has no English word outside the
allow-list of tests/test_zh_labels.py (example inputs on offer excepted), bertviz draws no English
words of its own, and no text inside a Plotly figure is drawn under 11 px."""

from __future__ import annotations

import re

import pytest

from core.figures import MIN_TEXT_PX
from core.lessons import load_catalog
from tests.e2e.conftest import open_app
from tests.test_zh_labels import PROSE_ALLOWED, PROSE_DROP, WORD, _ok

CATALOG = load_catalog()

SMALL_SVG_TEXT_JS = """(min) => [...document.querySelectorAll('[data-testid="stPlotlyChart"] svg text')]
  .filter(e => e.textContent.trim() && e.getClientRects().length
               && getComputedStyle(e).display !== 'none' && getComputedStyle(e).visibility !== 'hidden'
               && parseFloat(getComputedStyle(e).opacity || '1') > 0)
  .map(e => [parseFloat(getComputedStyle(e).fontSize), e.textContent.trim().slice(0, 40)])
  .filter(x => x[0] < min)"""

# The reader's text: the main column and the sidebar, without the figures (their labels are checked
# by the AppTest test from the figure JSON), code blocks, math, icon ligatures and the inputs' own values.
VISIBLE_TEXT_JS = """() => {
  const skip = '[data-testid="stPlotlyChart"], pre, code, .katex, [data-testid="stDataFrame"], iframe, '
             + 'textarea, input, [data-testid="stIconMaterial"], script, style';
  const parts = [];
  for (const root of document.querySelectorAll('[data-testid="stMain"], [data-testid="stSidebar"]')) {
    // text node by text node, so that a label and its value never run together ("p4", "B109")
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const el = n.parentElement;
      if (!el || el.closest(skip)) continue;
      // English set in italics is a cited title or a term quoted as such (the AppTest rule too)
      const em = el.closest('em, i');
      if (em && !/[\u3400-\u9fff]/.test(em.textContent)) continue;
      const box = el.getClientRects();
      if (!box.length || getComputedStyle(el).visibility === 'hidden') continue;
      parts.push(n.textContent);
    }
  }
  return parts.join(' \\n ');
}"""

EXAMPLES_JS = """() => [...document.querySelectorAll('input, textarea')].map(e => e.value)
  .concat([...document.querySelectorAll('[data-baseweb="select"]')].map(e => e.innerText))"""

BERTVIZ_ENGLISH = re.compile(r"^(Heads|Layers|Softmax|No token selected|Layer \d+, Head \d+)$")


@pytest.mark.parametrize("lesson_id", [lesson.id for lesson in CATALOG.lessons])
def test_zh_tw_lesson_has_no_stray_english_and_no_tiny_figure_text(server, page, lesson_id):
    lesson = CATALOG.get(lesson_id)
    open_app(page, f"{server}/{lesson.id}?lang=zh-TW" if lesson.order else f"{server}/?lang=zh-TW", 180_000)
    small = page.evaluate(SMALL_SVG_TEXT_JS, MIN_TEXT_PX)
    assert not small, f"{lesson_id}: figure text under {MIN_TEXT_PX} px: {small[:10]}"
    examples = " ".join(w for v in page.evaluate(EXAMPLES_JS) for w in WORD.findall(v)).lower()
    text = PROSE_DROP.sub(" ", page.evaluate(VISIBLE_TEXT_JS))
    bad = sorted({w for w in WORD.findall(text) if not _ok(w, examples, PROSE_ALLOWED)})
    assert not bad, f"{lesson_id}: {bad}"
    for frame in page.frames[1:]:  # bertviz views live in iframes
        drawn = frame.evaluate("() => [...document.querySelectorAll('svg text')].map(e => e.textContent.trim())")
        english = [s for s in drawn if BERTVIZ_ENGLISH.match(s)]
        assert not english, f"{lesson_id}: bertviz draws {english[:5]}"


@pytest.mark.parametrize("view", ["模型視圖", "神經元視圖"])
def test_bertviz_views_draw_their_words_in_chinese(server, page, view):
    """bertviz's own scripts write "Heads", "Layers", "Layer 3, Head 5", "Softmax", "No token
    selected" into the drawing; the bridge puts the reader's language in their place."""
    from tests.e2e.conftest import wait_idle
    from tests.e2e.test_attention import _draw_bertviz

    open_app(page, f"{server}/multi-head?lang=zh-TW", 180_000)
    _draw_bertviz(page, "zh-TW")  # drawn only on request
    page.locator('[data-testid="stButtonGroup"] button', has_text=view).first.click()
    wait_idle(page, 180_000)

    def drawn_texts() -> list[str]:
        out = []
        for f in page.frames[1:]:
            out += f.evaluate("() => [...document.querySelectorAll('svg text')].map(e => e.textContent.trim())")
        return out

    want = (
        {"頭", "層", "Heads", "Layers"}
        if view == "模型視圖"
        else {"softmax", "Softmax", "尚未選擇詞元", "No token selected"}
    )
    drawn: list[str] = []
    for _ in range(100):  # the view draws after its scripts load inside the frame
        drawn = drawn_texts()
        if want & set(drawn):
            break
        page.wait_for_timeout(200)
    page.wait_for_timeout(500)
    drawn = drawn_texts()
    assert want & set(drawn), drawn[:30]
    assert not [s for s in drawn if BERTVIZ_ENGLISH.match(s)], [s for s in drawn if BERTVIZ_ENGLISH.match(s)]
