"""The app's frame: navigation built from the lesson catalog, and the sidebar."""

from __future__ import annotations

import streamlit as st

from core.lessons import Lesson
from ui import bert, quiz, state, warmup
from ui import lesson as lesson_ui
from ui.i18n import LANG_NAMES, t


def _page_for(lesson: Lesson) -> st.Page:
    title = lesson.title(state.lang())
    common = dict(title=title, icon=lesson.icon, url_path=lesson.id, default=lesson.order == 0)
    fatal = any(p.file.endswith("lesson.toml") for p in lesson.problems)
    if fatal:

        def broken(lesson=lesson):
            lesson_ui.render_broken(lesson)

        broken.__name__ = f"broken_{lesson.id.replace('-', '_')}"
        return st.Page(broken, **common)
    if lesson.page:
        return st.Page(lesson.page, **common)

    def generic(lesson_id=lesson.id):
        lesson_ui.render_lesson(lesson_id)

    generic.__name__ = f"lesson_{lesson.id.replace('-', '_')}"
    return st.Page(generic, **common)


def navigation() -> st.navigation:
    catalog = lesson_ui.catalog()
    sections = {
        t(f"nav.section.{section}"): [_page_for(lesson) for lesson in lessons]
        for section, lessons in catalog.sections()
    }
    return st.navigation(sections, expanded=True)


def _on_lang() -> None:
    state.set_lang(st.session_state["lang"])


def _on_present() -> None:
    state.set_presenter(st.session_state["present"])


def _device_label() -> str:
    info = warmup.device_info()
    if info is None:
        label = t("app.device_pending")
    elif info["type"] == "cuda":
        label = t("app.device_cuda", name=info["name"])
    else:
        label = t("app.device_cpu", threads=info["threads"])
    return f"{t('app.device')}: {label}"


def recorded_device(recorded: str) -> str:
    """A device as a training manifest recorded it ("cpu (x86_64, 1 threads)", "cuda (…)"), in the
    reader's language; anything else is shown as recorded."""
    import re

    m = re.fullmatch(r"(cpu|cuda|mps)\S*\s*\(([^,()]+),\s*(\d+) threads?\)", str(recorded).strip())
    if not m:
        return str(recorded)
    kind = {"cpu": "CPU", "cuda": "GPU", "mps": "GPU"}[m[1]]
    return t("app.device_recorded", kind=kind, machine=m[2].strip(), threads=int(m[3]))


def sidebar():
    """Draw the sidebar; returns the slots for the device line, the model picker and the progress,
    filled after the page ran (the page may have loaded torch, fallen back from a model that
    failed to load, or recorded an answer by then: the sidebar names what is in use now)."""
    with st.sidebar:
        st.markdown(f"**{t('app.name')}**  \n{t('app.tagline')}")
        st.radio(
            t("app.language"),
            options=list(LANG_NAMES),
            format_func=LANG_NAMES.get,
            key="lang",
            horizontal=True,
            on_change=_on_lang,
        )
        st.toggle(t("app.presenter"), key="present", help=t("app.presenter_help"), on_change=_on_present)
        device_slot = st.empty()  # filled after the page ran: a page may have loaded torch by then
        picker_slot = st.container()
        st.markdown(f"[{t('app.print_view')}](?lang={state.lang()}&print=1)", help=t("app.print_help"))
        progress_slot = st.container()  # filled after the page ran: it may have just recorded an answer
    return device_slot, picker_slot, progress_slot


def _progress() -> None:
    right, answered, predictions = quiz.summary()
    if answered or predictions:
        st.caption(
            f"{t('app.progress')}: {t('app.progress_summary', right=right, answered=answered, predictions=predictions)}"
        )
        st.download_button(
            t("app.progress_download"),
            quiz.progress_json(),
            file_name="attention-lab-progress.json",
            mime="application/json",
            key="progress.download",
            on_click="ignore",
            icon=":material/download:",
        )


def main() -> None:
    state.init()
    page = navigation()
    device_slot, picker_slot, progress_slot = sidebar()
    page.run()
    device_slot.caption(_device_label())
    with picker_slot:
        bert.model_picker()
    with progress_slot:
        _progress()
    warmup.start()
