"""Every lesson runs under AppTest in both languages; presenter mode; broken lessons."""

from __future__ import annotations

import shutil

import pytest
from streamlit.testing.v1 import AppTest

from core.lessons import LANGS, ROOT, load_catalog
from tests.apptest import run_lesson, texts

CATALOG = load_catalog()


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson_id", [lesson.id for lesson in CATALOG.lessons])
def test_every_lesson_renders_in_both_languages(lesson_id, lang):
    lesson = CATALOG.get(lesson_id)
    at = run_lesson(lesson_id, lang)
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title][0] == lesson.title(lang)
    headers = [h.value for h in at.header]
    for step in lesson.steps(lang):
        if step.title:
            assert step.title in headers
    # no widget fell over into an error card
    assert not [e.value for e in at.error], [e.value for e in at.error]


def test_app_entry_builds_navigation_and_sidebar():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception
    assert at.title[0].value == "Home: the course map"
    assert at.radio(key="lang").value == "en"
    assert at.toggle(key="present").value is False
    assert any(c.value.startswith("Device:") for c in at.sidebar.caption)
    # switching language keeps the lesson and re-renders in Chinese
    at.radio(key="lang").set_value("zh-TW").run()
    assert at.title[0].value == "首頁：課程地圖"
    assert at.query_params["lang"] == "zh-TW"


def test_presenter_mode_reveals_one_step_at_a_time():
    lesson = CATALOG.get("nlp-tasks")
    steps = lesson.steps("en")
    at = run_lesson("nlp-tasks", "en", present=True)
    assert not at.exception
    assert [h.value for h in at.header] == []  # only the intro
    assert at.query_params["step"] == "1"  # people count from 1: step 1 is the intro
    at.button(key="nlp-tasks.next.main").click().run()
    assert [h.value for h in at.header] == [steps[1].title]
    assert at.query_params["step"] == "2"
    assert at.caption[-1].value == f"Step 2 of {len(steps)}"  # the URL and the step counter agree
    at.button(key="nlp-tasks.next.sidebar").click().run()
    assert [h.value for h in at.header] == [steps[1].title, steps[2].title]
    at.button(key="nlp-tasks.prev.main").click().run()
    assert len(at.header) == 1


def test_deep_link_to_a_step():
    lesson = CATALOG.get("nlp-tasks")
    at = run_lesson("nlp-tasks", "zh-TW", present=True, step=3)  # step 3: the intro and two sections
    assert [h.value for h in at.header] == [s.title for s in lesson.steps("zh-TW")[1:3]]
    assert at.query_params["step"] == "3"
    assert f"第 3 步，共 {len(lesson.steps('zh-TW'))} 步" in [c.value for c in at.sidebar.caption]
    at = run_lesson("nlp-tasks", "en", present=True, step=1)
    assert [h.value for h in at.header] == []  # step 1 is the intro alone
    last = len(lesson.steps("en")) - 1
    at = run_lesson("nlp-tasks", "en", present=True, step=99)  # clamped, never an error
    assert len(at.header) == last and not at.exception
    at = run_lesson("nlp-tasks", "en", step=0)  # below 1: the intro
    assert len(at.header) == 0 and at.query_params["step"] == "1" and not at.exception


def test_a_step_link_opens_presenter_mode_and_turning_it_off_forgets_the_step():
    lesson = CATALOG.get("nlp-tasks")
    at = run_lesson("nlp-tasks", "en", step=2)  # no present=1 in the address
    assert at.session_state["present"] is True and at.query_params["present"] == "1"
    assert [h.value for h in at.header] == [lesson.steps("en")[1].title]
    # what the sidebar toggle's callback does: no step left behind to switch presenter mode back on
    at = AppTest.from_function(_toggle_off_script, default_timeout=30)
    at.query_params.update({"lang": "en", "step": "2"})
    at.run()
    assert "step" not in at.query_params and "present" not in at.query_params
    assert len(at.header) == len(lesson.steps("en")) - 1  # every step again


