"""The lesson catalog: lessons/<NN-slug>/ folders read as data, and the check that validates them.

A lesson folder holds ``lesson.toml`` (id, order, section, icon, titles, optional page script) and
the text in ``zh-TW.md`` and ``en.md``. The Markdown is cut into *steps* at level-2 headings; a
heading may carry an anchor, ``## Scores {#scores}``. Internal links are ``[text](lesson:id#anchor)``.

    python -m core.lessons check      # every fault as file:line: reason; exit 1 if any
    python -m core.lessons list       # the catalog in lecture order
    python -m core.lessons new SLUG --title-zh ... --title-en ...
    python -m core.lessons widgets    # the widgets a lesson can embed

The package, by responsibility: ``model`` (the data and reading a file), ``markdown`` (steps and
blocks, with markdown-it-py), ``catalog`` (folders to a catalog, the shared cache), ``checks``
(cross-lesson checks and the :data:`LESSON_CHECKS` hook), ``authoring`` (``new``, ``widgets``),
``cli``. See docs/ARCHITECTURE.md.
"""

from core.lessons.authoring import MD_TEMPLATE, TOML_TEMPLATE, describe_widgets, new_lesson, toml_string
from core.lessons.catalog import Catalog, cached_catalog, load_catalog, load_lesson, load_locale_keys
from core.lessons.checks import LESSON_CHECKS, LessonCheck, check_markdown
from core.lessons.cli import main
from core.lessons.markdown import COMMENT_RE, LINK_RE, prose_lines, split_steps
from core.lessons.model import (
    ID_RE,
    LANGS,
    LESSONS_DIR,
    LOCALES_DIR,
    ROOT,
    Lesson,
    NotUtf8,
    Problem,
    Step,
    read_text,
    rel,
)

__all__ = [
    "COMMENT_RE",
    "ID_RE",
    "LANGS",
    "LESSONS_DIR",
    "LESSON_CHECKS",
    "LINK_RE",
    "LOCALES_DIR",
    "MD_TEMPLATE",
    "ROOT",
    "TOML_TEMPLATE",
    "Catalog",
    "Lesson",
    "LessonCheck",
    "NotUtf8",
    "Problem",
    "Step",
    "cached_catalog",
    "check_markdown",
    "describe_widgets",
    "load_catalog",
    "load_lesson",
    "load_locale_keys",
    "main",
    "new_lesson",
    "prose_lines",
    "read_text",
    "rel",
    "split_steps",
    "toml_string",
]


def _page_serves_lesson(lesson, catalog) -> list:
    """A lesson whose page draws after a step (or reads inputs from one) that a language lacks."""
    from core.page_contract import page_problems  # reads pages/ with ast; imported when checking

    return page_problems(lesson)


LESSON_CHECKS.append(_page_serves_lesson)
