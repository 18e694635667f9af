"""The lesson catalog and `python -m core.lessons check`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.lessons import LANGS, ROOT, load_catalog, split_steps

EXPECTED_ORDER = [
    "home",
    "nlp-tasks",
    "seq2seq",
    "bahdanau",
    "self-attention",
    "multi-head",
    "bert-inputs",
    "bert-outputs",
    "megatron",
    "glossary",
]


def check(lessons: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "core.lessons", "check", "--lessons", str(lessons)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def lessons_copy(tmp_path) -> Path:
    dst = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", dst)
    return dst


def test_catalog_has_the_nine_lessons_in_lecture_order():
    catalog = load_catalog()
    assert [lesson.id for lesson in catalog.lessons] == EXPECTED_ORDER
    assert [lesson.order for lesson in catalog.lessons] == list(range(10))
    sections = [s for s, _ in catalog.sections()]
    assert sections == ["start", "basics", "attention", "bert", "scale", "reference"]


def test_repository_lessons_pass_the_check():
    result = check(ROOT / "lessons")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "10 lessons OK" in result.stdout


def test_every_lesson_has_both_languages_with_matching_steps():
    for lesson in load_catalog().lessons:
        steps = {lang: lesson.steps(lang) for lang in LANGS}
        for lang in LANGS:
            assert lesson.text(lang).strip(), f"{lesson.id} has no {lang} text"
            assert lesson.title(lang) != lesson.id, f"{lesson.id} has no {lang} title"
        assert [s.anchor for s in steps["zh-TW"]] == [s.anchor for s in steps["en"]], lesson.id


def test_lessons_zero_and_one_are_complete_not_outlines():
    catalog = load_catalog()
    for lesson_id in ("home", "nlp-tasks"):
        lesson = catalog.get(lesson_id)
        for lang in LANGS:
            text = lesson.text(lang)
            assert "coming soon" not in text.lower() and "即將推出" not in text
    nlp = catalog.get("nlp-tasks")
    assert [s.anchor for s in nlp.steps("en")][1:5] == [
        "labeling",
        "classification",
        "sentence-relations",
        "generation",
    ]
    zh = nlp.text("zh-TW")
    for phrase in ("序列標註", "情感分析因子", "那斯達克", "positive", "neutral", "negative", "機器寫詩"):
        assert phrase in zh


def test_corrupted_toml_is_reported_with_file_and_line(lessons_copy):
    toml = lessons_copy / "03-bahdanau" / "lesson.toml"
    toml.write_text('id = "bahdanau"\norder = 3\nsection = = "attention"\n', encoding="utf-8")
    result = check(lessons_copy)
    assert result.returncode == 1
    assert "03-bahdanau/lesson.toml:3: lesson.toml does not parse" in result.stdout
    # every other lesson still loads
    catalog = load_catalog(lessons_copy)
    assert [lesson.id for lesson in catalog.lessons if lesson.ok] == [i for i in EXPECTED_ORDER if i != "bahdanau"]


def test_missing_page_script_is_reported(lessons_copy):
    toml = lessons_copy / "01-nlp-tasks" / "lesson.toml"
    text = toml.read_text(encoding="utf-8").replace("[title]", 'page = "pages/99_gone.py"\n\n[title]')
    toml.write_text(text, encoding="utf-8")
    result = check(lessons_copy)
    assert result.returncode == 1
    assert "01-nlp-tasks/lesson.toml:" in result.stdout
    assert "page script pages/99_gone.py does not exist" in result.stdout


def test_missing_language_duplicate_id_bad_link_and_anchor_mismatch(lessons_copy):
    (lessons_copy / "02-seq2seq" / "en.md").unlink()
    dup = lessons_copy / "09-dup"
    shutil.copytree(lessons_copy / "01-nlp-tasks", dup)
    toml = dup / "lesson.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("order = 1", "order = 9"), encoding="utf-8")
    zh = lessons_copy / "00-home" / "zh-TW.md"
    zh.write_text(zh.read_text(encoding="utf-8") + "\n見 [不存在](lesson:nowhere)\n", encoding="utf-8")
    en = lessons_copy / "01-nlp-tasks" / "en.md"
    en.write_text(en.read_text(encoding="utf-8").replace("{#generation}", "{#gen}"), encoding="utf-8")
    out = check(lessons_copy).stdout
    assert "02-seq2seq/en.md:1: the en text is missing" in out
    assert "09-dup/lesson.toml:1: id 'nlp-tasks' is already used" in out
    assert "00-home/zh-TW.md:" in out and "link to unknown lesson 'nowhere'" in out
    assert "01-nlp-tasks/en.md:" in out and "'gen' in en.md but 'generation' in zh-TW.md" in out


def test_material_icon_is_refused_because_it_needs_the_internet(lessons_copy):
    toml = lessons_copy / "00-home" / "lesson.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace('icon = "🏠"', 'icon = ":material/home:"'), encoding="utf-8"
    )
    out = check(lessons_copy).stdout
    assert "00-home/lesson.toml:4: use one emoji as the icon" in out


def test_split_steps_ignores_headings_inside_code_fences():
    md = "intro\n\n## A {#a}\ntext\n```\n## not a heading\n```\n## B\nmore\n"
    steps = split_steps(md)
    assert [(s.anchor, s.title) for s in steps] == [("intro", ""), ("a", "A"), ("step-2", "B")]
    assert "## not a heading" in steps[1].body


def test_widget_quiz_and_predict_blocks_are_parsed_and_validated():
    from core.widgets import Block, validate

    md = """intro
