"""Quizzes and predict-then-reveal blocks, and the student's progress for the session."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import streamlit as st

from core.widgets import Block
from ui import state
from ui.i18n import t

PROGRESS = "progress"


def _record(lesson_id: str, block: Block, question: str, **fields) -> None:
    book = st.session_state.setdefault(PROGRESS, {})
    book.setdefault(lesson_id, {})[block.key] = {"kind": block.kind, "question": question, **fields}


def progress() -> dict:
    return st.session_state.get(PROGRESS, {})


def summary() -> tuple[int, int, int]:
    """(quizzes answered correctly, quizzes answered, predictions made) over all lessons."""
    items = [item for lesson in progress().values() for item in lesson.values()]
    quizzes = [i for i in items if i["kind"] == "quiz"]
    return (sum(1 for i in quizzes if i.get("correct")), len(quizzes), sum(1 for i in items if i["kind"] == "predict"))


def progress_json() -> str:
    return json.dumps(
        {
            "exported": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "language": state.lang(),
            "lessons": progress(),
        },
        ensure_ascii=False,
        indent=1,
    )


def recorded(lesson_id: str, block: Block) -> dict | None:
    """What the progress holds for this block, if anything."""
    return progress().get(lesson_id, {}).get(block.key)


def quiz(lesson_id: str, block: Block, args: dict) -> None:
    """A multiple-choice question. Every try gets feedback; the progress keeps the FIRST answer
    (a wrong try, then the right one after reading the explanation, scores 0 of 1)."""
    key = f"{lesson_id}.{block.key}"
    options = list(range(len(block.choices)))
    with st.container(border=True):
        st.markdown(f"**{t('quiz.title')}** · {args['question']}")
        if state.printing():  # a handout: the choices as a list, nothing to click
            st.markdown("\n".join(f"- {text}" for _, text in block.choices))
            return
        choice = st.radio(
            t("quiz.choose"),
            options,
            index=None,
            key=f"{key}.choice",
            format_func=lambda i: block.choices[i][1],
            label_visibility="collapsed",
        )
        if st.button(t("quiz.check"), key=f"{key}.check", disabled=choice is None):
            correct = block.choices[choice][0]
            st.session_state[f"{key}.result"] = correct
            if recorded(lesson_id, block) is None:
                _record(lesson_id, block, args["question"], answer=block.choices[choice][1], correct=correct)
        result = st.session_state.get(f"{key}.result")
        if result is not None:
            (st.success if result else st.error)(t("quiz.right") if result else t("quiz.wrong"))
            if args.get("explain"):
                st.markdown(args["explain"])


def predict(lesson_id: str, block: Block, args: dict) -> None:
    key = f"{lesson_id}.{block.key}"
    with st.container(border=True):
        st.markdown(f"**{t('quiz.predict_title')}** · {args['question']}")
        if state.printing():  # a handout: the question alone, no empty box to fill in
            return
        guess = st.text_input(
            t("quiz.your_guess"),
            key=f"{key}.guess",
            max_chars=300,
            placeholder=args.get("placeholder") or t("quiz.guess_placeholder"),
        )
        if st.button(t("quiz.reveal"), key=f"{key}.reveal", disabled=not guess.strip()):
            st.session_state[f"{key}.revealed"] = True
            _record(lesson_id, block, args["question"], guess=guess.strip())
        if st.session_state.get(f"{key}.revealed"):
            st.info(args["answer"], icon=":material/lightbulb:")
