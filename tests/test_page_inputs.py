"""Lessons 3, 5 and 7 with a section moved above the step that holds the page's inputs: every
figure is still drawn, from the same inputs (lesson 4 is in test_attention_pages.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from core.lessons import LANGS, ROOT, load_catalog
from tests.apptest import run_lesson
from tests.test_attention_pages import _move_section_first

MOVES = {"bahdanau": "alignment", "multi-head": "concat", "bert-outputs": "layers"}


@pytest.fixture(scope="module")
def reordered(tmp_path_factory):
    lessons = tmp_path_factory.mktemp("reordered") / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    catalog = load_catalog(lessons)
    for lesson_id, anchor in MOVES.items():
        for lang in LANGS:
            _move_section_first(catalog.get(lesson_id).markdown_path(lang), anchor)
    return lessons


def _charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


@pytest.mark.parametrize("lesson_id", list(MOVES))
def test_a_section_above_its_inputs_still_draws_the_same_figures(reordered, lesson_id, monkeypatch):
    as_written = run_lesson(lesson_id, "en")
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(reordered))
    at = run_lesson(lesson_id, "en")
    assert [h.anchor for h in at.header][0] == MOVES[lesson_id]  # the reordered lesson was used
    assert not at.exception and not at.error, [e.value for e in at.exception]
    before, after = _charts(as_written), _charts(at)
    assert len(after) == len(before)
    key = lambda fig: json.dumps(fig["data"], sort_keys=True)  # noqa: E731 - order on the page changed
    assert sorted(map(key, after)) == sorted(map(key, before))
