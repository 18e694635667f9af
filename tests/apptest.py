"""AppTest helpers: run one lesson (its page script, or the generic page) in a given language."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from core.lessons import ROOT, load_catalog

TIMEOUT = 120  # seconds; first runs load models on 2 busy cores


def _generic(lesson_id: str) -> None:  # runs as its own script inside AppTest
    from ui.lesson import render_lesson

    render_lesson(lesson_id)


def lesson_app(
    lesson_id: str,
    lang: str = "en",
    present: bool = False,
    step: int | None = None,
    timeout: float = TIMEOUT,
    print_view: bool = False,
) -> AppTest:
    """An AppTest for one lesson, not yet run. Query parameters set language, mode and step."""
    lesson = load_catalog().get(lesson_id)
    assert lesson is not None, f"no lesson {lesson_id!r}"
    if lesson.page:
        at = AppTest.from_file(str(ROOT / lesson.page), default_timeout=timeout)
    else:
        at = AppTest.from_function(_generic, args=(lesson_id,), default_timeout=timeout)
    at.query_params["lang"] = lang
    if present:
        at.query_params["present"] = "1"
    if step is not None:
        at.query_params["step"] = str(step)
    if print_view:
        at.query_params["print"] = "1"
    return at


def run_lesson(lesson_id: str, lang: str = "en", **kwargs) -> AppTest:
    at = lesson_app(lesson_id, lang, **kwargs)
    at.run()
    return at


def texts(at: AppTest) -> str:
    """All visible text of a run, for 'is it on the page' checks."""
    parts = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "text",
        "info",
        "warning",
        "error",
        "success",
        "code",
        "metric",
    ):
        for el in getattr(at, kind, []):
            value = getattr(el, "value", None)
            if value is None:
                value = getattr(el, "label", "")
            parts.append(str(value))
    return "\n".join(parts)


def plotly_values(value):
    """An array from a figure's JSON: a plain list, or the base64 'bdata' form numpy arrays take."""
    if isinstance(value, dict) and "bdata" in value:
        import base64

        import numpy as np

        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if value.get("shape"):
            arr = arr.reshape([int(x) for x in str(value["shape"]).split(",")])
        return arr.tolist()
    return value
