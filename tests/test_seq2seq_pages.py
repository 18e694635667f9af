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


def keyed(at, kind: str, key: str):
    """The one widget of ``kind`` drawn under ``lesson.follow_inputs(key, ...)`` (key + a digest)."""
    found = [w for w in getattr(at, kind) if (w.key or "").startswith(key + ".") and len(w.key) == len(key) + 11]
    assert len(found) == 1, (key, [w.key for w in getattr(at, kind)])
    return found[0]


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
    curve = next(s for s in specs if s["data"][0].get("mode") == "lines+markers" and s["data"][0]["x"][-1] == "36-40")
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
    assert any(
        f"{date['heldout_exact_match']:.1%}" in c.value and str(date["heldout_n"]) in c.value for c in at.caption
    )
    specs = charts(at)
    assert len(specs) >= 4  # annotations, step, context, alignment
    alignment = specs[-1]["data"][0]
    rows = plotly_values(alignment["z"])
    assert len(rows[0]) == len("2 December 2026")
    assert all(abs(sum(r) - 1) < 1e-3 for r in rows)


@pytest.mark.parametrize(
    "text, code",
    [
        ("", "bad_empty"),
        ("x" * 60, "bad_too_long"),
        ("ABC😀", "bad_chars"),
        ("<script>alert(1)</script>", "bad_chars"),
        ("<img src=x onerror=alert(1)>", "bad_chars"),
        ("\u05e9\u05dc\u05d5\u05dd", "bad_chars"),
    ],
)
def test_seq2seq_bad_input_gives_a_clear_message_and_the_page_keeps_working(text, code):
    at = run_lesson("seq2seq", "en")
    n_before = len(charts(at))
    at.text_input(key="seq2seq.input").set_value(text).run()
    assert not at.exception and not at.error
    shown = texts(at)
    expected = {
        "bad_empty": "The input is empty",
        "bad_too_long": "was trained on at most 40",
        "bad_chars": "not in this model's vocabulary",
    }[code]
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
    keyed(at, "select_slider", "bahdanau.step").set_value(3).run()
    assert not at.exception
    # the alignment heatmap highlights the chosen row
    shapes = charts(at)[-1]["layout"].get("shapes", [])
    assert shapes and shapes[0]["y0"] == 2.5
    assert any("y_4" in c.value for c in at.code)
    keyed(at, "selectbox", "bahdanau.predict.step").set_value(0).run()
    keyed(at, "radio", "bahdanau.predict.guess").set_value(12).run()  # the "2" of "2026" (0-based 12)
    at.button(key="bahdanau.predict.reveal").click().run()
    assert not at.exception
    verdicts = [s.value for s in at.success] + [w.value for w in at.warning] + [e.value for e in at.error]
    assert verdicts and "α" in verdicts[0]


def _default_trace():
    from core.seq2seq.explain import trace
    from core.seq2seq.tasks import get_task
    from core.seq2seq.train import CHECKPOINT_DIR, load_checkpoint

    task = get_task("date")
    return trace(load_checkpoint(CHECKPOINT_DIR / "date-bahdanau.safetensors"), task, task.examples[0])


def test_verdict_is_close_only_for_at_least_half_the_largest_weight_and_never_for_zero():
    from core.seq2seq.explain import verdict

    assert verdict([0.1, 0.6, 0.3], 1) == "right"
    assert verdict([0.1, 0.6, 0.3], 2) == "close"  # 0.3 = half of 0.6
    assert verdict([0.1, 0.6, 0.29], 2) == "wrong"
    assert verdict([0.004, 0.006, 0.99], 1) == "wrong"  # α = 0.006 rounds to 0.01 but is never close
    assert verdict([0.0, 0.005, 0.008], 1) == "wrong"  # ≥ half of 0.008 but < 0.01: not close
    assert verdict([0.0, 0.01, 0.015], 1) == "close"
    assert verdict([0.0, 0.0, 1.0], 0) == "wrong"
    tr = _default_trace()
    for row in tr.weights:  # ... on the real model: close means α ≥ 0.01 and ≥ half the top
        top = max(row)
        for j, a in enumerate(row):
            said = verdict(row, j)
            assert said == ("right" if a == top else "close" if (a >= top / 2 and a >= 0.01) else "wrong")
            if f"{a:.2f}" == "0.00":
                assert said != "close"


