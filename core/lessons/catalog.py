"""Reading lessons/<NN-slug>/ folders into a catalog. Faults are collected, never raised: one broken
lesson shows its own error card and every other page works."""

from __future__ import annotations

import re
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path

from core.lessons.checks import check_markdown, run_lesson_checks
from core.lessons.model import (
    ID_RE,
    LANGS,
    LOCALES_DIR,
    ROOT,
    Lesson,
    NotUtf8,
    Problem,
    lessons_dir_default,
    read_text,
    rel,
)


def _line_of(text: str, pattern: str) -> int:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if re.match(pattern, line):
            return lineno
    return 1


def _folder_defaults(folder: Path) -> tuple[str, int]:
    m = re.match(r"^(\d+)-(.+)$", folder.name)
    if m:
        return m[2], int(m[1])
    return folder.name, 999


def load_lesson(folder: Path) -> Lesson:
    """Read one lesson folder. Faults are collected on the lesson, never raised."""
    slug, order = _folder_defaults(folder)
    lesson = Lesson(folder=folder, id=slug, order=order, titles={"en": slug, "zh-TW": slug})
    card = _read_card(lesson, folder / "lesson.toml")
    if card is not None:
        _apply_card(lesson, *card)
        _check_texts(lesson)
    return lesson


def _read_card(lesson: Lesson, toml_path: Path) -> tuple[str, dict, str] | None:
    """(raw text, parsed table, where) of lesson.toml, or None with the reason on the lesson."""
    where = rel(toml_path)
    if not toml_path.is_file():
        lesson.problems.append(Problem(where, 1, "lesson.toml is missing"))
        return None
    try:
        raw = read_text(toml_path)
        return raw, tomllib.loads(raw), where
    except NotUtf8 as exc:
        lesson.problems.append(exc.problem)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        lesson.problems.append(Problem(where, int(m[1]) if m else 1, f"lesson.toml does not parse: {exc}"))
    return None


def _apply_card(lesson: Lesson, raw: str, data: dict, where: str) -> None:
    """Copy each valid field of lesson.toml onto the lesson; each invalid one is a problem at its line."""

    def fault(key: str, reason: str) -> None:
        lesson.problems.append(Problem(where, _line_of(raw, rf"\s*\[?{re.escape(key)}\b"), reason))

    lid, order, section = data.get("id"), data.get("order"), data.get("section")
    if not isinstance(lid, str) or not ID_RE.match(lid):
        fault("id", f"id must be lowercase letters, digits and '-', got {lid!r}")
    else:
        lesson.id = lid
    if not isinstance(order, int) or isinstance(order, bool) or order < 0:
        fault("order", f"order must be a whole number >= 0, got {order!r}")
    else:
        lesson.order = order
    if not isinstance(section, str) or not ID_RE.match(section):
        fault("section", f"section must be a short key like 'attention', got {section!r}")
    else:
        lesson.section = section
    icon = data.get("icon")
    if isinstance(icon, str) and icon.strip():
        if icon.strip().startswith(":material/"):
            # A page's icon becomes the browser tab's favicon, which Streamlit fetches from a font
            # CDN for Material icons: offline that is a failed request in every classroom.
            fault("icon", "use one emoji as the icon (Material icons load the favicon from the internet)")
        else:
            lesson.icon = icon.strip()
    titles = data.get("title")
    if not isinstance(titles, dict):
        fault("title", "a [title] table with zh-TW and en is required")
    else:
        for lang in LANGS:
            value = titles.get(lang)
            if not isinstance(value, str) or not value.strip():
                fault("title", f"title.{lang} is missing or empty")
            else:
                lesson.titles[lang] = value.strip()
    page = data.get("page")
    if page is not None:
        if not isinstance(page, str) or not page.endswith(".py"):
            fault("page", f"page must be a path to a .py script, got {page!r}")
        elif not (ROOT / page).is_file():
            fault("page", f"page script {page} does not exist")
        else:
            lesson.page = page


def _check_texts(lesson: Lesson) -> None:
    """Both languages' Markdown exists, is UTF-8 and is not empty."""
    for lang in LANGS:
        md = lesson.markdown_path(lang)
        if not md.is_file():
            lesson.problems.append(Problem(rel(md), 1, f"the {lang} text is missing ({md.name})"))
            continue
        try:
            if not read_text(md).strip():
                lesson.problems.append(Problem(rel(md), 1, f"the {lang} text is empty"))
        except NotUtf8 as exc:
            lesson.problems.append(exc.problem)


