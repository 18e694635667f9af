"""The lesson catalog and `python -m core.lessons check`."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.lessons import LANGS, ROOT, load_catalog, split_steps

EXPECTED_ORDER = ["home", "nlp-tasks", "seq2seq", "bahdanau", "self-attention", "multi-head",
                  "bert-inputs", "bert-outputs", "megatron"]


def check(lessons: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core.lessons", "check", "--lessons", str(lessons)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.fixture
def lessons_copy(tmp_path) -> Path:
    dst = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", dst)
    return dst


def test_catalog_has_the_nine_lessons_in_lecture_order():
    catalog = load_catalog()
    assert [lesson.id for lesson in catalog.lessons] == EXPECTED_ORDER
    assert [lesson.order for lesson in catalog.lessons] == list(range(9))
    sections = [s for s, _ in catalog.sections()]
    assert sections == ["start", "basics", "attention", "bert", "scale"]


def test_repository_lessons_pass_the_check():
    result = check(ROOT / "lessons")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "9 lessons OK" in result.stdout


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
    assert [s.anchor for s in nlp.steps("en")][1:5] == ["labeling", "classification", "sentence-relations",
                                                        "generation"]
    zh = nlp.text("zh-TW")
    for phrase in ("序列標注", "情感分析因子", "納斯達克", "positive", "neutral", "negative", "機器寫詩"):
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
    toml.write_text(toml.read_text(encoding="utf-8").replace('icon = "🏠"', 'icon = ":material/home:"'),
                    encoding="utf-8")
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
