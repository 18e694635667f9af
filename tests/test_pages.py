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
    at.button(key="nlp-tasks.next.main").click().run()
    assert [h.value for h in at.header] == [steps[1].title]
    assert at.query_params["step"] == "1"
    at.button(key="nlp-tasks.next.sidebar").click().run()
    assert [h.value for h in at.header] == [steps[1].title, steps[2].title]
    at.button(key="nlp-tasks.prev.main").click().run()
    assert len(at.header) == 1


def test_deep_link_to_a_step():
    lesson = CATALOG.get("nlp-tasks")
    at = run_lesson("nlp-tasks", "zh-TW", present=True, step=3)
    assert [h.value for h in at.header] == [s.title for s in lesson.steps("zh-TW")[1:4]]
    last = len(lesson.steps("en")) - 1
    at = run_lesson("nlp-tasks", "en", present=True, step=99)  # clamped, never an error
    assert len(at.header) == last and not at.exception


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
