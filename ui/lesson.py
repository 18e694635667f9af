"""Lesson rendering: Markdown steps from lessons/, live widgets from pages/, presenter mode.

A page script builds a :class:`LessonPage`, registers widgets after named sections and calls
``render()``. A lesson without a page script is rendered by the same class with no widgets.
"""
from __future__ import annotations

import inspect
import logging
import re
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Callable

import streamlit as st

from core.lessons import Catalog, Lesson, cached_catalog, rel
from core.widgets import MAX_CHARS
from ui import state
from ui.i18n import t

log = logging.getLogger(__name__)

# Anything that looks like a server path (POSIX, home, or Windows) in an exception message.
PATH_RE = re.compile(r"(?<![\w./])(?:[A-Za-z]:\\|~?/)[^\s'\"]*")
LINK_RE = re.compile(r"\]\(lesson:(?P<id>[A-Za-z0-9_-]+)(?:#(?P<anchor>[A-Za-z0-9_-]+))?\)")

PRESENTER_CSS = """
<style>
[data-testid="stMainBlockContainer"] { max-width: 78rem; }
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] td,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] th { font-size: 1.55rem; line-height: 1.5; }
[data-testid="stMain"] h1 { font-size: 3.2rem; }
[data-testid="stMain"] h2 { font-size: 2.4rem; }
[data-testid="stMain"] label p, [data-testid="stMain"] button p { font-size: 1.3rem; }
</style>
"""

