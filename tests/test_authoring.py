"""docs/AUTHORING.md and its zh-TW version, followed literally, produce a working lesson.

The test runs every `python -m core.lessons …` line of the walkthrough's bash blocks and writes
every ````markdown FILE```` block into the new lesson, in order, in a copy of lessons/. Then the
lesson must check clean and render in both languages with its widgets and quiz working.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.lessons import LANGS, ROOT, load_catalog
from tests.apptest import run_lesson

FENCE = re.compile(r"^(?P<fence>`{3,4})(?P<info>[^\n`]*)\n(?P<body>.*?)\n(?P=fence)$", re.S | re.M)
DOCS = [ROOT / "docs" / "AUTHORING.md", ROOT / "docs" / "AUTHORING.zh-TW.md"]


def follow(doc: Path, lessons: Path) -> list[str]:
    """Do what the walkthrough says; return the output of each command."""
    env = {**os.environ, "ATTENTION_LAB_LESSONS": str(lessons)}
    outputs = []
    for m in FENCE.finditer(doc.read_text(encoding="utf-8")):
        info = m["info"].split()
        if info[:1] == ["bash"]:
            for line in m["body"].splitlines():
                if line.startswith("python "):
                    argv = [sys.executable, *shlex.split(line)[1:]]
                    r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
                    assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
                    outputs.append(r.stdout)
        elif info[:1] == ["markdown"] and len(info) == 2:
            (folder,) = lessons.glob("*-attention-recap")
            (folder / info[1]).write_text(m["body"] + "\n", encoding="utf-8")
    return outputs


@pytest.fixture(scope="module", params=DOCS, ids=["en-doc", "zh-TW-doc"])
def authored(request, tmp_path_factory) -> Path:
    lessons = tmp_path_factory.mktemp("authoring") / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    outputs = follow(request.param, lessons)
    assert "created" in outputs[0] and "10-attention-recap" in outputs[0]  # as the doc says
    assert outputs[-1].strip() == "11 lessons OK"  # as the doc says
    return lessons


def test_walkthrough_creates_a_clean_lesson_with_three_widgets_and_a_quiz(authored):
    lesson = load_catalog(authored).get("attention-recap")
    assert lesson is not None and lesson.ok, lesson and lesson.problems
    assert lesson.section == "attention" and lesson.order == 10
    for lang in LANGS:
        blocks = [seg for step in lesson.steps(lang) for seg in step.segments if not isinstance(seg, str)]
        assert [b.name for b in blocks] == ["bahdanau-alignment", "tokenizer", "attention-heatmap", "quiz"]


@pytest.mark.parametrize("lang", LANGS)
def test_authored_lesson_renders_and_its_quiz_works(authored, lang, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(authored))
    at = run_lesson("attention-recap", lang)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) >= 3  # alignment, tokens, heatmap
    quiz = at.radio[0]
    right = [i for i, label in enumerate(quiz.options) if "itself" in label or "包括它自己" in label]
    quiz.set_value(quiz.options[right[0]] if isinstance(quiz.options[0], str) else right[0]).run()
    at.button[0].click().run()
    assert at.success, "choosing the right answer says so"
    assert at.session_state["progress"]["attention-recap"]


def test_a_bad_widget_block_is_reported_and_the_rest_renders(authored, monkeypatch, tmp_path):
    lessons = tmp_path / "lessons"
    shutil.copytree(authored, lessons)
    (folder,) = lessons.glob("*-attention-recap")
    en = folder / "en.md"
    en.write_text(
        en.read_text(encoding="utf-8")
        .replace("```widget tokenizer", "```widget tokeniser")
        .replace("layer: 2", "layer: two"),
        encoding="utf-8",
    )
    r = subprocess.run(
        [sys.executable, "-m", "core.lessons", "check", "--lessons", str(lessons)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1
    assert re.search(
        r"10-attention-recap/en\.md:\d+: unknown widget 'tokeniser'; the widgets are: "
        r"attention-heatmap, bahdanau-alignment, embedding-sum",
        r.stdout,
    ), r.stdout
    assert re.search(
        r"10-attention-recap/en\.md:\d+: attention-heatmap: layer must be a whole number, got 'two'", r.stdout
    ), r.stdout
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(lessons))
    at = run_lesson("attention-recap", "en")
    assert not at.exception
    assert len(at.error) == 2 and all("has a problem" in e.value for e in at.error)
    assert len(at.get("plotly_chart")) >= 1 and at.radio  # the other blocks still work
