"""Lessons 4 and 5 under AppTest: widgets, notices for bad input, the bertviz frame, both languages."""
from __future__ import annotations

import json
import re

import pytest

from tests.apptest import plotly_values, run_lesson, texts

CLASSIC = "The animal didn't cross the street because it was too tired."
SA, MH = "self-attention", "multi-head"


def _charts(at):
    return at.get("plotly_chart")


def _chart_json(at, i):
    return json.loads(_charts(at)[i].proto.spec)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_self_attention_glass_box(lang):
    at = run_lesson(SA, lang)
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_area(key=f"{SA}.text").value == CLASSIC
    # the query starts on "it", the framed row of the heatmap
    q = at.selectbox(key=f"{SA}.query")
    assert q.value == 10 and "it" in q.format_func(10)
    # vectors, score steps, scaling study, weighted sum, heatmap
    assert len(_charts(at)) == 5
    heat = _chart_json(at, 4)
    shapes = heat["layout"].get("shapes", [])
    assert any(s.get("y0") == 9.5 and s.get("y1") == 10.5 for s in shapes)
    assert re.search(r"(reported attentions to|相差不超過) \d\.\de-0[6-9]", texts(at))
    # picking another query token moves the framed row and the glass box
    at.selectbox(key=f"{SA}.query").set_value(2).run()
    shapes = _chart_json(at, 4)["layout"]["shapes"]
    assert any(s.get("y0") == 1.5 and s.get("y1") == 2.5 for s in shapes)
    assert "animal (2)" in json.dumps(_chart_json(at, 0)["layout"]["yaxis"]["ticktext"][0])


def test_scaling_toggle_shows_saturation():
    at = run_lesson(SA, "en")
    scaled = float(at.metric[0].value)
    at.toggle(key=f"{SA}.scaled").set_value(False).run()
    assert not at.exception
    unscaled = float(at.metric[0].value)
    assert unscaled > scaled and unscaled > 0.95  # softmax of raw scores saturates
    assert any("what-if" in w.value for w in at.warning)
    steps = _chart_json(at, 1)
    assert "not scaled" in json.dumps(steps["layout"]["annotations"])


def test_presets_and_pickers_change_the_numbers():
    at = run_lesson(SA, "en")
    first = plotly_values(_chart_json(at, 4)["data"][0]["z"])
    at.selectbox(key=f"{SA}.preset").set_value("p2").run()
    assert at.text_area(key=f"{SA}.text").value.endswith("too wide.")
    second = plotly_values(_chart_json(at, 4)["data"][0]["z"])
    assert first != second
    at.selectbox(key=f"{SA}.head").set_value(2).run()
    assert not at.exception
    assert "head 2" in _chart_json(at, 4)["layout"]["title"]["text"]


@pytest.mark.parametrize("text, notice", [
    ("", "empty"),
    ("word " * 2000, "first 2000 characters"),
    ("token " * 300, "first 128 tokens"),
    ("a\u200bb\u202e", "Invisible characters"),
])
def test_bad_input_gives_a_notice(text, notice):
    at = run_lesson(SA, "en")
    at.text_area(key=f"{SA}.text").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    assert notice in "\n".join(x.value for x in list(at.info) + list(at.warning))


@pytest.mark.parametrize("text", ["😀🎉 emoji 🤖", "這隻動物沒有過馬路，因為牠太累了。", "שלום עולם مرحبا بالعالم",
                                  "<script>alert(1)</script>", "<img src=x onerror=alert(1)>"])
def test_odd_text_renders(text):
    at = run_lesson(SA, "en")
    at.text_area(key=f"{SA}.text").set_value(text).run()
    assert not at.exception and not at.error
    assert len(_charts(at)) == 5
    # user text reaches Markdown nowhere
    assert all("<script>" not in m.value and "onerror" not in m.value for m in at.markdown)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_multi_head_page(lang):
    at = run_lesson(MH, lang)
    assert not at.exception, [e.value for e in at.exception]
    # grid, enlarged head, tags, rollout, shapes, concat
    assert len(_charts(at)) == 6
    grid = _chart_json(at, 0)
    assert len(grid["data"]) == 72
    frame = at.get("iframe")[0].proto.srcdoc
    assert "attnlab-payload" in frame and "cdnjs" not in frame
    assert "[SEP] sink" in texts(at) or "[SEP] 匯集" in texts(at)


def test_multi_head_pair_and_views():
    at = run_lesson(MH, "en")
    at.toggle(key=f"{MH}.pair").set_value(True).run()
    assert not at.exception
    frame = at.get("iframe")[0].proto.srcdoc
    assert '<select id="filter">' in frame and "Sentence A → Sentence B" in frame
    assert '"b_start":' in frame and '"b_start":null' not in frame
    for kind, marker in (("model", "include_heads"), ("neuron", "bertviz_params")):
        at.get("button_group")[0].set_value(kind).run()
        assert not at.exception
        frame = at.get("iframe")[0].proto.srcdoc
        assert marker in frame and len(frame.encode()) <= 2_000_000
    # the enlarged head follows the pickers
    at.selectbox(key=f"{MH}.layer").set_value(0).run()
    at.selectbox(key=f"{MH}.head").set_value(2).run()
    assert "Layer 0, head 2" in _chart_json(at, 1)["layout"]["title"]["text"]


