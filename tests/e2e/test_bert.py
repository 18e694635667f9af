"""Lessons 6–7 in a real browser: figures render, typing updates them, nothing reaches the network."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import open_app, real_console_errors, screenshot, wait_idle


def _plots(page) -> int:
    return page.locator('[data-testid="stMain"] .js-plotly-plot').count()


def _type(page, label: str, text: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(text)
    box.press("Enter")
    page.wait_for_timeout(400)
    wait_idle(page, 120_000)


@pytest.mark.slow
def test_bert_inputs_page(server, page):
    open_app(page, f"{server}/bert-inputs?lang=en", timeout=180_000)
    assert _plots(page) >= 6  # wordpiece, pair, batch, strips, norms, anatomy, layer
    main = page.locator('[data-testid="stMain"]')
    assert "Attention Lab BERT" in main.inner_text()  # the default model, named on the page
    typed = "注意力 🙂 <img src=x onerror=alert(1)> tokenization"
    _type(page, "Text to split into WordPiece tokens", typed)
    wp = page.locator('[data-testid="stMain"] .js-plotly-plot').first
    text = wp.inner_text()
    from core.bert import load

    pieces = load("", device="cpu").tokenizer.tokenize(typed)  # the default model's own WordPiece
    assert {"注", "意", "力", "[UNK]"} <= set(pieces)  # one token per CJK character; the emoji unknown
    assert all(p in text for p in set(pieces))
    assert page.locator('img[src="x"]').count() == 0  # user text never becomes HTML
    screenshot(page, "bert-inputs-en")
    assert real_console_errors(page) == []


@pytest.mark.slow
def test_bert_outputs_page(server, page):
    open_app(page, f"{server}/bert-outputs?lang=en", timeout=180_000)
    page.get_by_text("Held-out accuracy").wait_for(timeout=180_000)  # the last step has drawn
    wait_idle(page, 180_000)
    assert _plots(page) >= 7  # hidden, pooled, trajectory, similarity, masking, heads, factor, confusion, own post
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Held-out accuracy" in main and "Top 5 predictions of the MLM head" in main
    screenshot(page, "bert-outputs-en")
    _type(page, "Sentence to mask", "")
    assert "The text is empty" in page.locator('[data-testid="stMain"]').inner_text()
    assert real_console_errors(page) == []


@pytest.mark.slow
def test_bert_pages_in_chinese(server, page):
    open_app(page, f"{server}/bert-outputs?lang=zh-TW", timeout=180_000)
    page.get_by_text("保留資料準確率").wait_for(timeout=180_000)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "情感分析因子" in main and "保留資料準確率" in main
    screenshot(page, "bert-outputs-zh-TW")
    open_app(page, f"{server}/bert-inputs?lang=zh-TW", timeout=180_000)
    assert "WordPiece" in page.locator('[data-testid="stMain"]').inner_text()
    screenshot(page, "bert-inputs-zh-TW")
    assert real_console_errors(page) == []
