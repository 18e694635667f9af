"""Lessons 4-5 in Chromium: heatmaps draw, hostile text never runs, bertviz's three views render
their SVG with every request outside localhost blocked."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import SHOTS, open_app, real_console_errors, screenshot, wait_idle

HOSTILE = (
    '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2; alert(2)">'
    '<svg onload="window.__pwned = 3">'
)


def _frames_pwned(page) -> list:
    """window.__pwned in the page and in every frame (bertviz's included)."""
    out = []
    for frame in page.frames:
        try:
            out.append(frame.evaluate("() => window.__pwned === undefined ? null : window.__pwned"))
        except Exception:  # a frame that went away between listing and evaluating
            out.append(None)
    return [v for v in out if v is not None]


def _type(page, label_part: str, text: str) -> None:
    box = page.locator(f'textarea[aria-label*="{label_part}"]').first
    box.fill(text)
    box.press("Control+Enter")
    page.wait_for_timeout(300)
    wait_idle(page, 120_000)


def _bertviz_frame(page):
    return page.frame_locator('[data-testid="stMain"] iframe').first


def _shot_frame(page, name: str) -> None:
    """The bertviz frame alone (a full-page shot of Streamlit stops at the viewport)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    el = page.locator('[data-testid="stMain"] iframe').first
    el.scroll_into_view_if_needed()
    el.screenshot(path=str(SHOTS / f"{name}.png"))


def _svg_count(page) -> int:
    frame = _bertviz_frame(page)
    frame.locator("#vis svg").first.wait_for(state="attached", timeout=30_000)
    return frame.locator("#vis svg").count()


def _draw_bertviz(page, lang: str) -> None:
    """Switch on lesson 5's bertviz section (it is drawn only on request, in its own fragment)."""
    label = {"en": "Draw bertviz (up to 2 MB per view)", "zh-TW": "畫出 bertviz（每個視圖最多 2 MB）"}[lang]
    page.get_by_text(label, exact=True).click()
    wait_idle(page, 120_000)


@pytest.fixture
def dialogs(page):
    seen = []
    page.on("dialog", lambda d: (seen.append(d.message), d.dismiss()))
    return seen


def test_self_attention_renders_and_hostile_text_stays_text(server, page, dialogs):
    open_app(page, f"{server}/self-attention?lang=en", timeout=180_000)
    page.locator('[data-testid="stPlotlyChart"]').nth(4).wait_for(timeout=60_000)
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 5
    assert page.locator(".js-plotly-plot .heatmaplayer").count() >= 3
    screenshot(page, "self-attention-en")
    # picking a query token frames its row in the heatmap
    picked = page.locator('[data-testid="stSelectbox"]').filter(has_text="Query token").locator("input")
    picked.click()
    page.keyboard.type("2: animal")
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    wait_idle(page, 120_000)
    assert picked.get_attribute("value") == "2: animal"

    _type(page, "Sentence", "it " + HOSTILE + " was tired")
    page.wait_for_timeout(1000)
    assert _frames_pwned(page) == [] and dialogs == []
    assert page.locator('img[src="x"]').count() == 0
    # the text is there, as text: the tokenizer's pieces label the heatmap
    # (a long input thins the drawn tick labels, so read the labels the heatmap was given)
    labels = (
        page.locator(".js-plotly-plot")
        .nth(4)
        .evaluate(
            "el => JSON.stringify([el.layout.yaxis.ticktext, el.data[0].y, el.layout.xaxis.ticktext, el.data[0].x])"
        )
    )
    assert "script" in labels
    assert real_console_errors(page) == []
    screenshot(page, "self-attention-hostile")


def test_self_attention_scaling_toggle(server, page):
    open_app(page, f"{server}/self-attention?lang=en", timeout=180_000)
    page.locator('[data-testid="stPlotlyChart"]').nth(4).wait_for(timeout=120_000)
    page.get_by_text("Scale by 1/√d_k").click()
    wait_idle(page, 120_000)
    page.get_by_text("what-if").first.wait_for(timeout=30_000)
    assert "q·k (not scaled)" in page.locator('[data-testid="stPlotlyChart"]').nth(1).inner_text()
    assert real_console_errors(page) == []


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_bertviz_views_render_svg_offline(server, page, dialogs, lang):
    open_app(page, f"{server}/multi-head?lang={lang}", timeout=180_000)
    page.locator('[data-testid="stPlotlyChart"]').nth(5).wait_for(timeout=120_000)
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 6
    assert page.locator('[data-testid="stMain"] iframe').count() == 0  # drawn only on request
    _draw_bertviz(page, lang)
    assert _svg_count(page) == 1
    frame = _bertviz_frame(page)
    assert frame.locator("#vis svg line").count() > 1000  # head view: one line per head × query × key
    labels = {"en": ("Model view", "Neuron view"), "zh-TW": ("模型視圖", "神經元視圖")}[lang]
    page.locator('[data-testid="stButtonGroup"]').get_by_text(labels[0]).click()
    wait_idle(page, 120_000)
    assert _svg_count(page) == 1
    frame = _bertviz_frame(page)
    # model view fits the page width: its 970-unit drawing is scaled into the frame
    fits = frame.locator("#vis svg").evaluate(
        "s => s.getBoundingClientRect().width <= document.documentElement.clientWidth + 1 && !!s.getAttribute('viewBox')"
    )
    assert fits
    _shot_frame(page, f"bertviz-model-{lang}")
    page.locator('[data-testid="stButtonGroup"]').get_by_text(labels[1]).click()
    wait_idle(page, 120_000)
    assert _svg_count(page) == 1
    frame = _bertviz_frame(page)
    assert frame.locator("#vis svg text").count() > 10
    # open one token's computation: its query, every key, q×k, the dot products (from our float16 q, k)
    frame.locator("#collapsed #leftText g").nth(3).hover()
    frame.locator("#collapsed .plus-sign + rect").nth(3).click(force=True)
    page.wait_for_timeout(500)
    assert frame.locator("#expanded").get_attribute("visibility") == "visible"
    assert frame.locator("#expanded #queries .vector").count() > 0
    _shot_frame(page, f"bertviz-neuron-{lang}")
    assert real_console_errors(page) == [] and dialogs == []


def test_bertviz_sentence_pair_filter_and_hostile_tokens(server, page, dialogs):
    open_app(page, f"{server}/multi-head?lang=en", timeout=180_000)
    page.locator('[data-testid="stPlotlyChart"]').nth(5).wait_for(timeout=120_000)
    _draw_bertviz(page, "en")
    page.get_by_text("Sentence pair (A and B)").click()
    wait_idle(page, 120_000)
    _type(page, "Sentence B", HOSTILE)
    assert _svg_count(page) == 1
    frame = _bertviz_frame(page)
    options = frame.locator("#filter option")
    assert options.count() == 5
    frame.locator("#filter").select_option(index=3)  # Sentence A -> Sentence B
    page.wait_for_timeout(500)
    assert frame.locator("#vis svg").count() == 1
    # hostile text shows as token text inside the SVG, never as an element
    assert frame.locator("#vis svg text", has_text="script").count() > 0
    assert frame.locator("img, #vis script").count() == 0
    page.wait_for_timeout(500)
    assert _frames_pwned(page) == [] and dialogs == []
    _shot_frame(page, "bertviz-pair")
    # the neuron view's own sentence filter (A->B: queries of A against keys of B)
    page.locator('[data-testid="stButtonGroup"]').get_by_text("Neuron view").click()
    wait_idle(page, 120_000)
    assert _svg_count(page) == 1
    frame = _bertviz_frame(page)
    frame.locator("#filter").select_option("ab")
    page.wait_for_timeout(500)
    frame.locator("#collapsed .plus-sign + rect").nth(1).click(force=True)
    page.wait_for_timeout(300)
    assert frame.locator("#expanded #keys .vector").count() > 0
    assert real_console_errors(page) == []


# Each chart's margins as laid out against the margins it was given: a side that Plotly's automatic
# margins had to push out means the chart was laid out, measured and drawn a second time.
PUSHED_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')].map((d, i) => {
  const given = d.layout.margin || {}, laid = d._fullLayout._size;
  return ['l', 'r', 't', 'b'].filter(k => Math.round(laid[k]) > (given[k] ?? 80) + 1)
    .map(k => `chart ${i} ${k}: ${given[k]} -> ${Math.round(laid[k])}`); }).flat()"""


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_lessons_4_and_5_figures_are_laid_out_once(server, page, lang):
    """core.figures.label_room and the builders' margins leave nothing for automatic margins to add
    (they stay on as a safety net): a figure laid out twice costs the browser about twice the time."""
    for path, n in (("self-attention", 5), ("multi-head", 6)):
        open_app(page, f"{server}/{path}?lang={lang}", timeout=180_000)
        page.locator('[data-testid="stPlotlyChart"]').nth(n - 1).wait_for(timeout=120_000)
        page.wait_for_timeout(500)
        assert page.evaluate(PUSHED_JS) == [], path
    # a longer sentence, with longer pieces, in lesson 4
    open_app(page, f"{server}/self-attention?lang={lang}", timeout=180_000)
    _type(page, "Sentence" if lang == "en" else "句子", "Internationalization notwithstanding, 國際化 it was tired.")
    page.locator('[data-testid="stPlotlyChart"]').nth(4).wait_for(timeout=120_000)
    page.wait_for_timeout(500)
    assert page.evaluate(PUSHED_JS) == []
