"""AppTest for lesson 8 (Megatron-BERT): both languages, the torchrun demo from its button
(success and an injected crash), the pipeline controls, ZeRO, and the layer-norm training."""

from __future__ import annotations

import json
import re

import pytest

from core.lessons import LANGS, load_catalog
from tests.apptest import run_lesson, texts

CATALOG = load_catalog()


def charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("lang", LANGS)
def test_megatron_page_renders_in_both_languages(lang):
    at = run_lesson("megatron", lang)
    assert not at.exception and not at.error
    assert at.title[0].value == CATALOG.get("megatron").title(lang)
    # timeline, ZeRO memory, holdings, activations, BERT results, layer order, scaling
    assert len(charts(at)) == 7
    m = list(metrics(at).values())
    assert m[:2] == ["0.3750", "0.3750"]  # default p = 4, m = 8: (p - 1)/m, measured and formula
    assert "1,008.04 B" in m and "33.8" in m  # eq. (2) for the 1T row; eq. (4) for GPT-3
    body = texts(at)
    assert "1.88 GB" in body  # ZeRO-3, 7.5B on 64 devices (paper: 1.9 GB)
    assert "copy_to_tensor_model_parallel_region" in body


def test_demo_button_runs_torchrun_and_shows_the_check():
    at = run_lesson("megatron", "en")
    at.button(key="megatron.run").click().run(timeout=180)
    assert not at.exception and not at.error
    ok = [s.value for s in at.success]
    assert ok and re.search(r"2 rank\(s\) on (gloo|nccl)", ok[0])
    m = metrics(at)
    assert m["all-reduces, forward"] == "2" and m["all-reduces, backward"] == "2"
    log = next(d.value for d in at.dataframe if "operator" in d.value.columns)  # after the worked example's table
    assert list(log["operator"]) == ["g", "g", "f", "f"]
    assert list(log["where"]) == ["attention.g", "mlp.g", "mlp.f", "attention.f"]
    specs = charts(at)
    assert len(specs) == 11  # + shard map, two joins, differences
    shard_map = specs[0]
    assert {tr["name"] for tr in shard_map["data"]} == {"rank 0", "rank 1"}


@pytest.mark.parametrize("lang", LANGS)
def test_demo_reports_a_crashed_rank(lang):
    at = run_lesson("megatron", lang)
    at.selectbox(key="megatron.fault").set_value("crash")
    at.button(key="megatron.run").click().run(timeout=180)
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("injected crash on rank 1" in e for e in errors), errors  # the worker's own words, quoted
    if lang == "zh-TW":  # the card around them is Chinese, not raw torchrun text
        assert all(re.search(r"[\u3400-\u9fff]", e) for e in errors), errors


def test_pipeline_controls_move_the_bubble():
    at = run_lesson("megatron", "en")
    at.selectbox(key="megatron.schedule").set_value("interleaved").run()
    assert list(metrics(at).values())[:2] == ["0.1875", "0.1875"]  # 3 / (2 * 8)
    at.slider(key="megatron.m").set_value(6).run()  # not a multiple of p = 4
    assert any("multiple of p" in w.value for w in at.warning)
    assert list(metrics(at).values())[:2] == ["0.3750", "0.3750"]  # m rounded to 4: 3 / (2 * 4)
    tl = next(s for s in charts(at) if s["layout"]["title"]["text"].startswith("Interleaved"))
    assert sum(len(tr["x"]) for tr in tl["data"]) == 2 * 4 * 4 * 2  # F and B per device, micro-batch, chunk


def test_zero_stage_changes_the_holdings():
    at = run_lesson("megatron", "en")
    at.radio(key="megatron.zero_stage").set_value(1).run()
    assert "31.41 GB" in texts(at)  # Rajbhandari et al. 2019, Figure 1: 31.4 GB


def test_layer_norm_training_from_the_button():
    at = run_lesson("megatron", "zh-TW")
    at.slider(key="megatron.ln_layers").set_value(2)
    at.slider(key="megatron.ln_steps").set_value(20)
    at.button(key="megatron.ln_run").click().run(timeout=180)
    assert not at.exception and not at.error
    curves = next(s for s in charts(at) if len(s["data"]) == 2 and s["data"][0].get("mode") == "lines")
    assert [len(tr["y"]) for tr in curves["data"]] == [20, 20]
    assert "post-LN" in texts(at)
    # the verdict names whichever order this run actually favoured
    post, pre = (sum(tr["y"][-10:]) / 10 for tr in curves["data"])
    verdict = [i.value for i in at.info if "pre-LN" in i.value or "post-LN" in i.value]
    assert len(verdict) == 1 and verdict[0].startswith("這一次 pre-LN" if pre < post else "這一次 post-LN")


def test_presenter_deep_link_shows_only_the_first_steps():
    at = run_lesson("megatron", "en", present=True, step=3)
    assert not at.exception and not at.error
    headers = [h.value for h in at.header]
    assert headers[-1] == "Splitting one matrix multiply"


@pytest.mark.parametrize("lang", LANGS)
def test_formulas_are_printed_from_the_formulas_module(lang):
    """The page's formulas come from core/megatron/formulas.py (one sympy source), whose numbers
    tests/test_megatron.py checks against the papers' tables; none is typed into the page."""
    import inspect
    from pathlib import Path

    from core.megatron import calculators as calc
    from core.megatron import formulas as fm

    source = Path(inspect.getfile(calc)).parents[2].joinpath("pages", "08_megatron.py").read_text(encoding="utf-8")
    assert r"\frac" not in source and "(p−1)" not in source and "(p-1)" not in source
    at = run_lesson("megatron", lang)
    assert not at.exception
    printed = [el.value.strip("$\n ") for el in at.latex]
    body = fm.latex(fm.PARAMS).split(" = ", 1)[1]
    assert any(x.endswith(body) for x in printed), printed
    assert any(
        fm.latex(fm.FLOPS) in x and x.endswith(fm.latex(fm.TRAINING_SECONDS).split(" = ", 1)[1]) for x in printed
    )
    assert any(x.endswith(fm.latex(fm.ACTIVATIONS[("none", False)]).split(" = ", 1)[1]) for x in printed)
    assert any(x.endswith(fm.latex(fm.ZERO[3]).split(" = ", 1)[1]) for x in printed)  # default stage 3
    # no English left side in the Chinese page
    if lang == "zh-TW":
        assert not any(re.search(r"\\text\{(time|bytes|per layer)\}", x) for x in printed), printed
    # the bubble metric names the module's own text of (p - 1)/m at the default p = 4, m = 8
    labels = list(metrics(at))
    assert any(calc.bubble(4, 8)["formula"] in lbl for lbl in labels), labels
