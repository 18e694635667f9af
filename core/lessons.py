"""The lesson catalog: lessons/<NN-slug>/ folders read as data, and the check that validates them.

A lesson folder holds ``lesson.toml`` (id, order, section, icon, titles, optional page script) and
the text in ``zh-TW.md`` and ``en.md``. The Markdown is cut into *steps* at level-2 headings; a
heading may carry an anchor, ``## Scores {#scores}``. Internal links are ``[text](lesson:id#anchor)``.

    python -m core.lessons check      # every fault as file:line: reason; exit 1 if any
    python -m core.lessons list       # the catalog in lecture order
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# ATTENTION_LAB_LESSONS points the app at another lessons folder (tests use it for broken copies).
LESSONS_DIR = Path(os.environ.get("ATTENTION_LAB_LESSONS", ROOT / "lessons"))
LOCALES_DIR = ROOT / "ui" / "locales"
LANGS = ("zh-TW", "en")
ID_RE = re.compile(r"^[a-z][a-z0-9-]*$")
HEADING_RE = re.compile(r"^##\s+(?P<title>.*?)\s*(?:\{#(?P<anchor>[A-Za-z0-9_-]+)\})?\s*$")
LINK_RE = re.compile(r"\]\(lesson:(?P<id>[A-Za-z0-9_-]*)(?:#(?P<anchor>[A-Za-z0-9_-]+))?\)")
FENCE_RE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Problem:
    file: str  # relative to the repo root
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class Step:
    index: int
    anchor: str  # "intro" for the text before the first heading
    title: str  # "" for the intro
    body: str  # Markdown, heading excluded
    line: int  # where the heading (or the file) starts


@dataclass
class Lesson:
    folder: Path
    id: str
    order: int
    section: str = "lessons"
    icon: str = "📖"
    titles: dict[str, str] = field(default_factory=dict)
    page: str | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def title(self, lang: str) -> str:
        return self.titles.get(lang) or self.titles.get("en") or self.id

    def markdown_path(self, lang: str) -> Path:
        return self.folder / f"{lang}.md"

    def text(self, lang: str) -> str:
        path = self.markdown_path(lang)
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def steps(self, lang: str) -> list[Step]:
        return split_steps(self.text(lang))

    def page_path(self) -> Path | None:
        return ROOT / self.page if self.page else None


def rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def split_steps(markdown: str) -> list[Step]:
    """Cut Markdown into steps at ``## `` headings (not inside fenced code)."""
    steps: list[Step] = []
    anchor, title, start, buf = "intro", "", 1, []
    in_fence = False
    for lineno, line in enumerate(markdown.splitlines(), start=1):
        if FENCE_RE.match(line):
            in_fence = not in_fence
        m = None if in_fence else HEADING_RE.match(line)
        if m:
            steps.append(Step(len(steps), anchor, title, "\n".join(buf).strip(), start))
            title = m["title"]
            anchor = m["anchor"] or f"step-{len(steps)}"
            start, buf = lineno, []
        else:
            buf.append(line)
    steps.append(Step(len(steps), anchor, title, "\n".join(buf).strip(), start))
    if not steps[0].body and len(steps) > 1:  # no intro text: the first heading is step 0
        steps = [Step(i, s.anchor, s.title, s.body, s.line) for i, s in enumerate(steps[1:])]
    return steps


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
    toml_path = folder / "lesson.toml"
    where = rel(toml_path)
    if not toml_path.is_file():
        lesson.problems.append(Problem(where, 1, "lesson.toml is missing"))
        return lesson
    raw = toml_path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        lesson.problems.append(Problem(where, int(m[1]) if m else 1, f"lesson.toml does not parse: {exc}"))
        return lesson

    def fault(key: str, reason: str) -> None:
        lesson.problems.append(Problem(where, _line_of(raw, rf"\s*\[?{re.escape(key)}\b"), reason))

    lid = data.get("id")
    if not isinstance(lid, str) or not ID_RE.match(lid):
        fault("id", f"id must be lowercase letters, digits and '-', got {lid!r}")
    else:
        lesson.id = lid
    order_v = data.get("order")
    if not isinstance(order_v, int) or isinstance(order_v, bool) or order_v < 0:
        fault("order", f"order must be a whole number >= 0, got {order_v!r}")
    else:
        lesson.order = order_v
    section = data.get("section")
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
    for lang in LANGS:
        md = lesson.markdown_path(lang)
        if not md.is_file():
            lesson.problems.append(Problem(rel(md), 1, f"the {lang} text is missing ({md.name})"))
        elif not md.read_text(encoding="utf-8").strip():
            lesson.problems.append(Problem(rel(md), 1, f"the {lang} text is empty"))
    return lesson


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


