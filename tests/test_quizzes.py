"""Every quiz's answer key is valid and the same in both languages; AppTest answers every quiz and
predict block of lessons 1-8 in both languages.

The AppTest runs draw a lesson's quiz and predict blocks through the app's own renderer
(ui.widgets.render_block, the code every lesson page uses), without the lesson's live models, so
that all of them can be answered on 2 CPU cores; lesson 1, which has no models, is also answered
on its real page.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.lessons import LANGS, load_catalog
from core.widgets import Block, validate
from tests.apptest import run_lesson

CATALOG = load_catalog()
TAUGHT = [lesson for lesson in CATALOG.lessons if 1 <= lesson.order <= 8]


def blocks(lesson, lang: str, kind: str) -> list[Block]:
    return [seg for step in lesson.steps(lang) for seg in step.segments if isinstance(seg, Block) and seg.kind == kind]


def test_lessons_1_to_8_are_all_here():
    assert [lesson.order for lesson in TAUGHT] == list(range(1, 9))


@pytest.mark.parametrize("lesson", TAUGHT, ids=lambda lesson: lesson.id)
def test_every_lesson_has_a_quiz_with_one_right_answer_and_an_explanation(lesson):
    per_lang = {lang: blocks(lesson, lang, "quiz") for lang in LANGS}
    assert per_lang["en"], f"lesson {lesson.id} has no quiz"
    assert len(per_lang["en"]) == len(per_lang["zh-TW"]), "both languages need the same quizzes"
    for lang, quizzes in per_lang.items():
        for block in quizzes:
            args, problems = validate(block)
            assert not problems, (lang, block.line, problems)
            right = [i for i, (ok, _) in enumerate(block.choices) if ok]
            assert len(right) == 1, f"{lesson.id} {lang}:{block.line}: {len(right)} right answers"
            assert len(args["explain"].strip()) > 40, f"{lesson.id} {lang}:{block.line}: explain the answer"
            texts = [text for _, text in block.choices]
            assert len(set(texts)) == len(texts), f"{lesson.id} {lang}:{block.line}: repeated choice"
    for zh, en in zip(per_lang["zh-TW"], per_lang["en"]):
        assert len(zh.choices) == len(en.choices), (lesson.id, zh.line, en.line)
        assert [ok for ok, _ in zh.choices] == [ok for ok, _ in en.choices], (
            f"{lesson.id}: the right choice differs between zh-TW.md:{zh.line} and en.md:{en.line}"
        )


@pytest.mark.parametrize(
    "lesson", [lesson for lesson in TAUGHT if lesson.order in (4, 5, 6)], ids=lambda lesson: lesson.id
)
def test_lessons_4_to_6_ask_for_a_prediction_with_a_reveal(lesson):
    for lang in LANGS:
        predicts = blocks(lesson, lang, "predict")
        assert predicts, f"{lesson.id} {lang}: no predict block"
        for block in predicts:
            args, problems = validate(block)
            assert not problems and len(args["answer"]) > 40, (lang, block.line, problems)
    assert len(blocks(lesson, "en", "predict")) == len(blocks(lesson, "zh-TW", "predict"))


def _blocks_app(lesson_id: str) -> None:  # runs as its own script inside AppTest
    from core.lessons import load_catalog
    from core.widgets import Block
    from ui import state
    from ui.widgets import render_block

    state.init()
    lesson = load_catalog().get(lesson_id)
    lang = state.lang()
    for step in lesson.steps(lang):
        for seg in step.segments:
            if isinstance(seg, Block) and seg.kind in ("quiz", "predict"):
                render_block(seg, lesson_id, f"{lesson_id}/{lang}.md")


def _answer_all(at: AppTest, lesson, lang: str) -> None:
    """Answer every block: a wrong choice first (it must say so), then the right one."""
    for block in blocks(lesson, lang, "quiz"):
        key = f"{lesson.id}.{block.key}"
        right = next(i for i, (ok, _) in enumerate(block.choices) if ok)
        wrong = next(i for i, (ok, _) in enumerate(block.choices) if not ok)
        args, _ = validate(block)
        at.radio(key=f"{key}.choice").set_value(wrong).run()
        at.button(key=f"{key}.check").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.session_state[f"{key}.result"] is False
        at.radio(key=f"{key}.choice").set_value(right).run()
        at.button(key=f"{key}.check").click().run()
        assert at.session_state[f"{key}.result"] is True, (lesson.id, lang, block.line)
        assert any(m.value == args["explain"] for m in at.markdown), "the explanation is shown"
    for block in blocks(lesson, lang, "predict"):
        key = f"{lesson.id}.{block.key}"
        args, _ = validate(block)
        at.text_input(key=f"{key}.guess").input("my guess").run()
        at.button(key=f"{key}.reveal").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert any(i.value == args["answer"] for i in at.info), (lesson.id, lang, block.line)
    book = at.session_state["progress"][lesson.id]
    quizzes = [item for item in book.values() if item["kind"] == "quiz"]
    # the FIRST answer counts: a wrong try, then the right one after the explanation, scores 0
    assert len(quizzes) == len(blocks(lesson, lang, "quiz")) and not any(q["correct"] for q in quizzes)
    wrong_texts = {next(text for ok, text in b.choices if not ok) for b in blocks(lesson, lang, "quiz")}
    assert {q["answer"] for q in quizzes} <= wrong_texts
    assert sum(item["kind"] == "predict" for item in book.values()) == len(blocks(lesson, lang, "predict"))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", TAUGHT, ids=lambda lesson: lesson.id)
def test_apptest_answers_every_quiz_and_predict_block(lesson, lang):
    at = AppTest.from_function(_blocks_app, args=(lesson.id,), default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]  # no block fell over into an error card
    _answer_all(at, lesson, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_lesson_1_quiz_is_answered_on_its_real_page(lang):
    lesson = CATALOG.get("nlp-tasks")
    at = run_lesson(lesson.id, lang)
    assert not at.exception
    _answer_all(at, lesson, lang)


def test_a_first_right_answer_scores_and_a_later_wrong_one_does_not_undo_it():
    lesson = CATALOG.get("megatron")
    quiz = blocks(lesson, "en", "quiz")[0]
    key = f"megatron.{quiz.key}"
    right = next(i for i, (ok, _) in enumerate(quiz.choices) if ok)
    wrong = next(i for i, (ok, _) in enumerate(quiz.choices) if not ok)
    at = AppTest.from_function(_blocks_app, args=("megatron",), default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    at.radio(key=f"{key}.choice").set_value(right).run()
    at.button(key=f"{key}.check").click().run()
    at.radio(key=f"{key}.choice").set_value(wrong).run()
    at.button(key=f"{key}.check").click().run()
    assert at.session_state[f"{key}.result"] is False  # the feedback is about this try
    item = at.session_state["progress"]["megatron"][quiz.key]
    assert item["correct"] is True and item["answer"] == quiz.choices[right][1]
    right_n = sum(1 for q in at.session_state["progress"]["megatron"].values() if q["kind"] == "quiz" and q["correct"])
    assert right_n == 1


@pytest.mark.parametrize("lang", LANGS)
def test_print_view_shows_questions_and_choices_without_controls(lang):
    lesson = CATALOG.get("megatron")
    at = AppTest.from_function(_blocks_app, args=("megatron",), default_timeout=60)
    at.query_params.update({"lang": lang, "print": "1"})
    at.run()
    assert not at.exception
    assert len(at.radio) == 0 and len(at.text_input) == 0 and len(at.button) == 0
    shown = "\n".join(m.value for m in at.markdown)
    for quiz in blocks(lesson, lang, "quiz"):
        for _, text in quiz.choices:
            assert f"- {text}" in shown
    for block in blocks(lesson, lang, "predict"):
        args, _ = validate(block)
        assert args["question"] in shown and args["answer"] not in shown  # the answer is not given away
