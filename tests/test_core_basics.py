"""core.text, core.figures and core.device."""

import json
import subprocess
import sys

import pytest

from core.figures import bar_strip, escape_label, heatmap
from core.lessons import ROOT
from core.text import clean

BAD = {
    "script": "<script>alert(1)</script>",
    "img": '<img src=x onerror="alert(1)">',
    "emoji": "I ❤️ attention 🤖",
    "cjk": "注意力機制很重要",
    "rtl": "שלום עולם مرحبا",
}


def test_clean_reports_empty_truncated_and_invisible():
    assert clean("").notices == ["empty"]
    assert clean(None).notices == ["empty"]
    assert clean("   \n\t ").notices == ["empty"]
    long = clean("a" * 10_000, max_chars=100)
    assert len(long.text) == 100 and "truncated" in long.notices and long.original_length == 10_000
    zw = clean("at\u200btention\u202e")
    assert zw.text == "attention" and "invisible_removed" in zw.notices
    ctl = clean("a\x00b\x07c")
    assert ctl.text == "abc" and "control_removed" in ctl.notices


@pytest.mark.parametrize("name", BAD)
def test_clean_keeps_real_text_intact(name):
    assert clean(BAD[name]).text == BAD[name] and clean(BAD[name]).notices == []


def test_heatmap_escapes_labels_and_keeps_repeated_tokens_apart():
    tokens = ["the", "<b>x</b>", "the"]
    w = [[0.123456, 0.5, 0.376544], [1, 0, 0], [0.2, 0.3, 0.5]]
    fig = heatmap(w, tokens, tokens, title="<script>t</script>")
    trace = fig.data[0]
    # three distinct categories that all read as their token: the repeat carries a zero-width space
    assert list(trace.x) == ["the", "&lt;b&gt;x&lt;/b&gt;", "the\u200b"] == list(trace.y)
    assert [x.replace("\u200b", "") for x in trace.x] == ["the", "&lt;b&gt;x&lt;/b&gt;", "the"]
    assert fig.layout.xaxis.type == "category"
    assert "<script>" not in fig.to_json()
    assert trace.z[0][0] == 0.1235
    assert fig.layout.yaxis.autorange == "reversed"  # queries read top-down
    with pytest.raises(ValueError):
        heatmap(w, tokens[:2], tokens)


def test_heatmap_highlight_row_and_strip():
    fig = heatmap([[1.0, 0.0], [0.0, 1.0]], ["a", "b"], ["a", "b"], highlight_row=1)
    assert fig.layout.shapes[0].y0 == 0.5
    assert escape_label("a<b") == "a&lt;b"
    strip = bar_strip([0.5, -1.25, 2.0])
    assert list(strip.data[0].z[0]) == [0.5, -1.25, 2.0]


def test_device_is_cpu_here_and_describe_is_lazy():
    code = (
        "import sys, json; from core.device import describe; "
        "print(json.dumps([describe(probe=False), 'torch' in sys.modules, describe()]))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    lazy, imported, info = json.loads(out.stdout)
    assert lazy is None and imported is False
    import torch

    assert info["type"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert info["torch"] == torch.__version__


def test_home_and_lesson_one_import_no_torch():
    """The first pages must not pay for torch or transformers (start-up budget)."""
    code = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=60)
at.run()
assert not at.exception, at.exception
at.query_params["lang"] = "en"
at.run()
from tests.apptest import run_lesson
one = run_lesson("nlp-tasks", "en")
assert not one.exception, one.exception
print(sorted(m for m in ("torch", "transformers", "bertviz") if m in sys.modules))
"""
    env = {"ATTENTION_LAB_NO_WARMUP": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env={**__import__("os").environ, **env},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