def _toggle_off_script():
    import streamlit as st

    from ui import state
    from ui.lesson import LessonPage

    state.init()
    if not st.session_state.get("toggled"):
        st.session_state["toggled"] = True
        state.set_presenter(False)
    LessonPage("nlp-tasks").render()


def go_figure(height: int):
    import plotly.graph_objects as go

    return go.Figure(go.Bar(y=[1, 2]), layout={"height": height})


def test_presenter_mode_scales_text_and_every_figure_but_print_never_does():
    def script():
        import plotly.graph_objects as go

        from ui import figures
        from ui.lesson import apply_presenter_style

        apply_presenter_style()
        fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], texttemplate="%{z}", textfont={"size": 10}))
        fig.update_layout(
            height=300,
            title={"text": "t", "font": {"size": 16}},
            margin={"l": 10, "t": 40},
            xaxis={"tickfont": {"size": 11}},
            legend={"font": {"size": 9}},
        )
        fig.add_annotation(text="a", font={"size": 8})
        figures.show(fig, key="f")

    import json

    from ui.theme import SCALE

    def run(**params):
        at = AppTest.from_function(script, default_timeout=30)
        at.query_params.update({"lang": "en", **params})
        at.run()
        assert not at.exception
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)
        css = "".join(h.proto.body for h in at.get("html"))
        return spec, css

    normal, normal_css = run()
    big, big_css = run(present="1")
    printed, printed_css = run(present="1", print="1")
    lay, big_lay = normal["layout"], big["layout"]
    assert SCALE > 1
    assert big_lay["height"] == round(300 * SCALE) and lay["height"] == 300
    from ui.theme import MAX_HEIGHT_PX, scaled_figure

    assert scaled_figure(go_figure(700)).layout.height == MAX_HEIGHT_PX  # still fits a 1080p window
    assert scaled_figure(go_figure(1200)).layout.height == 1200  # never shrinks
    assert big_lay["title"]["font"]["size"] == pytest.approx(16 * SCALE)
    assert big_lay["xaxis"]["tickfont"]["size"] == pytest.approx(11 * SCALE)
    assert big_lay["legend"]["font"]["size"] == pytest.approx(9 * SCALE)
    assert big_lay["annotations"][0]["font"]["size"] == pytest.approx(8 * SCALE)
    assert big_lay["font"]["size"] == pytest.approx(12 * SCALE)  # Plotly's default, set and scaled
    assert big_lay["margin"]["l"] == round(10 * SCALE) and big_lay["margin"]["t"] == round(40 * SCALE)
    assert big["data"][0]["textfont"]["size"] == pytest.approx(10 * SCALE)
    # sizes Streamlit's chart theme would otherwise pin at its own (12 px ticks, 14 px axis titles)
    assert big_lay["yaxis"]["tickfont"]["size"] == pytest.approx(12 * SCALE)
    assert big_lay["xaxis"]["title"]["font"]["size"] == pytest.approx(14 * SCALE)
    assert big["data"][0]["colorbar"]["tickfont"]["size"] == pytest.approx(12 * SCALE)
    assert "tickfont" not in lay.get("yaxis", {})  # outside presenter mode, the theme decides
    assert (
        "stMetricValue" in big_css
        and "stSliderThumbValue" in big_css
        and "stSliderTickBar" in big_css
        and "stCaptionContainer" in big_css
    )
    assert "stMetricValue" not in normal_css
    # print is never presenter-sized, even with present=1 in the address
    assert printed["layout"] == {**printed["layout"], "height": 300}
    assert printed["layout"]["title"]["font"]["size"] == 16
    assert "stMetricValue" not in printed_css


def test_broken_lesson_shows_an_error_card_and_the_rest_works(tmp_path, monkeypatch):
    lessons = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    (lessons / "00-home" / "lesson.toml").write_text('id = "home"\norder = = 0\n', encoding="utf-8")
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(lessons))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception
    assert at.error[0].value == "This lesson could not be shown"
    assert any("00-home/lesson.toml:2: lesson.toml does not parse" in c.value for c in at.code)
    # the other lessons still load from the same folder
    ok = run_lesson("nlp-tasks", "en")
    assert not ok.exception and ok.title[0].value == "The four families of NLP tasks"