def test_multi_head_caps_bertviz_at_64_tokens():
    at = run_lesson(MH, "en")
    at.text_area(key=f"{MH}.text").set_value("word " * 100).run()
    assert not at.exception
    warnings = "\n".join(w.value for w in at.warning)
    assert "first 64 tokens" in warnings
    frame = at.get("iframe")[0].proto.srcdoc
    m = re.search(r'"T":(\d+)', frame)
    assert m and int(m.group(1)) == 64


@pytest.mark.parametrize("text, notice", [("", "empty"), ("word " * 2000, "first 2000 characters"),
                                          ("<img src=x onerror=alert(1)> 😀 שלום 自注意力", None)])
def test_multi_head_bad_input(text, notice):
    at = run_lesson(MH, "en")
    at.text_area(key=f"{MH}.text").set_value(text).run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    shown = "\n".join(x.value for x in list(at.info) + list(at.warning))
    if notice == "empty":
        assert "empty" in shown and not at.get("iframe") and not _charts(at)
    elif notice:
        assert notice in shown and len(_charts(at)) == 6
        assert "first 64 tokens" in shown and "first 128 tokens" in shown
    else:
        assert len(_charts(at)) == 6 and at.get("iframe")
        assert all("onerror" not in m.value for m in at.markdown)


@pytest.mark.parametrize("lesson_id, step", [(SA, 2), (SA, 4), (MH, 3)])
def test_presenter_mode_deep_link(lesson_id, step):
    at = run_lesson(lesson_id, "zh-TW", present=True, step=step + 1)  # steps count from 1
    assert not at.exception and not at.error
    assert len(at.header) == step


def _caption_app():
    from types import SimpleNamespace

    from ui import attention as ua

    ua.model_caption(SimpleNamespace(name="**x**[a](b) :red[y] $z$ <b>w</b>", num_layers=2, num_heads=4,
                                     hidden_size=64))


def test_model_folder_name_is_shown_as_plain_text():
    """The caption is Markdown; rendered by a CommonMark parser it must show the name as written."""
    import html as html_lib

    from markdown_it import MarkdownIt
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_caption_app, default_timeout=30)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception
    rendered = MarkdownIt("commonmark").render(at.caption[0].value)
    assert "<strong>" not in rendered and "<a " not in rendered and "<b>" not in rendered
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert "**x**[a](b) :red[y] $z$ <b>w</b> · 2 layers × 4 heads" in text


def _move_section_first(path, anchor: str) -> None:
    """Rewrite a lesson's Markdown with the section {#anchor} moved right after the intro."""
    lines = path.read_text(encoding="utf-8").split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")] + [len(lines)]
    k = next(n for n, i in enumerate(starts[:-1]) if lines[i].rstrip().endswith("{#" + anchor + "}"))
    section = lines[starts[k]:starts[k + 1]]
    rest = lines[:starts[k]] + lines[starts[k + 1]:]
    path.write_text("\n".join(rest[:starts[0]] + section + rest[starts[0]:]), encoding="utf-8")


@pytest.fixture(scope="module")
def heatmap_first(tmp_path_factory):
    import shutil

    from core.lessons import LANGS, ROOT

    lessons = tmp_path_factory.mktemp("reordered") / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    for lang in LANGS:
        _move_section_first(lessons / "04-self-attention" / f"{lang}.md", "heatmap")
    return lessons


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_reordered_sections_still_draw_every_figure(heatmap_first, lang, monkeypatch):
    reference = run_lesson(SA, lang)
    expected = _chart_json(reference, 4)  # the heatmap, last in the lesson as written
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(heatmap_first))
    at = run_lesson(SA, lang)
    assert [h.anchor for h in at.header][:2] == ["heatmap", "qkv"]  # the reordered lesson was used
    assert not at.exception and not at.error, [e.value for e in at.exception]
    assert len(_charts(at)) == 5  # vectors, score steps, scaling study, weighted sum, heatmap
    heat = _chart_json(at, 0)  # now first on the page, and the same figure with the same inputs
    assert heat["data"] == expected["data"]
    assert any(s.get("y0") == 9.5 and s.get("y1") == 10.5 for s in heat["layout"]["shapes"])  # query "it"
    # the inputs still drive it: another query token moves the framed row of the (first) heatmap
    at.selectbox(key=f"{SA}.query").set_value(2).run()
    assert any(s.get("y0") == 1.5 and s.get("y1") == 2.5 for s in _chart_json(at, 0)["layout"]["shapes"])


def test_reordered_heatmap_draws_in_presenter_mode_before_its_inputs(heatmap_first, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(heatmap_first))
    at = run_lesson(SA, "en", present=True, step=2)  # intro and the heatmap only; the inputs' step is hidden
    assert not at.exception and not at.error
    assert [h.anchor for h in at.header] == ["heatmap"]
    assert len(_charts(at)) == 1
    assert any(s.get("y0") == 9.5 and s.get("y1") == 10.5 for s in _chart_json(at, 0)["layout"]["shapes"])