<!-- a note with a fake block
```widget nope
```
-->
## A {#a}
text before
```widget attention-heatmap
text: hello world
layer: 3
```
text after
```quiz
question: Two plus two?
- [ ] three
- [x] four
explain: Arithmetic.
```
```predict
question: Guess?
answer: This.
```
"""
    steps = split_steps(md)
    assert [s.anchor for s in steps] == ["intro", "a"]
    segs = steps[1].segments
    assert segs[0] == "text before" and segs[2] == "text after"
    heat, quiz, pred = (s for s in segs if isinstance(s, Block))
    assert (heat.kind, heat.name, heat.line) == ("widget", "attention-heatmap", 8)
    args, problems = validate(heat)
    assert problems == [] and args == {"text": "hello world", "layer": 3, "head": 0}
    args, problems = validate(quiz)
    assert problems == [] and quiz.choices == ((False, "three"), (True, "four")) and args["explain"] == "Arithmetic."
    assert validate(pred) == ({"question": "Guess?", "answer": "This.", "placeholder": ""}, [])
    assert all(isinstance(s, str) for s in steps[0].segments)  # the commented-out block is ignored


def test_block_problems_name_the_line_and_the_valid_choices():
    from core.widgets import Block, validate

    md = "x\n```widget pipeline-schedule\nschedule: zigzag\nstages: 0\ncolour: red\n```\n```quiz\nquestion: q\n- [ ] a\n```\n```widget\n"
    blocks = [b for b in split_steps(md)[0].segments if isinstance(b, Block)]
    _, problems = validate(blocks[0])
    assert (3, "pipeline-schedule: schedule must be one of gpipe, 1f1b, interleaved; got 'zigzag'") in problems
    assert (4, "pipeline-schedule: stages must be at least 1, got 0") in problems
    assert any(line == 5 and "unknown argument 'colour'" in r for line, r in problems)
    _, problems = validate(blocks[1])
    assert (7, "a quiz needs at least two choices, written '- [ ] text'") in problems
    _, problems = validate(blocks[2])
    assert any("a widget block needs a name" in r for _, r in problems)
    assert any("never closed" in r for _, r in problems)


# ---- Markdown the old line regexes got wrong (a CommonMark parser now reads it) -------------------


def _anchors(md: str) -> list[str]:
    return [s.anchor for s in split_steps(md)]


def test_four_backtick_fence_holding_three_backticks_is_one_code_block():
    md = "intro\n\n````markdown\n```\n## not a step\n```\n````\n\n## A {#a}\ntext\n"
    steps = split_steps(md)
    assert [s.anchor for s in steps] == ["intro", "a"]
    assert "## not a step" in steps[0].segments[0] and "```" in steps[0].segments[0]


def test_tilde_fences_hide_headings_and_carry_widget_blocks():
    from core.widgets import Block

    md = "intro\n\n~~~\n## not a step\n~~~\n\n## A {#a}\n~~~widget attention-heatmap\ntext: hi\nlayer: 1\n~~~\nafter\n"
    steps = split_steps(md)
    assert [s.anchor for s in steps] == ["intro", "a"]
    (block,) = [s for s in steps[1].segments if isinstance(s, Block)]
    assert (block.name, block.line, block.end_line, block.raw_args) == (
        "attention-heatmap",
        8,
        11,
        (("text", "hi", 9), ("layer", "1", 10)),
    )
    assert block.problems == () and steps[1].segments[-1] == "after"


def test_indented_code_is_not_a_heading_nor_a_fence():
    md = "intro\n\n    ## code, indented four spaces\n    ```\n\n## A {#a}\ntext\n"
    assert _anchors(md) == ["intro", "a"]


def test_setext_level_two_heading_starts_a_step_with_its_anchor():
    steps = split_steps("intro\n\nScores {#scores}\n----------------\ntext\n\nTitle one\n=========\n")
    assert [(s.anchor, s.title, s.line) for s in steps] == [("intro", "", 1), ("scores", "Scores", 3)]
    assert "Title one" in steps[1].segments[0]  # a level-1 setext heading is not a step


def test_comment_marks_inside_code_are_code_and_do_not_swallow_the_lesson():
    md = "intro\n\n```html\n<!-- an HTML comment, shown as code\n```\n\n## B {#b}\nsee --> here\n"
    steps = split_steps(md)
    assert [s.anchor for s in steps] == ["intro", "b"]
    assert "<!-- an HTML comment, shown as code" in steps[0].segments[0]
    assert steps[1].segments == ("see --> here",)


def test_comments_in_prose_and_in_widget_bodies_are_dropped_with_line_numbers_kept():
    from core.widgets import Block

    md = "intro <!-- note --> text\n<!--\n## hidden {#hidden}\n-->\n```quiz\n<!-- author note -->\nquestion: q?\n- [ ] a\n- [x] b\n```\n"
    steps = split_steps(md)
    assert [s.anchor for s in steps] == ["intro"]
    assert steps[0].segments[0] == "intro  text"
    (quiz,) = [s for s in steps[0].segments if isinstance(s, Block)]
    assert quiz.problems == () and quiz.raw_args == (("question", "q?", 7),) and quiz.line == 5


def test_links_in_code_and_comments_are_not_checked():
    from core.lessons import prose_lines

    md = "[a](lesson:x)\n<!-- [b](lesson:y) -->\n```\n[c](lesson:z)\n```\n    [d](lesson:w)\n"
    assert prose_lines(md) == [(1, "[a](lesson:x)")]


# ---- a lesson file that is not UTF-8 (issue 15) ---------------------------------------------------


def test_utf16_lesson_toml_breaks_only_its_own_lesson(lessons_copy):
    toml = lessons_copy / "03-bahdanau" / "lesson.toml"
    toml.write_bytes(toml.read_text(encoding="utf-8").encode("utf-16"))  # Notepad's "Unicode"
    catalog = load_catalog(lessons_copy)
    broken = [lesson for lesson in catalog.lessons if not lesson.ok]
    assert [lesson.folder.name for lesson in broken] == ["03-bahdanau"]
    (problem,) = broken[0].problems
    assert problem.file.endswith("03-bahdanau/lesson.toml") and problem.line == 1
    assert "lesson.toml is not UTF-8 text (it looks like UTF-16 (little-endian))" in problem.reason
    result = check(lessons_copy)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "03-bahdanau/lesson.toml:1: lesson.toml is not UTF-8 text" in result.stdout
    assert "save it with the encoding UTF-8" in result.stdout


def test_big5_markdown_is_named_with_its_line_and_the_lesson_still_answers(lessons_copy):
    en = lessons_copy / "02-seq2seq" / "en.md"
    text = en.read_text(encoding="utf-8").replace("\n", "\n注意力 ", 3)  # CJK on the second line
    en.write_bytes(text.encode("big5", errors="replace"))
    catalog = load_catalog(lessons_copy)
    lesson = catalog.get("seq2seq")
    assert [p.reason[:42] for p in lesson.problems] == ["en.md is not UTF-8 text (byte 0xaa at line"]
    assert lesson.problems[0].line == 2
    assert lesson.text("en") == "" and [s.anchor for s in lesson.steps("en")] == ["intro"]
    assert [x.id for x in catalog.lessons if x.ok] == [i for i in EXPECTED_ORDER if i != "seq2seq"]
    result = check(lessons_copy)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "02-seq2seq/en.md:2: en.md is not UTF-8 text" in result.stdout


def test_utf8_byte_order_mark_is_accepted(lessons_copy):
    for name in ("lesson.toml", "en.md", "zh-TW.md"):
        path = lessons_copy / "04-self-attention" / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    result = check(lessons_copy)
    assert result.returncode == 0, result.stdout
    lesson = load_catalog(lessons_copy).get("self-attention")
    assert lesson.title("en") and not lesson.text("en").startswith("\ufeff")
    assert lesson.steps("en")[0].line == 1


# ---- `new` with odd titles (issue 15) --------------------------------------------------------------

ODD_TITLES = [
    "back\\slash",
    "C:\\new\\table",
    "two\nlines",
    'a "quoted" word',
    "tab\there, bell\x07, del\x7f",
    "trailing backslash\\",
    "emoji 🎉, RTL שלום, CJK 注意力",
    "{braces} and \\u0041 literally",
]


@pytest.mark.parametrize("title", ODD_TITLES)
def test_new_lesson_writes_toml_that_reads_back_the_exact_title(lessons_copy, title):
    import tomllib

    from core.lessons import new_lesson

    folder = new_lesson("odd-title", {"zh-TW": f"中文 {title}", "en": title}, lessons_dir=lessons_copy)
    data = tomllib.loads((folder / "lesson.toml").read_text(encoding="utf-8"))
    assert data["title"] == {"zh-TW": f"中文 {title}", "en": title}
    lesson = load_catalog(lessons_copy).get("odd-title")
    assert lesson.ok, lesson.problems
    assert lesson.title("en") == title.strip()
    assert [s.anchor for s in lesson.steps("en")] == ["intro", "first-idea"]  # a title cannot add a step


# ---- the shared catalog cache under concurrent reads and edits -----------------------------------


def test_cached_catalog_never_raises_while_another_session_reloads(tmp_path):
    """Two sessions asking for catalogs whose signatures differ (an instructor saving a lesson while
    students click). The signature's hash yields the GIL, as a real thread switch may at any point:
    the old cache cleared itself between storing and returning, a KeyError for the other session."""
    import threading
    import time

    from core.lessons import cached_catalog

    class Signature:
        def __hash__(self) -> int:
            time.sleep(0)  # let the other session run here
            return 1

        def __eq__(self, other) -> bool:
            time.sleep(0)
            return isinstance(other, Signature)

    g = cached_catalog.__globals__
    saved = g["load_catalog"], g["_signature"]
    g["load_catalog"] = lambda d, *args, **kw: ("catalog", str(d))
    g["_signature"] = lambda d: Signature()
    errors: list[BaseException] = []
    wrong: list = []

    def session(folder: Path) -> None:
        try:
            for _ in range(2000):
                got = cached_catalog(folder)
                if got != ("catalog", str(folder)):
                    wrong.append(got)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=session, args=(tmp_path / name,)) for name in "ab"]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        g["load_catalog"], g["_signature"] = saved
    assert errors == [] and wrong == []


def test_app_survives_lesson_files_that_are_not_utf8(lessons_copy, monkeypatch):
    """Issue 15: one Notepad-saved lesson took down every page, home included. Now home renders and
    the broken lesson shows its error card naming the file, in place of its text."""
    from streamlit.testing.v1 import AppTest

    from tests.apptest import run_lesson

    toml = lessons_copy / "03-bahdanau" / "lesson.toml"
    toml.write_bytes(toml.read_text(encoding="utf-8").encode("utf-16"))
    en = lessons_copy / "01-nlp-tasks" / "en.md"
    en.write_bytes(en.read_text(encoding="utf-8").replace("\n", "\n注意力 ", 1).encode("big5", errors="replace"))
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(lessons_copy))
    home = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    home.query_params["lang"] = "en"
    home.run()
    assert not home.exception, [e.value for e in home.exception]
    lesson = run_lesson("nlp-tasks", "en")
    assert not lesson.exception, [e.value for e in lesson.exception]
    assert [e.value for e in lesson.error] == ["This lesson could not be shown"]
    assert any(
        c.value.startswith("lessons/01-nlp-tasks/en.md:2: en.md is not UTF-8 text")
        or "01-nlp-tasks/en.md:2: en.md is not UTF-8 text" in c.value
        for c in lesson.code
    )


def test_registered_lesson_checks_run_and_a_failing_check_is_a_problem_not_a_crash(lessons_copy, monkeypatch):
    from core.lessons import Problem, rel

    def no_pages_over_seven(lesson, catalog):
        if lesson.page and lesson.order > 7:
            return [Problem(rel(lesson.folder / "lesson.toml"), 1, f"page of {lesson.id} is late")]
        return []

    def broken(lesson, catalog):
        raise KeyError("oops")

    monkeypatch.setattr("core.lessons.checks.LESSON_CHECKS", [no_pages_over_seven, broken])
    catalog = load_catalog(lessons_copy)
    reasons = {lesson.id: [p.reason for p in lesson.problems] for lesson in catalog.lessons}
    assert reasons["megatron"][0] == "page of megatron is late"
    assert all(any("check broken failed: KeyError" in r for r in rs) for rs in reasons.values())