def test_predict_offers_only_the_steps_that_write_a_digit():
    from core.seq2seq.explain import predictable_steps

    tr = _default_trace()
    assert tr.output_text == "2026-12-02"
    assert predictable_steps(tr.outputs) == [0, 1, 2, 3, 5, 6, 8, 9]  # no "-", no end marker
    at = run_lesson("bahdanau", "en")
    assert keyed(at, "selectbox", "bahdanau.predict.step").options == [
        f"step {i + 1}: {tr.outputs[i]}" for i in (0, 1, 2, 3, 5, 6, 8, 9)
    ]


@pytest.mark.parametrize("lang", LANGS)
def test_after_the_first_reveal_changing_the_guess_shows_its_verdict_at_once(lang):
    from core.seq2seq.explain import verdict

    tr = _default_trace()
    at = run_lesson("bahdanau", lang)
    guess = keyed(at, "radio", "bahdanau.predict.guess")
    guess.set_value(0).run()
    at.button(key="bahdanau.predict.reveal").click().run()
    row = tr.weights[0]
    for j in range(len(tr.source)):  # no second click: each new guess is judged on the spot
        keyed(at, "radio", "bahdanau.predict.guess").set_value(j).run()
        assert not at.exception
        assert not [b for b in at.button if b.key == "bahdanau.predict.reveal"]  # no second click needed
        kind = {"right": at.success, "close": at.warning, "wrong": at.error}[verdict(row, j)]
        assert len(kind) == 1 and f"{row[j]:.2f}" in kind[0].value, (j, verdict(row, j))


def test_step_pickers_follow_the_input():
    at = run_lesson("bahdanau", "en")
    keyed(at, "select_slider", "bahdanau.step").set_value(9).run()
    keyed(at, "selectbox", "bahdanau.predict.step").set_value(9).run()
    at.text_input(key="bahdanau.input").set_value("二〇二六年十二月二日").run()
    assert not at.exception and not at.error
    step = keyed(at, "select_slider", "bahdanau.step")  # a new picker for the new input: step 1
    assert step.value == 0
    from ui.seq2seq import date_trace

    tr = date_trace("二〇二六年十二月二日")
    assert step.options == [f"step {i + 1}: {o.replace(' ', '␣')}" for i, o in enumerate(tr.outputs)]
    assert any(c.value.startswith("y_1 = ") for c in at.code)
    assert keyed(at, "selectbox", "bahdanau.predict.step").value == 0


def test_try_it_slider_starts_where_the_bottleneck_shows():
    from core.seq2seq.explain import bottleneck
    from core.seq2seq.tasks import get_task
    from core.seq2seq.train import CHECKPOINT_DIR, load_checkpoint

    at = run_lesson("seq2seq", "en")
    n = at.slider(key="seq2seq.length").value
    task = get_task("copy")
    plain = load_checkpoint(CHECKPOINT_DIR / "copy-none.safetensors")
    attention = load_checkpoint(CHECKPOINT_DIR / "copy-bahdanau.safetensors")
    long = "thequickbrownfoxjumpsoverthelazydogagain"

    def shows(m):  # the no-attention model wrong, the attention model right: compared to the text itself
        return (
            bottleneck(plain, task, long[:m]).output != long[:m]
            and bottleneck(attention, task, long[:m]).output == long[:m]
        )

    assert shows(n) and not any(shows(m) for m in range(1, n))
    shown = [c.value for c in at.code]
    assert long[:n] in shown  # the page shows that prefix, and each model's answer under it


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


@pytest.mark.parametrize("mode", ["screen", "present", "print"])
def test_candidates_table_is_a_grid_on_screen_and_a_static_table_to_project_or_print(mode):
    at = run_lesson(
        "bahdanau", "en", present=mode == "present", step=3 if mode == "present" else None, print_view=mode == "print"
    )
    assert not at.exception and not at.error

    def candidates(elements):
        return [e.value for e in elements if list(e.value.columns) == ["candidate", "probability"]]

    if mode == "screen":
        assert len(candidates(at.dataframe)) == 1 and candidates(at.table) == []
    else:  # the top-3 candidates of step 1 as a static table that scales and wraps
        assert candidates(at.dataframe) == [] and len(candidates(at.table)) == 1
        frame = candidates(at.table)[0]
        assert len(frame) == 3 and frame["probability"].is_monotonic_decreasing
