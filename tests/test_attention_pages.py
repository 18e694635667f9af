"""Lessons 4 and 5 under AppTest: widgets, notices for bad input, the bertviz frame, both languages."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests.apptest import plotly_values, run_lesson, texts

CLASSIC = "The animal didn't cross the street because it was too tired."
ZH_CLASSIC = "這隻動物沒有過馬路，因為它太累了。"
FIRST = {"en": CLASSIC, "zh-TW": ZH_CLASSIC}  # each language's first preset; the other stays selectable
PRONOUN = {"en": "it", "zh-TW": "它"}
SA, MH = "self-attention", "multi-head"


def _query_box(at):
    """The query-token picker: its key follows the sentence (ui.lesson.follow_inputs)."""
    (box,) = [b for b in at.selectbox if b.key and b.key.startswith(f"{SA}.query.")]
    return box


def _default_bundle():
    from core.bert import load

    return load()


def _position(text, token):
    """Where ``token`` lands in the default model's encoding of ``text`` ([CLS] is 0)."""
    return ["[CLS]", *_default_bundle().tokenizer.tokenize(text), "[SEP]"].index(token)


def _charts(at):
    return at.get("plotly_chart")


def _chart_json(at, i):
    return json.loads(_charts(at)[i].proto.spec)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_self_attention_glass_box(lang):
    at = run_lesson(SA, lang)
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_area(key=f"{SA}.text").value == FIRST[lang]
    # the query starts on the pronoun ("it", 「它」), the framed row of the heatmap
    i = _position(FIRST[lang], PRONOUN[lang])
    q = _query_box(at)
    assert q.value == i and PRONOUN[lang] in q.format_func(i)
    # vectors, score steps, scaling study, weighted sum, heatmap
    assert len(_charts(at)) == 5
    heat = _chart_json(at, 4)
    shapes = heat["layout"].get("shapes", [])
    assert any(s.get("y0") == i - 0.5 and s.get("y1") == i + 0.5 for s in shapes)
    assert re.search(r"(reported attentions to|相差不超過) \d\.\de-0[6-9]", texts(at))
    # picking another query token moves the framed row and the glass box
    _query_box(at).set_value(2).run()
    shapes = _chart_json(at, 4)["layout"]["shapes"]
    assert any(s.get("y0") == 1.5 and s.get("y1") == 2.5 for s in shapes)
    second = ["[CLS]", *_default_bundle().tokenizer.tokenize(FIRST[lang])][2]
    vectors = _chart_json(at, 0)  # q_i's row first, named on its category axis (the hover reads it)
    assert f"{second} (2)" in json.dumps(vectors["data"][0]["y"][0], ensure_ascii=False)
    assert vectors["layout"]["yaxis"]["type"] == "category" and "customdata" not in vectors["data"][0]
    # the lecture's English sentence is still one click away in zh-TW (and the Chinese one in English)
    other = "p5" if lang == "zh-TW" else "p6"
    at.selectbox(key=f"{SA}.preset").set_value(other).run()
    assert at.text_area(key=f"{SA}.text").value == FIRST["en" if lang == "zh-TW" else "zh-TW"]


def _shows_count(cell: str, n: int, total: int, lang: str) -> bool:
    return cell.startswith(f"{n} of {total}") if lang == "en" else cell.startswith(f"{total} 個中有 {n} 個")


def _census_cells(at, kinds=("cls", "sep", "self", "previous", "next", "broad")):
    """The census table's middle column ("this model"), one cell per kind, as the page shows it."""
    import re

    import pandas as pd

    tables = [m.value for m in at.markdown if m.value.startswith("| ")]
    assert len(tables) == 1, "one census table"
    lines = tables[0].splitlines()
    rows = [[re.sub(r"\\(.)", r"\1", c.strip()) for c in line.strip("|").split(" | ")] for line in lines[2:]]
    frame = pd.DataFrame(rows)
    return dict(zip(kinds, frame.iloc[:, 1].tolist())), frame


