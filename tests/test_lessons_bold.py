"""Bold next to full-width punctuation: CommonMark's flanking rule, the lesson check that flags it
(file:line), and every lesson's bold rendering as bold."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt

from core.lessons import LANGS, ROOT, load_catalog
from core.lessons.checks import _unrendered_bold

COMMONMARK = MarkdownIt("commonmark")


def _html(md: str) -> str:
    return COMMONMARK.render(md)


@pytest.mark.parametrize(
    ("broken", "fixed"),
    [
        ("**先猜猜看：**在一個模型裡", "**先猜猜看**：在一個模型裡"),  # closer between ： and a letter
        ("輸入的**「註解」**向量", "輸入的「**註解**」向量"),  # opener between a letter and 「
        ("的**[詞](lesson:x)**（y）", "的[**詞**](lesson:x)（y）"),  # opener before [ after a letter
    ],
)
def test_commonmark_leaves_asterisks_in_the_broken_form_only(broken, fixed):
    # The parser is the reference: the broken form has no <strong>, the fixed one has it.
    assert "<strong>" not in _html(broken) and "**" in _html(broken)
    assert "<strong>" in _html(fixed) and "**" not in _html(fixed)
    assert _unrendered_bold(broken) and not _unrendered_bold(fixed)


def test_the_check_names_the_line_across_soft_breaks_and_skips_code():
    md = "第一行\n第二行有**先猜猜看：**答案\n\n```\n**code：**不算\n```\n\n`**行內：**程式`也不算\n"
    assert [line for line, _ in _unrendered_bold(md)] == [2]
    # Bold across two lines is fine.
    assert _unrendered_bold("It is **by\ncolumns**, then") == []


def test_lesson_check_reports_file_and_line(tmp_path):
    dst = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", dst)
    zh = dst / "05-multi-head" / "zh-TW.md"
    lines = zh.read_text(encoding="utf-8").splitlines()
    target = next(i for i, line in enumerate(lines) if line and not line.startswith(("#", "`", "~", "<", "|", "-")))
    lines[target] = "**先猜猜看：**有多少個頭在看 [CLS]？" + lines[target]
    zh.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "core.lessons", "check", "--lessons", str(dst)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    hits = [line for line in result.stdout.splitlines() if "asterisks" in line]
    assert len(hits) == 1, result.stdout
    assert re.search(rf"05-multi-head/zh-TW\.md:{target + 1}: ", hits[0]), hits[0]


def test_every_lesson_renders_its_bold():
    """Independent of the check: render each lesson's prose with CommonMark and look for `**`
    outside code in the HTML."""
    for lesson in load_catalog().lessons:
        for lang in LANGS:
            for step in lesson.steps(lang):
                for seg in step.segments:
                    if isinstance(seg, str):
                        html = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", "", _html(seg), flags=re.S)
                        assert "**" not in html, f"{lesson.id} {lang} step {step.anchor}: {html[:200]}"
