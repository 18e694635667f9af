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
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.widgets import FENCE_OPEN, Block, parse_block, validate

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
    in_block: bool = False  # a widget/quiz block's fault: the app shows it in the block's place

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class Step:
    index: int
    anchor: str  # "intro" for the text before the first heading
    title: str  # "" for the intro
    body: str  # Markdown, heading excluded, blocks included as written
    line: int  # where the heading (or the file) starts
    segments: tuple = ()  # in order: Markdown strings and widgets.Block objects


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


COMMENT_RE = re.compile(r"<!--.*?-->", re.S)


def split_steps(markdown: str) -> list[Step]:
    """Cut Markdown into steps at ``## `` headings, and each step into text and fenced blocks.

    Headings inside fenced code do not count. ``widget``/``quiz``/``predict`` fences become
    :class:`core.widgets.Block` segments; HTML comments (notes for authors) are dropped.
    """
    # Comments are notes for authors: blank them out (keeping line numbers) before reading blocks.
    markdown = COMMENT_RE.sub(lambda m: "\n" * m.group(0).count("\n"), markdown)
    steps: list[Step] = []
    anchor, title, start = "intro", "", 1
    body: list[str] = []
    segments: list = []
    text: list[str] = []
    fence: tuple | None = None  # (kind, name, start line, lines) while inside a block
    in_code = False

    def flush_text() -> None:
        chunk = "\n".join(text).strip()
        if chunk:
            segments.append(chunk)
        text.clear()

    def close_step() -> None:
        flush_text()
        steps.append(Step(len(steps), anchor, title, "\n".join(body).strip(), start, tuple(segments)))

    for lineno, line in enumerate(markdown.splitlines(), start=1):
        if fence is not None:
            body.append(line)
            if FENCE_RE.match(line):
                kind, name, fstart, flines = fence
                segments.append(parse_block(kind, name, flines, fstart, lineno))
                fence = None
            else:
                fence[3].append((lineno, line))
            continue
        opening = None if in_code else FENCE_OPEN.match(line)
        if opening:
            flush_text()
            body.append(line)
            fence = (opening["kind"], opening["name"], lineno, [])
            continue
        if FENCE_RE.match(line):
            in_code = not in_code
        m = None if in_code else HEADING_RE.match(line)
        if m:
            close_step()
            title = m["title"]
            anchor = m["anchor"] or f"step-{len(steps)}"
            start, body, segments = lineno, [], []
        else:
            body.append(line)
            text.append(line)
    if fence is not None:  # an unclosed block still shows up, with a problem attached
        kind, name, fstart, flines = fence
        block = parse_block(kind, name, flines, fstart, fstart)
        segments.append(replace(block, problems=block.problems + ((fstart, "this block is never closed with ```"),)))
    close_step()
    if not steps[0].body and len(steps) > 1:  # no intro text: the first heading is step 0
        steps = [replace(s, index=i) for i, s in enumerate(steps[1:])]
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
        for lang, lang_steps in per_lang.items():
            path = lesson.markdown_path(lang)
            for step in lang_steps:
                for seg in step.segments:
                    if isinstance(seg, Block):
                        for line, reason in validate(seg)[1]:
                            lesson.problems.append(Problem(rel(path), line, reason, in_block=True))
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


TOML_TEMPLATE = """\
# This lesson's card. `python -m core.lessons check` validates it.
id = "{id}"            # unique; also the address: http://localhost:8501/{id}
order = {order}              # place in the course; lessons are listed by order
section = "{section}"     # the navigation group: {sections}
icon = "📘"            # one emoji
# page = "pages/{order:02d}_{py}.py"   # only if you write a Python page with your own widgets

[title]
zh-TW = "{title_zh}"
en = "{title_en}"
"""

MD_TEMPLATE = {
    "en": """\
<!--
  This is the English text of your lesson. Text inside these comment marks is a note for you and
  is never shown. zh-TW.md beside this file must have the same "## ... {{#anchor}}" sections in the
  same order.

  * A step starts at a level-2 heading. The {{#anchor}} names it for links and for ?step= links:
        ## Why scale the scores {{#why-scale}}
  * A link to another lesson (the check verifies lesson and anchor):
        [Bahdanau attention](lesson:bahdanau)
  * A live widget. List the widgets and their arguments with: python -m core.lessons widgets
        ```widget attention-heatmap
        text: The animal didn't cross the street because it was too tired
        layer: 2
        head: 5
        ```
  * A multiple-choice quiz: mark the right choice(s) with [x]; explain is optional.
        ```quiz
        question: Which vector does a plain seq2seq decoder start from?
        - [ ] every encoder state
        - [x] the final vector c
        explain: Without attention, c is the only thing that crosses from encoder to decoder.
        ```
  * Predict, then reveal: the student writes a guess before the answer is shown.
        ```predict
        question: Which word will "it" attend to most?
        answer: Usually "animal", in the heads that resolve coreference.
        ```
-->
{title} opens here: say in one or two sentences what the student will learn.

## The first idea {{#first-idea}}

Write the first step here.
""",
    "zh-TW": """\
<!--
  這是這一課的中文內容。註解符號裡的文字是給你的筆記，不會顯示出來。旁邊的 en.md 必須有相同的
  「## ... {{#anchor}}」段落，順序也相同。

  * 每個二級標題開始一個步驟；{{#anchor}} 是它的名字，連結與 ?step= 都會用到：
        ## 為什麼要縮放分數 {{#why-scale}}
  * 連到另一課（check 會檢查課程與錨點是否存在）：
        [Bahdanau 注意力](lesson:bahdanau)
  * 互動元件。用 python -m core.lessons widgets 列出所有元件與參數：
        ```widget attention-heatmap
        text: The animal didn't cross the street because it was too tired
        layer: 2
        head: 5
        ```
  * 選擇題：正確選項標 [x]；explain 可省略。
        ```quiz
        question: 沒有注意力的 seq2seq 解碼器從哪個向量開始？
        - [ ] 編碼器的每個狀態
        - [x] 最後的向量 c
        explain: 沒有注意力時，c 是從編碼器傳到解碼器的唯一資訊。
        ```
  * 先預測再揭曉：學生先寫下猜測，答案才會出現。
        ```predict
        question: 「it」最注意哪個詞？
        answer: 在負責指代的注意力頭裡，通常是「animal」。
        ```
-->
{title}從這裡開始：用一兩句話說明學生會學到什麼。

## 第一個概念 {{#first-idea}}

在這裡寫第一個步驟。
""",
}


