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

# The printable view: text, figures and tables only, on A4 portrait. No sidebar, toolbar or
# controls (text boxes, selects, sliders, radios, buttons, expanders); tables wrap to the page.
CONTROLS = (
    '[data-testid="stTextInput"]',
    '[data-testid="stTextArea"]',
    '[data-testid="stSelectbox"]',
    '[data-testid="stMultiSelect"]',
    '[data-testid="stSlider"]',
    '[data-testid="stRadio"]',
    '[data-testid="stNumberInput"]',
    '[data-testid="stCheckbox"]',
    '[data-testid="stToggle"]',
    '[data-testid="stButton"]',
    '[data-testid="stDownloadButton"]',
    '[data-testid="stExpander"]',
    '[data-testid="stFileUploader"]',
    '[data-testid="stColorPicker"]',
    '[data-testid="stDateInput"]',
    '[data-testid="stTimeInput"]',
    '[data-testid="stSegmentedControl"]',
    '[data-testid="stPills"]',
    '[data-testid="stChatInput"]',
    '[data-testid="stFeedback"]',
)
PRINT_CSS = f"""
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], header[data-testid="stHeader"],
[data-testid="stToolbar"], [data-testid="stBaseButton-secondary"], [data-testid="stBaseButton-primary"],
.modebar-container, [data-testid="stElementToolbar"], [data-testid="stBaseButton-elementToolbar"],
[data-testid="stHeaderActionElements"], {", ".join(CONTROLS)} {{ display: none !important; }}
[data-testid="stMainBlockContainer"] {{ max-width: 46rem; padding-top: 1rem; }}
[data-testid="stTable"], [data-testid="stMarkdownContainer"] table {{ max-width: 100%; overflow: visible; }}
[data-testid="stTable"] table, [data-testid="stMarkdownContainer"] table {{
  width: 100%; table-layout: auto; font-size: 0.8rem; }}
[data-testid="stTable"] td, [data-testid="stTable"] th, [data-testid="stTable"] td *,
[data-testid="stTable"] th *, [data-testid="stMarkdownContainer"] td, [data-testid="stMarkdownContainer"] th {{
  white-space: normal !important; overflow-wrap: anywhere !important; min-width: 0 !important;
  padding-left: 0.2rem !important; padding-right: 0.2rem !important; }}
@page {{ size: A4 portrait; margin: 12mm; }}
@media print {{
  [data-testid="stMain"], [data-testid="stAppViewContainer"] {{ overflow: visible !important; }}
  [data-testid="stMainBlockContainer"] {{ max-width: 100%; padding: 0; }}
}}
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


# Always: a Markdown table wider than the column (lesson 8's f/g table on a phone) scrolls sideways
# instead of losing its last columns.
BASE_CSS = """<style>
[data-testid="stMain"] [data-testid="stMarkdownContainer"] table { display: block; max-width: 100%; overflow-x: auto; }
</style>"""


def apply_presenter_style() -> None:
    """The page's stylesheet, and presenter mode's (ui.theme) when it is on (never in print)."""
    if state.presenter():
        from ui import theme

        st.html(BASE_CSS + theme.presenter_css())
    else:
        st.html(BASE_CSS)


def follow_inputs(key: str, *depends_on) -> str:
    """The key for a widget whose options depend on the input (a token picker over a sentence, a
    step picker over a decoder's output): ``key`` plus a digest of what the options come from.

    When the input changes, the key changes, so the widget is a new one, built with the new
    options and its default, instead of keeping a choice (and a label, such as "10: it") that
    belongs to the old input. While the input stays the same, the choice stays. Code that reads
    the choice without drawing the widget computes the same key from the same input."""
    import hashlib

    digest = hashlib.blake2s(repr(depends_on).encode("utf-8", "surrogatepass"), digest_size=5).hexdigest()
    return f"{key}.{digest}"


def table(data, **kwargs) -> None:
    """A table: an interactive ``st.dataframe`` on screen; a static ``st.table`` in the printable
    view (it wraps to the page, where a data grid would cut off its columns) and in presenter mode
    (its text grows with the page, where a data grid's canvas keeps its small type). ``kwargs``
    go to ``st.dataframe`` (``hide_index`` also to the static table)."""
    if state.printing() or state.presenter():
        import pandas as pd

        frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
        if kwargs.get("hide_index"):
            frame = frame.style.hide(axis="index")
        st.table(frame)
    else:
        st.dataframe(_as_arrow(data) if kwargs.get("hide_index") else data, **kwargs)


def _as_arrow(data):
    """Rows (dicts with the same keys) as an Arrow table, which ``st.dataframe`` sends as it is: from
    a list it builds a DataFrame first (~1.5 ms for a small table, against 0.1 ms). Anything else, or
    rows Arrow cannot type (a column mixing text and numbers), is left for Streamlit to convert."""
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        return data
    keys = list(data[0])
    if any(list(r) != keys for r in data):
        return data
    import pyarrow as pa

    try:
        return pa.Table.from_pylist(data)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return data


def markdown_table(rows: list[dict]) -> str:
    """A small table of the app's own words and numbers as Markdown (every cell through :func:`plain`):
    one Markdown element, where ``st.table`` builds a DataFrame and an Arrow table on every rerun."""
    if not rows:
        return ""
    head = list(rows[0])
    lines = ["| " + " | ".join(plain(h) for h in head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(plain(r.get(h, "")) for h in head) + " |" for r in rows]
    return "\n".join(lines)


# Presenter mode's keys and scrolling, run in a same-origin iframe (Streamlit runs no <script> in
# st.html). The keydown handler (→/PageDown: Next, ←/PageUp: Previous, as a clicker sends) is put
# on the app's document once per load and replaced on the next; keys typed into a control are left
# alone. The frame's text changes with the step, so it reloads after every Next and Previous and
# brings the step into view.
PRESENTER_JS = """<script>
(function () {
  const win = window.parent, doc = win.document;
  const anchor = %(anchor)s, step = %(step)d;
  if (win.__attnlabKeys) doc.removeEventListener("keydown", win.__attnlabKeys, true);
  win.__attnlabKeys = function (e) {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const el = doc.activeElement;
    if (el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) ||
               el.getAttribute("role") === "slider" || el.closest("[data-baseweb=select]"))) return;
    let which = null;
    if (e.key === "ArrowRight" || e.key === "PageDown") which = "next";
    else if (e.key === "ArrowLeft" || e.key === "PageUp") which = "prev";
    if (!which) return;
    const button = doc.querySelector("[class*='-" + which + "-sidebar'] button") ||
                   doc.querySelector("[class*='-" + which + "-main'] button");
    if (!button || button.disabled) return;
    e.preventDefault();
    button.click();
  };
  doc.addEventListener("keydown", win.__attnlabKeys, true);
  function show() {
    const heads = doc.querySelectorAll("[data-testid=stMain] h2");
    const target = step === 0 ? doc.querySelector("[data-testid=stMain] h1")
                 : (anchor && doc.getElementById(anchor)) || heads[heads.length - 1];
    if (target) target.scrollIntoView({block: "start"});
    win.__attnlabShown = step;
  }
  if (win.__attnlabShown !== step) { setTimeout(show, 100); setTimeout(show, 700); }
})();
</script>"""


def presenter_keys(step: int, anchor: str | None) -> None:
    """The keys and the scroll for presenter mode (call in the sidebar, once per run)."""
    import json

    html = PRESENTER_JS % {"anchor": json.dumps(anchor), "step": step}
    with st.container(key="presenter-keys", height=1, border=False):
        st.iframe(html, height=1, tab_index=-1)


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
        self._takes: dict[Callable, bool] = {}  # whether a section takes the inputs, read once
        self._inputs: list[tuple[str, Callable[..., dict]]] = []

    def widget(self, anchor: str):
        """Register ``fn`` to be drawn right after the section with this anchor ("intro" for the intro).
        ``fn()`` or ``fn(inputs)``: a function with a parameter gets the page's :class:`Inputs`."""

        def register(fn: Callable) -> Callable:
            self._widgets.setdefault(anchor, []).append(fn)
            self._takes[fn] = self._has_parameter(fn)
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
    def _has_parameter(fn: Callable) -> bool:
        """A section takes the inputs when it has a parameter without a default (``lambda g=x: ...``
        keeps its own)."""
        return any(
            p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            for p in inspect.signature(fn).parameters.values()
        )

    def _takes_inputs(self, fn: Callable) -> bool:
        return self._takes[fn]

    # -- steps -----------------------------------------------------------------------------------
    def _step_key(self) -> str:
        return f"step.{self.lesson_id}"

    def _current_step(self, total: int) -> int:
        ss, qp = st.session_state, st.query_params
        key = self._step_key()
        # The URL's step counts on arrival (a deep link); after that the buttons own the step.
        if "step" in qp and key not in ss and ss.get("step_owner") in (None, self.lesson_id):
            try:
                ss[key] = int(qp["step"]) - 1  # people count from 1: step 1 is the intro
            except ValueError:
                pass
        ss["step_owner"] = self.lesson_id
        step = max(0, min(int(ss.get(key, 0)), total - 1))
        ss[key] = step
        if state.presenter():
            qp["step"] = str(step + 1)
        elif "step" in qp:
            del qp["step"]
        return step

    def _move(self, delta: int, total: int) -> None:
        key = self._step_key()
        st.session_state[key] = max(0, min(st.session_state.get(key, 0) + delta, total - 1))

    def _step_controls(self, step: int, total: int, where: str) -> None:
        cols = st.columns([1, 2, 1]) if where == "main" else st.columns(2)
        with cols[0]:
            st.button(
                t("app.prev_step"),
                key=f"{self.lesson_id}.prev.{where}",
                disabled=step == 0,
                on_click=self._move,
                args=(-1, total),
                icon=":material/arrow_back:",
            )
        if where == "main":
            cols[1].caption(t("app.step_of", step=step + 1, total=total))
        with cols[-1]:
            st.button(
                t("app.next_step"),
                key=f"{self.lesson_id}.next.{where}",
                disabled=step >= total - 1,
                on_click=self._move,
                args=(1, total),
                type="primary",
                icon=":material/arrow_forward:",
            )

    # -- drawing ---------------------------------------------------------------------------------
    def _run_widgets(self, anchor: str, inputs: Inputs | None, fns: list[Callable]) -> None:
        for fn in fns:
            try:
                if not self._takes_inputs(fn):
                    fn()
                elif inputs is not None:  # None: the inputs failed, and their card says why
                    fn(inputs)
            except Exception as exc:  # a broken widget must not take the lesson down
                failed(exc, f"{self.lesson_id}#{anchor}")

    def _shared(self, anchor: str) -> list[Callable]:
        """The step's sections that take the page's inputs (drawn by :func:`_live_sections`)."""
        return [fn for fn in self._widgets.get(anchor, []) if self._takes_inputs(fn)]

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
        """The lesson: its title, each step's text, the page's inputs and sections, in one of the
        process's compute slots (ui.admission: a class's simultaneous reruns take turns)."""
        from ui import admission

        with admission.slot():
            self._render()

    def _render(self) -> None:
        state.init()
        apply_presenter_style()
        lang = state.lang()
        lesson = catalog().get(self.lesson_id)
        if lesson is None:
            error_card(
                t("app.lesson_error_title"),
                [f"no lesson with id {self.lesson_id!r} in lessons/"],
                t("app.lesson_error_hint"),
            )
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
                error_card(
                    t("app.widget_error"),
                    [
                        f"pages/: widget registered after unknown section #{anchor} "
                        f"(sections: {', '.join(s.anchor for s in steps)})"
                    ],
                )
        if state.printing():
            st.html(PRINT_CSS)
        presenting = state.presenter() and total > 1 and not state.printing()
        upto = self._current_step(total) if presenting else total - 1
        if presenting:
            with st.sidebar:
                st.caption(t("app.step_of", step=upto + 1, total=total))
                self._step_controls(upto, total, "sidebar")
                presenter_keys(upto, steps[upto].anchor if upto else None)
        where = rel(lesson.markdown_path(lang))
        shown = steps[: upto + 1]
        # One container per step, in the lesson's order: each is filled with its text first, then the
        # page's shared inputs (which may live in a later step) and the sections that take them, then
        # its sections that take no inputs.
        slots = {step.anchor: st.container() for step in shown}
        input_anchors = {anchor for anchor, _ in self._inputs}
        # The inputs and the sections that take them are drawn by one fragment, so that changing an
        # input reruns only them; a step that also has sections without inputs keeps the fragment a
        # place before them. Those are drawn now, on full runs only.
        targets = {}
        for step in shown:
            with slots[step.anchor]:
                if step.title:
                    st.header(step.title, anchor=step.anchor)
                for segment in step.segments:
                    if isinstance(segment, str):
                        st.markdown(rewrite_links(segment))
                    else:
                        self._run_block(segment, where)
                own = [fn for fn in self._widgets.get(step.anchor, []) if not self._takes_inputs(fn)]
                if step.anchor in input_anchors or self._shared(step.anchor):
                    targets[step.anchor] = st.container() if own else slots[step.anchor]
                self._run_widgets(step.anchor, None, own)
        if targets:
            _live_sections(self, targets, [s.anchor for s in shown])
        if presenting:
            st.divider()
            self._step_controls(upto, total, "main")