def _check_markdown(catalog: Catalog) -> None:
    anchors = {lesson.id: {lang: [s.anchor for s in lesson.steps(lang)] for lang in LANGS}
               for lesson in catalog.lessons}
    for lesson in catalog.lessons:
        per_lang = {lang: lesson.steps(lang) for lang in LANGS if lesson.markdown_path(lang).is_file()}
        if len(per_lang) == len(LANGS):
            zh, en = (per_lang[lang] for lang in LANGS)
            zh_a, en_a = [s.anchor for s in zh], [s.anchor for s in en]
            if zh_a != en_a:
                for i in range(max(len(zh_a), len(en_a))):
                    a = zh_a[i] if i < len(zh_a) else None
                    b = en_a[i] if i < len(en_a) else None
                    if a != b:
                        line = en[i].line if i < len(en) else (en[-1].line if en else 1)
                        lesson.problems.append(Problem(
                            rel(lesson.markdown_path("en")), line,
                            f"step {i} is {b!r} in en.md but {a!r} in zh-TW.md; both languages need "
                            "the same ## sections and {#anchors} in the same order"))
                        break
        for lang in per_lang:
            path = lesson.markdown_path(lang)
            for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                for m in LINK_RE.finditer(line):
                    target, anchor = m["id"], m["anchor"]
                    if target not in anchors:
                        known = ", ".join(sorted(anchors))
                        lesson.problems.append(Problem(rel(path), lineno,
                                                       f"link to unknown lesson {target!r} (known: {known})"))
                    elif anchor and anchor not in anchors[target][lang]:
                        lesson.problems.append(Problem(
                            rel(path), lineno,
                            f"link to unknown anchor #{anchor} in lesson {target!r} "
                            f"(its anchors: {', '.join(anchors[target][lang])})"))


def load_catalog(lessons_dir: Path | None = None, locales_dir: Path = LOCALES_DIR) -> Catalog:
    if lessons_dir is None:
        lessons_dir = Path(os.environ.get("ATTENTION_LAB_LESSONS", ROOT / "lessons"))
    folders = sorted(p for p in lessons_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    lessons = [load_lesson(f) for f in folders]
    lessons.sort(key=lambda lesson: (lesson.order, lesson.folder.name))
    catalog = Catalog(lessons=lessons, problems=[])
    seen_ids: dict[str, Lesson] = {}
    seen_orders: dict[int, Lesson] = {}
    for lesson in lessons:
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
    _check_markdown(catalog)
    if locales_dir.is_dir():
        for lang in LANGS:
            keys = load_locale_keys(lang, locales_dir)
            for section in {lesson.section for lesson in lessons}:
                if f"nav.section.{section}" not in keys:
                    catalog.problems.append(Problem(
                        rel(locales_dir / lang / "nav.toml"), 1,
                        f"no title for section {section!r}: add section.{section} to nav.toml"))
    return catalog


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.lessons", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    check = sub.add_parser("check", help="validate every lesson; exit 1 on any fault")
    check.add_argument("--lessons", type=Path, default=None, help="lessons folder (default: lessons/)")
    lst = sub.add_parser("list", help="print the catalog in lecture order")
    lst.add_argument("--lessons", type=Path, default=None)
    args = parser.parse_args(argv)
    catalog = load_catalog(args.lessons)
    if args.cmd == "list":
        for lesson in catalog.lessons:
            mark = "ok " if lesson.ok else "ERR"
            print(f"{mark} {lesson.order:>2} {lesson.section:<12} {lesson.id:<18} {lesson.title('en')}")
        return 0
    problems = catalog.all_problems()
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in {len(catalog.lessons)} lessons", file=sys.stderr)
        return 1
    print(f"{len(catalog.lessons)} lessons OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
