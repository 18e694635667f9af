"""Lesson 9: the glossary, one table per group (layout only; core.glossary reads the terms)."""

import streamlit as st

from ui import lesson, state
from ui.i18n import t

P = "glossary"
page = lesson.LessonPage(P)


@st.cache_data(show_spinner=False)
def _terms():
    from core.glossary import load_terms

    return load_terms()[0]


@page.widget("intro")
def search():
    st.text_input(t("glossary.filter"), key=f"{P}.filter", max_chars=100, placeholder=t("glossary.filter_placeholder"))


def _table(group: str) -> None:
    lang = state.lang()
    other = "en" if lang == "zh-TW" else "zh-TW"
    query = (st.session_state.get(f"{P}.filter") or "").strip().casefold()
    terms = [term for term in _terms() if term.group == group]
    shown = [
        term
        for term in terms
        if not query
        or any(
            query in text.casefold()
            for text in (term.en, term.zh, term.define_en, term.define_zh, *term.avoid_en, *term.avoid_zh)
        )
    ]
    if not shown:
        st.caption(t("glossary.none", q=query.replace("`", "'")))  # a code span: shown as typed
        return
    lesson.table(
        [
            {
                t("glossary.col_term"): term.term(lang),
                t("glossary.col_other"): term.term(other),
                t("glossary.col_avoid"): "、".join(term.avoid(lang))
                if lang == "zh-TW"
                else ", ".join(term.avoid(lang)),
                t("glossary.col_define"): term.define(lang),
            }
            for term in shown
        ],
        hide_index=True,
    )
    if query:
        st.caption(t("glossary.count", n=len(shown), total=len(terms)))


for _group in ("attention", "models", "training", "parallel", "usage"):
    page.widget(_group)(lambda g=_group: _table(g))

page.render()