@st.fragment
def _live_sections(page: LessonPage, targets: dict, order: list[str]) -> None:
    """The page's inputs and the sections that take them, each in its step, as one fragment: a change
    to one of those controls (the sentence, a picker, a toggle) reruns only this, not the lessons'
    text, the sections that take no inputs, the sidebar or the navigation (docs/PERFORMANCE.md).
    The places in ``targets`` were made by the full run; a box in each is written on every run, so a
    section that drew nothing then (an empty sentence) still has its place when a later rerun of the
    fragment fills it. A rerun of the fragment alone takes a compute slot, as the whole page does."""
    from ui import admission

    with admission.slot():
        boxes = {anchor: target.container() for anchor, target in targets.items()}
        inputs = page._run_inputs(boxes, order)
        for anchor, box in boxes.items():
            with box:
                page._run_widgets(anchor, inputs, page._shared(anchor))


def render_lesson(lesson_id: str) -> None:
    """The generic page: a lesson's Markdown with no widgets of its own."""
    LessonPage(lesson_id).render()


def render_broken(lesson: Lesson) -> None:
    """The error card that stands in for a lesson that cannot be loaded."""
    state.init()
    apply_presenter_style()
    st.title(lesson.title(state.lang()), anchor=False)
    error_card(t("app.lesson_error_title"), [str(p) for p in lesson.problems], t("app.lesson_error_hint"))
