"""Lesson 8 in a real browser: the torchrun demo runs from its button, the pipeline and ZeRO
figures render and respond, nothing reaches the network."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import open_app, real_console_errors, screenshot, wait_idle


def _wait_plots(page, n: int, timeout: float = 60_000) -> None:
    page.wait_for_function(
        f"() => document.querySelectorAll('[data-testid=\"stMain\"] .js-plotly-plot').length >= {n}", timeout=timeout
    )


def _main(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


@pytest.mark.slow
def test_megatron_demo_runs_from_the_button(server, page):
    open_app(page, f"{server}/megatron?lang=en", timeout=120_000)
    _wait_plots(page, 7)  # timeline, ZeRO x2, activations, results, layer order, scaling
    text = _main(page)
    assert "Press the button" in text and "copy_to_tensor_model_parallel_region" in text
    page.get_by_role("button", name="Run the layer on the workers").click()
    page.get_by_text("match the unsharded layer").wait_for(timeout=120_000)
    wait_idle(page, 120_000)
    text = _main(page)
    assert re.search(r"2 rank\(s\) on (gloo|nccl)", text)
    # the metrics above the collective log (the log itself is a canvas data grid)
    assert re.search(r"all-reduces, forward\s+2\s+all-reduces, backward\s+2", text)
    _wait_plots(page, 11)  # + shards, 2 joins, diffs
    screenshot(page, "megatron-en")
    assert real_console_errors(page) == []


@pytest.mark.slow
def test_megatron_pipeline_controls_and_chinese(server, page):
    open_app(page, f"{server}/megatron?lang=zh-TW", timeout=120_000)
    _wait_plots(page, 7)
    text = _main(page)
    assert "從圖上量到的氣泡" in text and "0.3750" in text  # p = 4, m = 8: (p-1)/m
    # choose the interleaved schedule: v = 2 halves the bubble to 3/16
    box = page.get_by_role("combobox", name="排程")
    box.click()
    box.fill("交錯")
    box.press("Enter")
    page.get_by_text("0.1875").first.wait_for(timeout=60_000)  # (p-1)/(v m) = 3/16
    screenshot(page, "megatron-zh-TW")
    assert real_console_errors(page) == []
