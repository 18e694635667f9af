"""Per-session settings that come from the address bar: language, presenter mode, step.

``?step=N`` (N counts from 1; step 1 is the lesson's intro) opens presenter mode at that step.
The printable view (``?print=1``) is never in presenter mode, whatever the address says.

Precedence for the language: ``?lang=`` in the URL, else what the session chose, else the
browser's locale (st.context.locale), else zh-TW, the lecture's language. The chosen values are
written back to the URL so that every view is a deep link.
"""

from __future__ import annotations

import streamlit as st

LANGS = ("zh-TW", "en")
DEFAULT_LANG = "zh-TW"
TRUE = {"1", "true", "yes", "on"}


def _lang_from_locale(locale: str | None) -> str | None:
    if not locale:
        return None
    low = locale.lower()
    if low.startswith("zh"):
        return "zh-TW"
    if low.startswith("en"):
        return "en"
    return None


def _normalise_lang(value: str | None) -> str | None:
    if not value:
        return None
    low = value.strip().lower().replace("_", "-")
    for lang in LANGS:
        if low == lang.lower():
            return lang
    return _lang_from_locale(low)


def init() -> None:
    """Resolve language and presenter mode for this run (cheap; call at the top of every run)."""
    ss = st.session_state
    qp = st.query_params
    url_lang = _normalise_lang(qp.get("lang"))
    if url_lang:
        if ss.get("lang") != url_lang:  # never touch a widget's key needlessly (it may be drawn already)
            ss["lang"] = url_lang
    elif "lang" not in ss:
        try:
            locale = st.context.locale
        except Exception:  # no browser (bare mode)
            locale = None
        ss["lang"] = _lang_from_locale(locale) or DEFAULT_LANG
    if "step" in qp and "present" not in qp and not printing():
        qp["present"] = "1"  # a deep link to a step is a presenter link
    if "present" in qp:
        want = qp.get("present", "").lower() in TRUE
        if ss.get("present") != want:
            ss["present"] = want
    if "present" not in ss:
        ss["present"] = False
    # Keep the address bar a deep link to what is on screen.
    if qp.get("lang") != ss["lang"]:
        qp["lang"] = ss["lang"]
    if ss["present"] and qp.get("present") != "1":
        qp["present"] = "1"
    elif not ss["present"] and "present" in qp:
        del qp["present"]


def lang() -> str:
    # one session-state lookup: t() asks ~200 times a lesson rerun
    try:
        return st.session_state["lang"]
    except KeyError:
        init()
        return st.session_state["lang"]


def presenter() -> bool:
    """Presenter mode: on by the sidebar toggle, ``?present=1`` or ``?step=N``; never in print."""
    if "present" not in st.session_state:
        init()
    return bool(st.session_state["present"]) and not printing()


def printing() -> bool:
    """The printable view (``?print=1``): every step, static figures, no sidebar."""
    return st.query_params.get("print", "") in TRUE


def set_lang(value: str) -> None:
    st.session_state["lang"] = _normalise_lang(value) or DEFAULT_LANG
    st.query_params["lang"] = st.session_state["lang"]


def set_presenter(on: bool) -> None:
    st.session_state["present"] = bool(on)
    if on:
        st.query_params["present"] = "1"
    else:
        for name in ("present", "step"):  # a step left in the address would switch it back on
            if name in st.query_params:
                del st.query_params[name]
