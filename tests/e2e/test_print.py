"""Handouts: the printable view printed to PDF by Chromium (page.pdf), A4 portrait, in both
languages: text, figures and tables only, no control, no table wider than the page."""

from __future__ import annotations

import io
import re

import pytest

from core.lessons import load_catalog, load_locale_keys
from tests.e2e.conftest import open_app, real_console_errors

A4_PT = (595.3, 841.9)  # A4 portrait in PostScript points
PAGE_PX = 703  # 210 mm less two 12 mm margins (ui/lesson.py PRINT_CSS), at 96 px per inch

# Labels that only a control carries (a box, a select, a slider, a button), per lesson.
CONTROL_KEYS = {
    "bahdanau": [
        "bahdanau.input_label",
        "bahdanau.step_slider",
        "bahdanau.predict_step",
        "bahdanau.probe_label",
        "bahdanau.live_steps",
        "app.download_csv",
        "app.download_json",
        "app.next_step",
    ],
    "megatron": ["megatron.ln_run", "app.download_csv", "app.download_json", "app.next_step", "quiz.guess_placeholder"],
}

CONTROLS_JS = """() => [...document.querySelectorAll(
    'input, textarea, select, button, details, [role=slider], [role=radio], [role=radiogroup], ' +
    '[role=combobox], [role=checkbox], [role=switch], [role=listbox]')]
    .filter(el => el.getClientRects().length > 0 && el.offsetWidth > 0)
    .map(el => el.outerHTML.slice(0, 160))"""

WIDE_TABLES_JS = """(limit) => [...document.querySelectorAll(
    '[data-testid=stTable] table, [data-testid=stMarkdownContainer] table, [data-testid=stDataFrame], ' +
    '[data-testid=stDataFrame] .dvn-scroller')]
    .filter(el => el.getClientRects().length > 0)
    .filter(el => el.getBoundingClientRect().right > limit + 1 || el.scrollWidth > el.clientWidth + 1)
    .map(el => `${el.tagName}.${el.className}`.slice(0, 80) + ` right=${el.getBoundingClientRect().right}` +
               ` scroll=${el.scrollWidth} client=${el.clientWidth}`)"""


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("lesson_id, lang", [("bahdanau", "en"), ("megatron", "zh-TW")])
def test_handout_prints_to_a4_without_controls_or_wide_tables(server, page, lesson_id, lang, tmp_path):
    from pypdf import PdfReader

    lesson = load_catalog().get(lesson_id)
    page.set_viewport_size({"width": PAGE_PX, "height": 1000})
    open_app(page, f"{server}/{lesson_id}?lang={lang}&print=1&present=1", timeout=180_000)  # print wins
    page.emulate_media(media="print")
    page.wait_for_timeout(500)
    assert page.evaluate(CONTROLS_JS) == []
    wide = page.evaluate(WIDE_TABLES_JS, PAGE_PX)
    # A data grid (st.dataframe) cuts columns and rows on paper: pages draw tables with
    # ui.lesson.table, which prints a wrapped st.table.
    assert not wide, "tables wider than the page (use lesson.table):\n" + "\n".join(wide)
    pdf = page.pdf(format="A4", print_background=True, prefer_css_page_size=True)
    (tmp_path / f"{lesson_id}-{lang}.pdf").write_bytes(pdf)
    reader = PdfReader(io.BytesIO(pdf))
    assert len(reader.pages) >= 2
    for p in reader.pages:
        w, h = float(p.mediabox.width), float(p.mediabox.height)
        assert (w, h) == pytest.approx(A4_PT, abs=2), "A4 portrait"
    text = squash("".join(p.extract_text() or "" for p in reader.pages))
    for step in lesson.steps(lang):  # the whole lesson is there (and the text came out of the PDF)
        if step.title:
            assert squash(step.title) in text, step.title
    strings = load_locale_keys(lang)
    for key in CONTROL_KEYS[lesson_id]:
        assert squash(strings[key]) not in text, f"a control in the PDF: {key} = {strings[key]!r}"
    assert real_console_errors(page) == []