@pytest.mark.parametrize("lesson_id, lang", [(SA, "en"), (SA, "zh-TW"), (MH, "en"), (MH, "zh-TW")])
def test_head_census_is_computed_from_the_model_on_screen(lesson_id, lang):
    from core import attention as A

    at = run_lesson(lesson_id, lang)
    assert not at.exception, [e.value for e in at.exception]
    bundle = _default_bundle()
    _, _, census = A.head_census(bundle, FIRST[lang])
    cells, frame = _census_cells(at)
    total = bundle.num_layers * bundle.num_heads
    for kind, cell in cells.items():
        assert _shows_count(cell, census.counts[kind], total, lang), (kind, cell)
        for layer in census.layers(kind):
            assert str(layer) in cell
    paper = frame.iloc[:, 2].tolist()
    assert paper[3].startswith("4 of 144" if lang == "en" else "144 個中有 4 個")  # previous token
    assert paper[4].startswith("5 of 144" if lang == "en" else "144 個中有 5 個")  # next token
    assert "1906.04341" in texts(at)
    # another sentence, other counts: the table follows the text
    key = f"{lesson_id}.text"
    other = "word " * 40
    at.text_area(key=key).set_value(other).run()
    _, _, census2 = A.head_census(bundle, other)
    cells2, _ = _census_cells(at)
    for kind, cell in cells2.items():
        assert _shows_count(cell, census2.counts[kind], total, lang), (kind, cell)


def test_scaling_toggle_shows_saturation():
    at = run_lesson(SA, "en")
    scaled = float(at.metric[0].value)
    at.toggle(key=f"{SA}.scaled").set_value(False).run()
    assert not at.exception
    unscaled = float(at.metric[0].value)
    # softmax of raw scores is more peaked; the metric is the model's own row without 1/√d_k
    from core import attention as A

    i = _query_box(at).value
    e = A.explain_head(
        _default_bundle(), CLASSIC, at.selectbox(key=f"{SA}.layer").value, at.selectbox(key=f"{SA}.head").value
    )
    assert unscaled > scaled and at.metric[0].value == f"{e.weights_unscaled[i].max():.3f}"
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


@pytest.mark.parametrize(
    "text, notice",
    [
        ("", "empty"),
        ("word " * 2000, "first 2000 characters"),
        ("token " * 300, "first 128 tokens"),
        ("a\u200bb\u202e", "Invisible characters"),
    ],
)
def test_bad_input_gives_a_notice(text, notice):
    at = run_lesson(SA, "en")
    at.text_area(key=f"{SA}.text").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    assert notice in "\n".join(x.value for x in list(at.info) + list(at.warning))


@pytest.mark.parametrize(
    "text",
    [
        "😀🎉 emoji 🤖",
        "這隻動物沒有過馬路，因為牠太累了。",
        "שלום עולם مرحبا بالعالم",
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
    ],
)
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
    assert not at.get("iframe")  # bertviz is drawn only on request
    _bertviz_on(at)
    assert at.text_area(key=f"{MH}.text").value == FIRST[lang]
    # grid, enlarged head, tags, rollout, shapes, concat
    assert len(_charts(at)) == 6
    grid = _chart_json(at, 0)
    bundle = _default_bundle()
    assert len(grid["data"]) in (1, bundle.num_layers * bundle.num_heads)  # one trace per head, or one for all
    z = [np.asarray(plotly_values(tr["z"]), dtype=float) for tr in grid["data"]]
    assert sum(a.size for a in z) >= bundle.num_layers * bundle.num_heads * 4  # every head's matrix is there
    frame = at.get("iframe")[0].proto.srcdoc
    assert "attnlab-payload" in frame and "cdnjs" not in frame
    assert "[SEP] sink" in texts(at) or "[SEP] 匯集" in texts(at)


