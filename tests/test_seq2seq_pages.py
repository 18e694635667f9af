"""AppTest for lessons 2-3: both pages in both languages, bad input, stepping, predict-then-reveal,
and a tiny live-training run."""
from __future__ import annotations

import json

import pytest

from core.lessons import LANGS, load_catalog
from tests.apptest import plotly_values, run_lesson, texts

CATALOG = load_catalog()


def charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def chart_titles(at) -> list[str]:
    return [((c.get("layout", {}).get("title") or {}).get("text") or "") for c in charts(at)]


@pytest.mark.parametrize("lang", LANGS)
def test_seq2seq_page_renders_with_its_figures(lang):
    at = run_lesson("seq2seq", lang)
    assert not at.exception and not at.error
    assert at.title[0].value == CATALOG.get("seq2seq").title(lang)
    specs = charts(at)
    # c strip + marks (input), curve, per-position, marks x2 (try-it)
    assert len(specs) >= 6
    c_strip = specs[0]["data"][0]
    assert len(c_strip["z"][0]) == 128  # c has as many numbers as the GRU has units
    curve = next(s for s in specs if s["data"][0].get("mode") == "lines+markers"
                 and s["data"][0]["x"][-1] == "36-40")
    assert {tr["name"] for tr in curve["data"]} and len(curve["data"]) == 2
    # the no-attention model's line ends lower than the attention model's at length 36-40
    last = {i: tr["y"][-1] for i, tr in enumerate(curve["data"])}
    assert min(last.values()) < max(last.values())


@pytest.mark.parametrize("lang", LANGS)
def test_bahdanau_page_renders_with_its_figures(lang):
    at = run_lesson("bahdanau", lang)
    assert not at.exception and not at.error
    assert at.title[0].value == CATALOG.get("bahdanau").title(lang)
    assert any(c.value == "2026-12-02" for c in at.code)  # the model's answer for the default input
    from core.seq2seq.train import read_manifest

    date = next(e for e in read_manifest()["checkpoints"] if e["file"] == "date-bahdanau.safetensors")
    assert any(f"{date['heldout_exact_match']:.1%}" in c.value and str(date["heldout_n"]) in c.value
               for c in at.caption)
    specs = charts(at)
    assert len(specs) >= 4  # annotations, step, context, alignment
    alignment = specs[-1]["data"][0]
    rows = plotly_values(alignment["z"])
    assert len(rows[0]) == len("2 December 2026")
    assert all(abs(sum(r) - 1) < 1e-3 for r in rows)


@pytest.mark.parametrize("text, code", [
    ("", "bad_empty"),
    ("x" * 60, "bad_too_long"),
    ("ABC😀", "bad_chars"),
    ("<script>alert(1)</script>", "bad_chars"),
    ("<img src=x onerror=alert(1)>", "bad_chars"),
    ("\u05e9\u05dc\u05d5\u05dd", "bad_chars"),
])
def test_seq2seq_bad_input_gives_a_clear_message_and_the_page_keeps_working(text, code):
    at = run_lesson("seq2seq", "en")
    n_before = len(charts(at))
    at.text_input(key="seq2seq.input").set_value(text).run()
    assert not at.exception and not at.error
    shown = texts(at)
    expected = {"bad_empty": "The input is empty", "bad_too_long": "was trained on at most 40",
                "bad_chars": "not in this model's vocabulary"}[code]
    assert expected in shown
    # the user's text never reaches Markdown: no markdown element contains it
    if "<" in text:
        assert all(text not in m.value for m in at.markdown)
    # the other sections still draw their figures (only the input's own c strip and marks are gone)
    assert len(charts(at)) == n_before - 2


@pytest.mark.parametrize("lang", LANGS)
def test_bahdanau_bad_input_then_recovery(lang):
    at = run_lesson("bahdanau", lang)
    at.text_input(key="bahdanau.input").set_value("13/45/99 😀").run()
    assert not at.exception and not at.error
    assert len(at.warning) >= 1 and len(charts(at)) == 0  # every view says why instead of drawing
    at.text_input(key="bahdanau.input").set_value("二〇二六年十二月二日").run()
    assert not at.exception
    assert any(c.value == "2026-12-02" for c in at.code)
    assert len(charts(at)) >= 4


def test_bahdanau_step_scrubbing_and_predict_then_reveal():
    at = run_lesson("bahdanau", "en")
    at.select_slider(key="bahdanau.step").set_value(3).run()
    assert not at.exception
    # the alignment heatmap highlights the chosen row
    shapes = charts(at)[-1]["layout"].get("shapes", [])
    assert shapes and shapes[0]["y0"] == 2.5
    assert any("y_4" in c.value for c in at.code)
    at.selectbox(key="bahdanau.predict.step").set_value(0).run()
    at.radio(key="bahdanau.predict.guess").set_value(12).run()   # the "2" of "2026" (0-based 12)
    at.button(key="bahdanau.predict.reveal").click().run()
    assert not at.exception
    verdicts = [s.value for s in at.success] + [w.value for w in at.warning]
    assert verdicts and "α" in verdicts[0]


def test_live_training_runs_and_reports():
    at = run_lesson("bahdanau", "en")
    at.number_input(key="bahdanau.live.steps").set_value(30).run()
    at.button(key="bahdanau.live.start").click().run()
    assert not at.exception and not at.error
    # snapshots at steps 25 and 30; the replay slider starts at the last one
    assert at.select_slider(key="bahdanau.live.snapshot").value == 30
    titles = chart_titles(at)
    assert any("after 30 training steps" in t for t in titles)
    assert any(t == "Training loss" for t in titles)
    at.select_slider(key="bahdanau.live.snapshot").set_value(25).run()
    assert any("after 25 training steps" in t for t in chart_titles(at))


def test_seq2seq_live_training_runs_and_measures_by_length():
    at = run_lesson("seq2seq", "en")
    at.number_input(key="seq2seq.live.steps").set_value(5).run()
    at.button(key="seq2seq.live.start").click().run()
    assert not at.exception and not at.error
    assert any("held-out exact match by input length" in t for t in chart_titles(at))
    assert "Measured on 200 held-out examples" in texts(at)


def test_bahdanau_in_vocabulary_non_date_says_there_is_no_right_answer():
    at = run_lesson("bahdanau", "en")
    at.text_input(key="bahdanau.input").set_value("Dec").run()
    assert not at.exception and not at.error
    assert any("there is no right answer" in i.value for i in at.info)
    assert len(charts(at)) >= 4  # the model still runs, and every view still draws


def test_seq2seq_task_switch_shows_the_reverse_checkpoints():
    at = run_lesson("seq2seq", "en")
    copy_curves = [s for s in charts(at) if s["data"][0].get("x", [None])[-1] == "36-40"]
    at.radio(key="seq2seq.curve_task").set_value("reverse").run()
    assert not at.exception and not at.error
    rev_curves = [s for s in charts(at) if s["data"][0].get("x", [None])[-1] == "36-40"]
    assert copy_curves and rev_curves and copy_curves[0]["data"][0]["y"] != rev_curves[0]["data"][0]["y"]
    from core.seq2seq.train import read_manifest

    rev_none = next(e for e in read_manifest()["checkpoints"] if e["file"] == "reverse-none.safetensors")
    assert any(f"{rev_none['steps']} steps" in c.value for c in at.caption)  # its manifest caption
    names = [tr["name"] for tr in rev_curves[0]["data"]]
    assert names[0].startswith("No attention")