def test_failing_widget_becomes_an_error_card():
    def script():
        from ui.lesson import LessonPage

        page = LessonPage("nlp-tasks")

        @page.widget("labeling")
        def boom():
            raise RuntimeError("widget exploded")

        page.render()

    at = AppTest.from_function(script, default_timeout=30)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception
    assert "This part of the lesson failed" in at.error[0].value
    assert any("RuntimeError: widget exploded" in c.value for c in at.code)
    assert "Family four: generation" in [h.value for h in at.header]  # the rest rendered


def test_sections_get_the_page_inputs_and_closures_keep_their_defaults():
    def script():
        import streamlit as st

        from ui.lesson import LessonPage

        page = LessonPage("nlp-tasks")

        @page.widget("labeling")  # drawn before the step that holds the inputs
        def uses(inp):
            st.text(f"labeling sees {inp.word}")

        @page.inputs("generation")
        def word(inp, show):
            return {"word": st.text_input("word", value="attention", key="w") if show else "attention"}

        page.widget("intro")(lambda g="own default": st.text(f"intro keeps {g}"))
        page.render()

    at = AppTest.from_function(script, default_timeout=30)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception and not at.error
    shown = [x.value for x in at.text]
    assert "labeling sees attention" in shown and "intro keeps own default" in shown
    at.text_input(key="w").input("softmax").run()
    assert "labeling sees softmax" in [x.value for x in at.text]


def test_no_traceback_reaches_the_page_when_a_widget_raises(caplog):
    import logging
    import tomllib

    def script():
        from ui.lesson import LessonPage

        page = LessonPage("nlp-tasks")

        def load(path):
            raise FileNotFoundError(f"[Errno 2] No such file or directory: '{path}'")

        @page.widget("labeling")
        def boom():
            load("/srv/secret/models/config.json")

        page.render()

    caplog.set_level(logging.ERROR)
    at = AppTest.from_function(script, default_timeout=30)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception
    shown = texts(at) + "\n".join(e.label for e in at.expander)
    assert "This part of the lesson failed" in shown and "FileNotFoundError" in shown
    for secret in ("Traceback", "/srv/secret", 'File "', "line ", "raise "):
        assert secret not in shown, secret
    assert "Traceback" in caplog.text and "/srv/secret/models/config.json" in caplog.text  # the server log has it
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["showErrorDetails"] == "none"  # Streamlit's own exception box sends no trace


def test_printable_view_shows_every_step_even_in_presenter_mode():
    lesson = CATALOG.get("nlp-tasks")
    at = run_lesson("nlp-tasks", "en", present=True, step=0, print_view=True)
    assert not at.exception
    assert [h.value for h in at.header] == [s.title for s in lesson.steps("en")[1:]]
    assert not [b for b in at.button if b.key and b.key.startswith("nlp-tasks.next")]


def test_after_a_failed_model_load_the_sidebar_names_the_model_in_use():
    from ui import bert

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["lang"] = "en"
    at.run()
    at.switch_page("pages/04_self_attention.py").run()
    assert not at.exception
    in_use = at.session_state[bert.LOADED_KEY]["name"]  # what the lesson's figures were computed with
    at.text_input(key=bert.INPUT_KEY).input("no-such-model-folder").run()
    at.button(key="bert.load_button").click().run()
    assert not at.exception
    loaded = at.session_state[bert.LOADED_KEY]
    assert loaded["code"] and loaded["name"] == in_use  # the page fell back to the default
    from core.bert.loader import DEFAULT_MODEL_NAME, EMBEDDED_NAME
    from core.lessons import load_locale_keys

    en = load_locale_keys("en")
    expected = {EMBEDDED_NAME: en["bert.default_name"], DEFAULT_MODEL_NAME: en["bert.lab_name"]}.get(in_use, in_use)
    named = [x.value for x in at.sidebar.text]
    assert expected in named  # on the same run, not one click later
    assert not any("no-such-model-folder" in x for x in named)
