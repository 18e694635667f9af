"""core.page_contract: the steps a page script draws after and keeps its inputs in, checked
against each language's Markdown."""

from __future__ import annotations

import shutil

import pytest

from core.lessons import LANGS, ROOT, load_catalog
from core.page_contract import page_problems, read_contract

PAGE = "pages/04_self_attention.py"


def _line_of(needle: str) -> int:
    """The line of ``needle`` in the page script, found by plain text search (not by the AST)."""
    lines = (ROOT / PAGE).read_text(encoding="utf-8").split("\n")
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def test_every_shipped_lesson_serves_its_page():
    catalog = load_catalog()
    assert [str(p) for lesson in catalog.lessons for p in page_problems(lesson)] == []


def test_contract_is_read_from_the_decorators():
    contract = read_contract(ROOT / PAGE)
    assert contract.sections["heatmap"] == _line_of('@page.widget("heatmap")')
    assert contract.inputs == {
        "qkv": _line_of('@page.inputs("qkv")'),
        "scaled-dot-product": _line_of('@page.inputs("scaled-dot-product")'),
    }


@pytest.fixture()
def lessons_copy(tmp_path):
    lessons = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    return lessons


def _rename_anchor(lessons, lang: str, old: str, new: str) -> None:
    path = lessons / "04-self-attention" / f"{lang}.md"
    text = path.read_text(encoding="utf-8")
    assert "{#" + old + "}" in text
    path.write_text(text.replace("{#" + old + "}", "{#" + new + "}"), encoding="utf-8")


def test_a_lesson_missing_a_step_its_page_draws_after_is_flagged(lessons_copy):
    _rename_anchor(lessons_copy, "en", "heatmap", "heat-map")
    lesson = load_catalog(lessons_copy).get("self-attention")
    problems = page_problems(lesson)
    assert len(problems) == 1
    (p,) = problems
    assert (p.file, p.line) == (PAGE, _line_of('@page.widget("heatmap")'))
    assert "#heatmap" in p.reason and "en.md" in p.reason and "#heat-map" in p.reason


def test_a_lesson_missing_its_inputs_step_is_flagged_in_each_language(lessons_copy):
    for lang in LANGS:
        _rename_anchor(lessons_copy, lang, "qkv", "vectors")
    problems = page_problems(load_catalog(lessons_copy).get("self-attention"))
    lines = {_line_of('@page.inputs("qkv")'), _line_of('@page.widget("qkv")')}
    assert {p.line for p in problems} == lines
    assert len(problems) == 2 * len(LANGS)  # the section and the inputs, in each language
    assert any("keeps its inputs in step #qkv" in p.reason for p in problems)


def test_an_unreadable_page_script_is_a_problem_not_a_crash(tmp_path):
    bad = tmp_path / "page.py"
    bad.write_text("@page.widget(\n", encoding="utf-8")
    contract = read_contract(bad)
    assert contract.problems and "cannot read" in contract.problems[0][1]


def test_the_lessons_check_reports_a_step_the_page_cannot_serve(lessons_copy):
    """Wired into `core.lessons check` (LESSON_CHECKS): the catalog itself carries the problem."""
    _rename_anchor(lessons_copy, "zh-TW", "heatmap", "heat-map")
    lesson = load_catalog(lessons_copy).get("self-attention")
    assert any(p.file == PAGE and "#heatmap" in p.reason for p in lesson.problems)