def new_lesson(slug: str, title_zh: str, title_en: str, section: str | None = None,
               order: int | None = None, lessons_dir: Path | None = None) -> Path:
    """Create lessons/<NN-slug>/ with a lesson.toml and both texts, each showing every feature."""
    if lessons_dir is None:
        lessons_dir = Path(os.environ.get("ATTENTION_LAB_LESSONS", ROOT / "lessons"))
    if not ID_RE.match(slug):
        raise ValueError(f"the slug must be lowercase letters, digits and '-', got {slug!r}")
    catalog = load_catalog(lessons_dir)
    if catalog.get(slug):
        raise ValueError(f"a lesson with id {slug!r} already exists")
    sections = [name for name, _ in catalog.sections()]
    section = section or (sections[-1] if sections else "lessons")
    if not ID_RE.match(section):
        raise ValueError(f"the section must be a short key like 'attention', got {section!r}")
    used = {lesson.order for lesson in catalog.lessons}
    if order is None:
        order = max(used, default=-1) + 1
    elif order in used:
        raise ValueError(f"order {order} is taken; free after the last lesson: {max(used) + 1}")
    folder = lessons_dir / f"{order:02d}-{slug}"
    folder.mkdir(parents=True)
    toml = TOML_TEMPLATE.format(id=slug, order=order, section=section, sections=", ".join(sections),
                                py=slug.replace("-", "_"), title_zh=title_zh.replace('"', "'"),
                                title_en=title_en.replace('"', "'"))
    (folder / "lesson.toml").write_text(toml, encoding="utf-8")
    (folder / "en.md").write_text(MD_TEMPLATE["en"].format(title=title_en), encoding="utf-8")
    (folder / "zh-TW.md").write_text(MD_TEMPLATE["zh-TW"].format(title=title_zh), encoding="utf-8")
    return folder


def describe_widgets() -> str:
    from core.widgets import WIDGETS

    out = []
    for spec in WIDGETS.values():
        out.append(f"widget {spec.name}: {spec.summary}")
        for key, p in spec.params.items():
            kind = f"one of {', '.join(p.choices)}" if p.kind == "choice" else p.kind
            bounds = "" if p.kind != "int" else f" ({p.minimum if p.minimum is not None else ''}..{p.maximum if p.maximum is not None else ''})"
            out.append(f"    {key}: {kind}{bounds}, default {p.default!r} - {p.help}")
    out.append("quiz: question (required), explain (optional), and choices '- [ ] wrong' / '- [x] right'")
    out.append("predict: question and answer (required), placeholder (optional)")
    return "\n".join(out)


_CACHE: dict[tuple, Catalog] = {}


def _signature(lessons_dir: Path) -> tuple:
    """Every file the catalog depends on, with its modification time (cheap: a few dozen stats)."""
    paths = [lessons_dir, *lessons_dir.glob("*"), *lessons_dir.glob("*/*"), ROOT / "pages",
             *(ROOT / "pages").glob("*.py"), *LOCALES_DIR.glob("*/nav.toml")]
    return tuple((str(p), p.stat().st_mtime_ns) for p in sorted(paths) if p.exists())


def cached_catalog(lessons_dir: Path | None = None) -> Catalog:
    """load_catalog, reread only when a lesson file, page script or section title changed.

    Treat the result as read-only: it is shared by every session of the server.
    """
    if lessons_dir is None:
        lessons_dir = Path(os.environ.get("ATTENTION_LAB_LESSONS", ROOT / "lessons"))
    key = (str(lessons_dir), _signature(lessons_dir))
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load_catalog(lessons_dir)
    return _CACHE[key]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.lessons", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    check = sub.add_parser("check", help="validate every lesson; exit 1 on any fault")
    check.add_argument("--lessons", type=Path, default=None, help="lessons folder (default: lessons/)")
    lst = sub.add_parser("list", help="print the catalog in lecture order")
    lst.add_argument("--lessons", type=Path, default=None)
    new = sub.add_parser("new", help="create a lesson folder with both texts and every feature shown")
    new.add_argument("slug", help="the lesson's id and address, e.g. why-scale")
    new.add_argument("--title-zh", required=True)
    new.add_argument("--title-en", required=True)
    new.add_argument("--section", help="navigation group (default: the last one)")
    new.add_argument("--order", type=int, help="place in the course (default: after the last lesson)")
    sub.add_parser("widgets", help="list the widgets a lesson can embed, with their arguments")
    args = parser.parse_args(argv)
    if args.cmd == "widgets":
        print(describe_widgets())
        return 0
    if args.cmd == "new":
        try:
            folder = new_lesson(args.slug, args.title_zh, args.title_en, args.section, args.order)
        except (ValueError, FileExistsError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"created {rel(folder)}/ (lesson.toml, zh-TW.md, en.md)")
        print(f"next: edit the two texts, run `python -m core.lessons check`, reload the app and open /{args.slug}")
        return 0
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