def _bertviz_on(at):
    at.toggle(key=f"{MH}.bertviz_on").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_multi_head_pair_and_views():
    at = _bertviz_on(run_lesson(MH, "en"))
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
    at = _bertviz_on(run_lesson(MH, "en"))
    at.text_area(key=f"{MH}.text").set_value("word " * 100).run()
    assert not at.exception
    warnings = "\n".join(w.value for w in at.warning)
    assert "first 64 tokens" in warnings
    frame = at.get("iframe")[0].proto.srcdoc
    m = re.search(r'"T":(\d+)', frame)
    assert m and int(m.group(1)) == 64


@pytest.mark.parametrize(
    "text, notice",
    [("", "empty"), ("word " * 2000, "first 2000 characters"), ("<img src=x onerror=alert(1)> 😀 שלום 自注意力", None)],
)
def test_multi_head_bad_input(text, notice):
    at = _bertviz_on(run_lesson(MH, "en"))
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

    ua.model_caption(
        SimpleNamespace(name="**x**[a](b) :red[y] $z$ <b>w</b>", num_layers=2, num_heads=4, hidden_size=64)
    )


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
    section = lines[starts[k] : starts[k + 1]]
    rest = lines[: starts[k]] + lines[starts[k + 1] :]
    path.write_text("\n".join(rest[: starts[0]] + section + rest[starts[0] :]), encoding="utf-8")


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
    i = _position(FIRST[lang], PRONOUN[lang])
    assert any(s.get("y0") == i - 0.5 and s.get("y1") == i + 0.5 for s in heat["layout"]["shapes"])  # the pronoun
    # the inputs still drive it: another query token moves the framed row of the (first) heatmap
    _query_box(at).set_value(2).run()
    assert any(s.get("y0") == 1.5 and s.get("y1") == 2.5 for s in _chart_json(at, 0)["layout"]["shapes"])


def test_reordered_heatmap_draws_in_presenter_mode_before_its_inputs(heatmap_first, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(heatmap_first))
    at = run_lesson(SA, "en", present=True, step=2)  # intro and the heatmap only; the inputs' step is hidden
    assert not at.exception and not at.error
    assert [h.anchor for h in at.header] == ["heatmap"]
    assert len(_charts(at)) == 1
    i = _position(CLASSIC, "it")
    assert any(s.get("y0") == i - 0.5 and s.get("y1") == i + 0.5 for s in _chart_json(at, 0)["layout"]["shapes"])


def test_every_shipped_sentence_tokenizes_without_unk():
    """Lessons 4-5's presets and sentence B, in both languages, under the default model."""
    import tomllib

    from core.lessons import ROOT
    from ui.attention import PRESETS

    tok = _default_bundle().tokenizer
    seen = []
    for lang in ("en", "zh-TW"):
        sa = tomllib.loads((ROOT / "ui" / "locales" / lang / "self_attention.toml").read_text(encoding="utf-8"))
        mh = tomllib.loads((ROOT / "ui" / "locales" / lang / "multi_head.toml").read_text(encoding="utf-8"))
        sentences = [sa["presets"][k] for k in PRESETS] + [mh["text_b_default"]]
        for text in sentences:
            tokens = tok.tokenize(text)
            assert tokens and tok.unk_token not in tokens, (lang, text, tokens)
            seen.append(text)
    # zh-TW opens on Chinese, English on the lecture's sentence, and each keeps the other's
    assert any("它" in s for s in seen) and CLASSIC in seen and ZH_CLASSIC in seen


def test_rollout_slider_and_bertviz_run_as_fragments():
    """The rollout slider and the bertviz controls rerun their own section; the rest stays as drawn."""
    at = run_lesson(MH, "en")
    before = _chart_json(at, 3)["layout"]["title"]["text"]
    grid = _chart_json(at, 0)
    at.slider(key=f"{MH}.rollout_layer").set_value(0).run()
    assert not at.exception, [e.value for e in at.exception]
    after = _chart_json(at, 3)["layout"]["title"]["text"]
    assert after != before and "0" in after
    assert _chart_json(at, 0) == grid and len(_charts(at)) == 6
    _bertviz_on(at)
    at.get("button_group")[0].set_value("model").run()
    assert "include_heads" in at.get("iframe")[0].proto.srcdoc and len(_charts(at)) == 6
