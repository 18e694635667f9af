"""Checks across a catalog: both languages cut alike, blocks valid, lesson: links resolve; plus the
per-lesson checks other modules register in :data:`LESSON_CHECKS`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

from core.lessons.markdown import LINK_RE, _blank_comments, prose_lines
from core.lessons.model import LANGS, Lesson, NotUtf8, Problem, read_text, rel
from core.widgets import Block, validate

if TYPE_CHECKING:
    from core.lessons.catalog import Catalog

# Extra checks, run on every lesson by load_catalog (so by `python -m core.lessons check` and the
# app): each takes (lesson, catalog) and returns the problems it finds. Register with
# ``LESSON_CHECKS.append(fn)``; a check that raises becomes a problem on that lesson, not a crash.
LessonCheck = Callable[[Lesson, "Catalog"], Iterable[Problem]]
LESSON_CHECKS: list[LessonCheck] = []


def check_markdown(catalog: Catalog) -> None:
    """Anchors match across languages, every block validates, every lesson: link resolves."""
    steps = {lesson.id: {lang: lesson.steps(lang) for lang in LANGS} for lesson in catalog.lessons}
    anchors = {lid: {lang: [s.anchor for s in st] for lang, st in per.items()} for lid, per in steps.items()}
    for lesson in catalog.lessons:
        per_lang = {lang: steps[lesson.id][lang] for lang in LANGS if _readable(lesson.markdown_path(lang))}
        if len(per_lang) == len(LANGS):
            _check_anchors(lesson, *(per_lang[lang] for lang in LANGS))
        for lang, lang_steps in per_lang.items():
            path = lesson.markdown_path(lang)
            for step in lang_steps:
                for seg in step.segments:
                    if isinstance(seg, Block):
                        for line, reason in validate(seg)[1]:
                            lesson.problems.append(Problem(rel(path), line, reason, in_block=True))
            for lineno, line in prose_lines(lesson.text(lang)):
                for m in LINK_RE.finditer(line):
                    lesson.problems.extend(_check_link(rel(path), lineno, m["id"], m["anchor"], lang, anchors))


def _readable(path: Path) -> bool:
    """Missing and non-UTF-8 files have their own problem; comparing their (empty) steps adds noise."""
    try:
        read_text(path)
    except (OSError, NotUtf8):
        return False
    return True


def _check_anchors(lesson: Lesson, zh: list, en: list) -> None:
    zh_a, en_a = [s.anchor for s in zh], [s.anchor for s in en]
    for i in range(max(len(zh_a), len(en_a))):
        a = zh_a[i] if i < len(zh_a) else None
        b = en_a[i] if i < len(en_a) else None
        if a != b:
            line = en[i].line if i < len(en) else (en[-1].line if en else 1)
            lesson.problems.append(
                Problem(
                    rel(lesson.markdown_path("en")),
                    line,
                    f"step {i} is {b!r} in en.md but {a!r} in zh-TW.md; both languages need "
                    "the same ## sections and {#anchors} in the same order",
                )
            )
            return


def _check_link(where: str, lineno: int, target: str, anchor: str | None, lang: str, anchors: dict) -> list[Problem]:
    if target not in anchors:
        known = ", ".join(sorted(anchors))
        return [Problem(where, lineno, f"link to unknown lesson {target!r} (known: {known})")]
    if anchor and anchor not in anchors[target][lang]:
        return [
            Problem(
                where,
                lineno,
                f"link to unknown anchor #{anchor} in lesson {target!r} "
                f"(its anchors: {', '.join(anchors[target][lang])})",
            )
        ]
    return []


def run_lesson_checks(catalog: Catalog, checks: Iterable[LessonCheck] | None = None) -> None:
    for check in LESSON_CHECKS if checks is None else checks:
        name = getattr(check, "__name__", repr(check))
        for lesson in catalog.lessons:
            try:
                found = list(check(lesson, catalog))
            except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others
                found = [
                    Problem(rel(lesson.folder / "lesson.toml"), 1, f"check {name} failed: {type(exc).__name__}: {exc}")
                ]
            lesson.problems.extend(found)


# --- Bold that CommonMark leaves as asterisks ------------------------------------------------------
# A `**` run opens only if it is left-flanking: the character after it is not whitespace, and if that
# character is punctuation, the one before the run is whitespace, punctuation or the line's edge; a
# closing run is the mirror image. Full-width CJK punctuation (：，。「」（）) counts as punctuation, while
# a CJK character counts as a letter. So `**先猜猜看：**接著` never closes (the run sits between `：`
# and `接`) and `的**「詞」**` never opens: the reader sees the asterisks. The fix: keep the
# punctuation outside the bold (`**先猜猜看**：`), or put the bold inside the link text.

_INLINE = MarkdownIt("commonmark")
_EMPH_RUN = ("**", "__")


def _unrendered_bold(markdown: str, first_line: int = 1) -> list[tuple[int, str]]:
    """(line, text) of every text run in which the parser left `**` or `__` as literal characters."""
    found: list[tuple[int, str]] = []
    for tok in _INLINE.parse(_blank_comments(markdown)):
        if tok.type != "inline" or tok.map is None:
            continue
        line = tok.map[0]
        for child in tok.children or ():
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "text":
                for run in _EMPH_RUN:
                    at = child.content.find(run)
                    if at >= 0:
                        found.append((first_line + line, child.content[max(0, at - 12) : at + 14]))
                        break
    return found


def check_cjk_bold(lesson: Lesson, catalog: Catalog) -> list[Problem]:
    """Bold spans that render with their asterisks showing (prose and lesson-block text), file:line."""
    problems: list[Problem] = []
    for lang in LANGS:
        path = lesson.markdown_path(lang)
        text = lesson.text(lang)
        if not text:
            continue
        spans = _unrendered_bold(text)
        for step in lesson.steps(lang):
            for seg in step.segments:
                if isinstance(seg, Block):
                    for _key, value, line in seg.raw_args:
                        spans += _unrendered_bold(value, line)
        for line, snippet in spans:
            problems.append(
                Problem(
                    rel(path),
                    line,
                    f"bold does not render here, readers see the asterisks (…{snippet.strip()}…): a ** "
                    "next to full-width punctuation (：，。「」（）) on its inner side needs a space or "
                    "punctuation on its outer side; move the punctuation outside the bold (**先猜猜看**：) "
                    "or the bold inside the link ([**詞**](lesson:…))",
                )
            )
    return problems


LESSON_CHECKS.append(check_cjk_bold)