@dataclass
class Catalog:
    lessons: list[Lesson]
    problems: list[Problem]  # cross-lesson faults (duplicates, links, locales)

    def get(self, lesson_id: str) -> Lesson | None:
        return next((lesson for lesson in self.lessons if lesson.id == lesson_id), None)

    def all_problems(self) -> list[Problem]:
        out = [p for lesson in self.lessons for p in lesson.problems] + self.problems
        return sorted(set(out), key=lambda p: (p.file, p.line, p.reason))

    def sections(self) -> list[tuple[str, list[Lesson]]]:
        """Sections in the order of their first lesson; lessons in lecture order."""
        groups: dict[str, list[Lesson]] = {}
        for lesson in self.lessons:
            groups.setdefault(lesson.section, []).append(lesson)
        return list(groups.items())


def load_locale_keys(lang: str, locales_dir: Path = LOCALES_DIR) -> dict[str, str]:
    """All UI strings of one language, flattened to dotted keys (file stem first)."""
    keys: dict[str, str] = {}
    folder = locales_dir / lang
    for path in sorted(folder.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))

        def walk(prefix: str, node) -> None:
            for k, v in node.items():
                if isinstance(v, dict):
                    walk(f"{prefix}.{k}", v)
                else:
                    keys[f"{prefix}.{k}"] = str(v)

        walk(path.stem, data)
    return keys


def _check_ids_and_orders(catalog: Catalog) -> None:
    seen_ids: dict[str, Lesson] = {}
    seen_orders: dict[int, Lesson] = {}
    for lesson in catalog.lessons:
        where = rel(lesson.folder / "lesson.toml")
        if lesson.id in seen_ids:
            first = seen_ids[lesson.id]
            lesson.problems.append(Problem(where, 1, f"id {lesson.id!r} is already used by {rel(first.folder)}"))
            lesson.id = f"{lesson.id}-{lesson.folder.name}"
        seen_ids[lesson.id] = lesson
        if lesson.order in seen_orders:
            other = seen_orders[lesson.order]
            catalog.problems.append(Problem(where, 1, f"order {lesson.order} is already used by {rel(other.folder)}"))
        seen_orders.setdefault(lesson.order, lesson)


def _check_section_titles(catalog: Catalog, locales_dir: Path) -> None:
    if not locales_dir.is_dir():
        return
    for lang in LANGS:
        keys = load_locale_keys(lang, locales_dir)
        for section in sorted({lesson.section for lesson in catalog.lessons}):
            if f"nav.section.{section}" not in keys:
                catalog.problems.append(
                    Problem(
                        rel(locales_dir / lang / "nav.toml"),
                        1,
                        f"no title for section {section!r}: add section.{section} to nav.toml",
                    )
                )


def load_catalog(lessons_dir: Path | None = None, locales_dir: Path = LOCALES_DIR) -> Catalog:
    lessons_dir = lessons_dir_default() if lessons_dir is None else lessons_dir
    folders = sorted(p for p in lessons_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    lessons = sorted((load_lesson(f) for f in folders), key=lambda lesson: (lesson.order, lesson.folder.name))
    catalog = Catalog(lessons=lessons, problems=[])
    _check_ids_and_orders(catalog)
    check_markdown(catalog)
    run_lesson_checks(catalog)
    _check_section_titles(catalog, locales_dir)
    from core.glossary import glossary_problems  # core.glossary imports core.lessons

    catalog.problems.extend(glossary_problems(catalog, locales_dir=locales_dir))
    return catalog


_CACHED: tuple[tuple, Catalog] | None = None  # (signature, catalog): one entry, replaced whole
_CACHE_LOCK = threading.Lock()


def _signature(lessons_dir: Path) -> tuple:
    """Every file the catalog depends on, with its modification time (cheap: a few dozen stats)."""
    paths = [
        lessons_dir,
        *lessons_dir.glob("*"),
        *lessons_dir.glob("*/*"),
        ROOT / "pages",
        *(ROOT / "pages").glob("*.py"),
        *LOCALES_DIR.glob("*/nav.toml"),
    ]
    out = []
    for p in sorted(paths):
        try:
            out.append((str(p), p.stat().st_mtime_ns))
        except OSError:  # deleted between the glob and the stat: an editor saving by rename
            continue
    return tuple(out)


def cached_catalog(lessons_dir: Path | None = None) -> Catalog:
    """load_catalog, reread only when a lesson file, page script or section title changed.

    Treat the result as read-only: it is shared by every session of the server. The catalog is
    returned from a local name, never looked up again in the shared cache, which another session
    may replace at any moment (an instructor saving a lesson while students click).
    """
    global _CACHED
    lessons_dir = lessons_dir_default() if lessons_dir is None else lessons_dir
    key = (str(lessons_dir), _signature(lessons_dir))
    hit = _CACHED
    if hit is not None and hit[0] == key:
        return hit[1]
    catalog = load_catalog(lessons_dir)
    with _CACHE_LOCK:
        _CACHED = (key, catalog)
    return catalog