# The printable view: no sidebar, no toolbar, no buttons; the browser's print dialog does the rest.
PRINT_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], header[data-testid="stHeader"],
[data-testid="stToolbar"], [data-testid="stBaseButton-secondary"], [data-testid="stBaseButton-primary"],
[data-testid="stDownloadButton"], .modebar-container { display: none !important; }
[data-testid="stMainBlockContainer"] { max-width: 52rem; padding-top: 1rem; }
@media print { [data-testid="stMain"] { overflow: visible !important; } }
</style>
"""


def catalog() -> Catalog:
    """The lesson catalog; an instructor's edit shows on the next reload (files are re-stat'ed)."""
    return cached_catalog()


def lesson_url(lesson_id: str, anchor: str | None = None, step: int | None = None) -> str:
    params = [f"lang={state.lang()}"]
    if state.presenter():
        params.append("present=1")
    if step is not None:
        params.append(f"step={step}")
    return f"./{lesson_id}?{'&'.join(params)}" + (f"#{anchor}" if anchor else "")


def rewrite_links(markdown: str) -> str:
    """``[text](lesson:id#anchor)`` becomes a link into the app that keeps language and mode."""
    return LINK_RE.sub(lambda m: f"]({lesson_url(m['id'], m['anchor'])})", markdown)


def apply_presenter_style() -> None:
    if state.presenter():
        st.html(PRESENTER_CSS)


@contextmanager
def advanced(label: str | None = None):
    """Advanced controls: open for a student, folded away in presenter mode."""
    with st.expander(label or t("app.advanced"), expanded=not state.presenter()):
        yield


def notice(code: str, **fmt) -> None:
    """A translated notice about the input (capped, cleaned, empty)."""
    text = t(f"notice.{code}", **fmt)
    (st.info if code == "empty" else st.warning)(text, icon=":material/info:")


def notices(codes, **fmt) -> None:
    for code in codes:
        notice(code, **fmt)


def text_box(label: str, *, key: str, value: str, max_chars: int = MAX_CHARS) -> str | None:
    """A text box whose content is cleaned (core.text.clean): control and invisible characters
    removed, length capped, each with a notice. None, after a notice, when nothing is left."""
    from core.text import clean

    cleaned = clean(st.text_input(label, value=value, key=key, max_chars=max_chars * 5), max_chars)
    notices(cleaned.notices, limit=max_chars)
    return None if "empty" in cleaned.notices else cleaned.text


def tokens_capped(truncated: bool, total, limit: int) -> None:
    """The notice for input cut to ``limit`` tokens."""
    if truncated:
        notice("tokens_capped", limit=limit, total=total)


def plain(text) -> str:
    """``text`` escaped so that Streamlit's Markdown (st.caption, st.markdown, t() strings) shows it
    as written: every ASCII punctuation mark gets a backslash (CommonMark's escape), which also
    defuses Streamlit's extras (``:material/x:``, ``:red[...]``, ``$math$``). For names a user or
    an instructor chose, e.g. a model's folder name."""
    return "".join("\\" + c if c in _PUNCT else c for c in str(text)).replace("\n", " ")


_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def error_card(title: str, lines: list[str], hint: str | None = None) -> None:
    """The app's own error card. Tracebacks never reach a page: callers log them (see failed())."""
    with st.container(border=True):
        st.error(title, icon=":material/error:")
        for line in lines:
            st.code(line, language=None)
        if hint:
            st.caption(hint)


def failed(exc: Exception, where: str) -> None:
    """A widget raised: the traceback goes to the server log, the student gets a card that says what
    broke and what to do, without server paths or stack frames."""
    log.error("widget failed at %s", where, exc_info=exc)
    reason = PATH_RE.sub("…", str(exc))[:300]
    error_card(t("app.widget_error"), [f"{where}: {type(exc).__name__}: {reason}"], t("app.widget_error_hint"))


class Inputs(SimpleNamespace):
    """A page's shared inputs, as its ``@page.inputs`` functions returned them."""


class LessonPage:
    """A lesson's Markdown with the page's own sections drawn after named steps.

    Shared inputs (a sentence, a layer and head, a toggle several figures follow) are declared once
    with ``@page.inputs(anchor)``: the function draws its controls in the step ``anchor`` and returns
    a dict of values. Every ``@page.inputs`` function runs before any section, in the order they
    were declared, and every section that takes an argument gets them all as one
    :class:`Inputs`; so the lesson's Markdown may put its steps in any order. When the inputs' step
    is not shown (presenter mode, before that step), the function is called with ``show=False`` and
    returns the values without drawing controls (the session's last values, or the defaults).
    """

    def __init__(self, lesson_id: str):
        self.lesson_id = lesson_id
        self._widgets: dict[str, list[Callable]] = {}
        self._inputs: list[tuple[str, Callable[..., dict]]] = []

    def widget(self, anchor: str):
        """Register ``fn`` to be drawn right after the section with this anchor ("intro" for the intro).
        ``fn()`` or ``fn(inputs)``: a function with a parameter gets the page's :class:`Inputs`."""

        def register(fn: Callable) -> Callable:
            self._widgets.setdefault(anchor, []).append(fn)
            return fn

        return register

    def inputs(self, anchor: str):
        """Register ``fn(inputs, show) -> dict``: shared inputs whose controls live in step ``anchor``.
        ``inputs`` holds what earlier ``@page.inputs`` functions returned."""

        def register(fn: Callable[..., dict]) -> Callable[..., dict]:
            self._inputs.append((anchor, fn))
            return fn

        return register

    @staticmethod
    def _takes_inputs(fn: Callable) -> bool:
        """A section takes the inputs when it has a parameter without a default (``lambda g=x: ...``
        keeps its own)."""
        return any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                   for p in inspect.signature(fn).parameters.values())

    # -- steps -----------------------------------------------------------------------------------
    def _step_key(self) -> str:
        return f"step.{self.lesson_id}"

    def _current_step(self, total: int) -> int:
        ss, qp = st.session_state, st.query_params
        key = self._step_key()
        # The URL's step counts on arrival (a deep link); after that the buttons own the step.
        if "step" in qp and key not in ss and ss.get("step_owner") in (None, self.lesson_id):
            try:
                ss[key] = int(qp["step"])
            except ValueError:
                pass
        ss["step_owner"] = self.lesson_id
        step = max(0, min(int(ss.get(key, 0)), total - 1))
        ss[key] = step
        if state.presenter():
            qp["step"] = str(step)
        elif "step" in qp:
            del qp["step"]
        return step

    def _move(self, delta: int, total: int) -> None:
        key = self._step_key()
        st.session_state[key] = max(0, min(st.session_state.get(key, 0) + delta, total - 1))

    def _step_controls(self, step: int, total: int, where: str) -> None:
        cols = st.columns([1, 2, 1]) if where == "main" else st.columns(2)
        with cols[0]:
            st.button(t("app.prev_step"), key=f"{self.lesson_id}.prev.{where}", disabled=step == 0,
                      on_click=self._move, args=(-1, total), icon=":material/arrow_back:")
        if where == "main":
            cols[1].caption(t("app.step_of", step=step + 1, total=total))
        with cols[-1]:
            st.button(t("app.next_step"), key=f"{self.lesson_id}.next.{where}", disabled=step >= total - 1,
                      on_click=self._move, args=(1, total), type="primary", icon=":material/arrow_forward:")

    # -- drawing ---------------------------------------------------------------------------------
    def _run_widgets(self, anchor: str, inputs: Inputs | None) -> None:
        for fn in self._widgets.get(anchor, []):
            try:
                if not self._takes_inputs(fn):
                    fn()
                elif inputs is not None:  # None: the inputs failed, and their card says why
                    fn(inputs)
            except Exception as exc:  # a broken widget must not take the lesson down
                failed(exc, f"{self.lesson_id}#{anchor}")

    def _run_inputs(self, slots: dict, order: list[str]) -> Inputs | None:
        """Every ``@page.inputs`` function, each in its step's slot (or, when that step is not shown,
        undrawn). None when nothing shown needs them, or when one failed (after its error card)."""
        needing = [a for a in order if any(self._takes_inputs(fn) for fn in self._widgets.get(a, []))]
        if not self._inputs or not needing:
            return Inputs()
        values = Inputs()
        for anchor, fn in self._inputs:
            show = anchor in slots
            try:
                with slots[anchor if show else needing[0]]:
                    values.__dict__.update(fn(values, show) or {})
            except Exception as exc:
                with slots[anchor if show else needing[0]]:
                    failed(exc, f"{self.lesson_id}#{anchor}")
                return None
        return values

    def _run_block(self, block, where: str) -> None:
        from ui.widgets import render_block  # widgets pull in their own (heavier) modules lazily

        try:
            render_block(block, self.lesson_id, where)
        except Exception as exc:
            failed(exc, f"{where}:{block.line}")

    def render(self) -> None:
        state.init()
        apply_presenter_style()
        lang = state.lang()
        lesson = catalog().get(self.lesson_id)
        if lesson is None:
            error_card(t("app.lesson_error_title"), [f"no lesson with id {self.lesson_id!r} in lessons/"],
                       t("app.lesson_error_hint"))
            return
        st.title(lesson.title(lang), anchor=False)
        problems = [p for p in lesson.problems if not p.in_block]  # block faults show in place
        if problems:
            error_card(t("app.lesson_error_title"), [str(p) for p in problems], t("app.lesson_error_hint"))
        steps = lesson.steps(lang)
        if not lesson.text(lang).strip():
            st.info(t("app.lesson_missing_text"))
            return
        total = len(steps)
        known = {s.anchor for s in steps}
        for anchor in list(self._widgets) + [a for a, _ in self._inputs]:
            if anchor not in known:
                error_card(t("app.widget_error"),
                           [f"pages/: widget registered after unknown section #{anchor} "
                            f"(sections: {', '.join(s.anchor for s in steps)})"])
        if state.printing():
            st.html(PRINT_CSS)
        presenting = state.presenter() and total > 1 and not state.printing()
        upto = self._current_step(total) if presenting else total - 1
        if presenting:
            with st.sidebar:
                st.caption(t("app.step_of", step=upto + 1, total=total))
                self._step_controls(upto, total, "sidebar")
        where = rel(lesson.markdown_path(lang))
        shown = steps[: upto + 1]
        # One container per step, in the lesson's order: each is filled with its text first, then the
        # page's shared inputs (which may live in a later step), then its sections.
        slots = {step.anchor: st.container() for step in shown}
        for step in shown:
            with slots[step.anchor]:
                if step.title:
                    st.header(step.title, anchor=step.anchor)
                for segment in step.segments:
                    if isinstance(segment, str):
                        st.markdown(rewrite_links(segment))
                    else:
                        self._run_block(segment, where)
        inputs = self._run_inputs(slots, [s.anchor for s in shown])
        for step in shown:
            with slots[step.anchor]:
                self._run_widgets(step.anchor, inputs)
        if presenting:
            st.divider()
            self._step_controls(upto, total, "main")


def render_lesson(lesson_id: str) -> None:
    """The generic page: a lesson's Markdown with no widgets of its own."""
    LessonPage(lesson_id).render()


def render_broken(lesson: Lesson) -> None:
    """The error card that stands in for a lesson that cannot be loaded."""
    state.init()
    apply_presenter_style()
    st.title(lesson.title(state.lang()), anchor=False)
    error_card(t("app.lesson_error_title"), [str(p) for p in lesson.problems], t("app.lesson_error_hint"))
