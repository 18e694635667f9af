"""Writing lessons: ``python -m core.lessons new`` (a folder that shows every feature) and the
widget list ``python -m core.lessons widgets``."""

from __future__ import annotations

from pathlib import Path

from core.lessons.catalog import load_catalog
from core.lessons.model import ID_RE, lessons_dir_default

# TOML basic strings must escape these (TOML 1.0, "String"): the quote, the backslash and every
# control character but tab.
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string, quotes included, that tomllib reads back unchanged."""
    out = []
    for ch in value:
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _one_line(title: str) -> str:
    """A title as one line of Markdown text: a newline in it must not start a heading or a block."""
    return " ".join(title.split())


TOML_TEMPLATE = """\
# This lesson's card. `python -m core.lessons check` validates it.
id = "{id}"            # unique; also the address: http://localhost:8501/{id}
order = {order}              # place in the course; lessons are listed by order
section = "{section}"     # the navigation group: {sections}
icon = "📘"            # one emoji
# page = "pages/{order:02d}_{py}.py"   # only if you write a Python page with your own widgets

[title]
zh-TW = {title_zh}
en = {title_en}
"""

# The same widget block shows in both languages' templates (its arguments are not translated).
WIDGET_EXAMPLE = """\
        ```widget attention-heatmap
        text: The animal didn't cross the street because it was too tired
        layer: 2
        head: 5
        ```"""

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
{widget_example}
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
{widget_example}
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


def new_lesson(
    slug: str,
    titles: dict[str, str],
    section: str | None = None,
    order: int | None = None,
    lessons_dir: Path | None = None,
) -> Path:
    """Create lessons/<NN-slug>/ with a lesson.toml and both texts, each showing every feature;
    ``titles`` holds the title in each language of MD_TEMPLATE (zh-TW, en)."""
    lessons_dir = lessons_dir_default() if lessons_dir is None else lessons_dir
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
    toml = TOML_TEMPLATE.format(
        id=slug,
        order=order,
        section=section,
        sections=", ".join(sections),
        py=slug.replace("-", "_"),
        title_zh=toml_string(titles["zh-TW"]),
        title_en=toml_string(titles["en"]),
    )
    (folder / "lesson.toml").write_text(toml, encoding="utf-8")
    for lang, template in MD_TEMPLATE.items():
        text = template.format(title=_one_line(titles[lang]), widget_example=WIDGET_EXAMPLE)
        (folder / f"{lang}.md").write_text(text, encoding="utf-8")
    return folder


def describe_widgets() -> str:
    from core.widgets import WIDGETS

    out = []
    for spec in WIDGETS.values():
        out.append(f"widget {spec.name}: {spec.summary}")
        for key, p in spec.params.items():
            kind = f"one of {', '.join(p.choices)}" if p.kind == "choice" else p.kind
            lo = "" if p.minimum is None else p.minimum
            hi = "" if p.maximum is None else p.maximum
            bounds = f" ({lo}..{hi})" if p.kind == "int" else ""
            out.append(f"    {key}: {kind}{bounds}, default {p.default!r} - {p.help}")
    out.append("quiz: question (required), explain (optional), and choices '- [ ] wrong' / '- [x] right'")
    out.append("predict: question and answer (required), placeholder (optional)")
    return "\n".join(out)
