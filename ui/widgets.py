"""Live widgets that lesson Markdown can embed with a ```widget NAME``` block.

Each widget is one function registered under the name listed in core/widgets.py (which also lists
its arguments, so that ``python -m core.lessons check`` validates blocks without the app). To add
a widget: add its WidgetSpec to core.widgets.WIDGETS, then write

    @register("my-widget")
    def my_widget(args: dict, key: str) -> None:
        ...  # streamlit calls; args are already typed and defaulted

in this file. ``key`` is unique per block and page: prefix every widget key with it.
"""
from __future__ import annotations

from typing import Callable

from core.widgets import Block, validate
from ui import quiz
from ui.i18n import t

Renderer = Callable[[dict, str], None]
RENDERERS: dict[str, Renderer] = {}


def register(name: str) -> Callable[[Renderer], Renderer]:
    def add(fn: Renderer) -> Renderer:
        RENDERERS[name] = fn
        return fn

    return add


def render_block(block: Block, lesson_id: str, where: str) -> None:
    """Draw one block. A block with problems becomes an error card naming file and line."""
    from ui.lesson import error_card  # ui.lesson imports this module

    args, problems = validate(block)
    if problems:
        error_card(t("app.block_error"), [f"{where}:{line}: {reason}" for line, reason in problems],
                   t("app.lesson_error_hint"))
        return
    if block.kind == "quiz":
        quiz.quiz(lesson_id, block, args)
    elif block.kind == "predict":
        quiz.predict(lesson_id, block, args)
    else:
        renderer = RENDERERS.get(block.name)
        if renderer is None:
            error_card(t("app.block_error"), [f"{where}:{block.line}: widget {block.name!r} has no renderer"])
            return
        renderer(args, f"{lesson_id}.{block.key}")


# -- the widgets ------------------------------------------------------------------------------
