"""Every widget a lesson can embed has a renderer and draws, with its defaults, in both languages."""

from __future__ import annotations

import shutil

import pytest

from core.lessons import LANGS, ROOT, new_lesson
from core.widgets import WIDGETS
from tests.apptest import run_lesson


def test_every_widget_spec_has_a_renderer_and_nothing_else():
    from ui.widgets import RENDERERS
    from ui.widgets import WIDGETS as DRAWN

    assert set(RENDERERS) == set(WIDGETS)  # what a Markdown block draws
    assert set(DRAWN) == set(WIDGETS)  # the one function a page section draws too


@pytest.fixture(scope="module")
def all_widgets_lesson(tmp_path_factory):
    lessons = tmp_path_factory.mktemp("widgets") / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    folder = new_lesson("all-widgets", {"zh-TW": "全部元件", "en": "All widgets"}, lessons_dir=lessons)
    blocks = "\n\n".join(f"```widget {name}\n```" for name in WIDGETS)
    for lang in LANGS:
        path = folder / f"{lang}.md"
        path.write_text(path.read_text(encoding="utf-8") + "\n\n" + blocks + "\n", encoding="utf-8")
    return lessons


@pytest.mark.parametrize("lang", LANGS)
def test_every_widget_renders_with_its_defaults(all_widgets_lesson, lang, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(all_widgets_lesson))
    at = run_lesson("all-widgets", lang)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [c.value for c in at.code]
    tables = {"worked-example"}  # draws a table of numbers, not a figure
    assert len(at.get("plotly_chart")) == len(set(WIDGETS) - tables)
    assert len(at.dataframe) >= len(tables)


def test_a_student_can_change_a_widget_text(all_widgets_lesson, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(all_widgets_lesson))
    at = run_lesson("all-widgets", "en")
    box = next(
        b
        for b in at.text_input
        if b.key.endswith("widget-tokenizer-" + b.key.split("-")[-1].split(".")[0] + ".text") or "tokenizer" in b.key
    )
    box.input("").run()
    assert any("empty" in i.value for i in at.info)  # a clear notice, no figure, no error
    assert not at.exception and not at.error
    box.input("<img src=x onerror=alert(1)> 注意力").run()
    assert not at.exception and not at.error


def test_shard_layout_partitions_every_split_weight():
    from core.megatron.layers import LayerConfig, shard_layout

    for ranks in (1, 2, 4):
        layout = shard_layout(ranks)
        assert sorted(layout) == [str(r) for r in range(ranks)]
        by_name: dict[str, list] = {}
        for shards in layout.values():
            for s in shards:
                by_name.setdefault(s["name"], []).append(s)
        qkv = by_name["attention.query_key_value.weight"]
        covered = sorted(tuple(r) for s in qkv for r in s["ranges"])
        assert covered[0][0] == 0 and covered[-1][1] == 3 * LayerConfig().hidden
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))  # no gap, no overlap
        assert sum(s["local_shape"][0] for s in qkv) == 3 * LayerConfig().hidden


def _chart_json(at, i):
    import json

    return json.loads(at.get("plotly_chart")[i].proto.spec)


def _lesson_with_blocks(tmp_path, body: str):
    lessons = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    folder = new_lesson("blocks", {"zh-TW": "元件", "en": "Blocks"}, lessons_dir=lessons)
    for lang in LANGS:
        path = folder / f"{lang}.md"
        path.write_text(path.read_text(encoding="utf-8") + "\n\n" + body + "\n", encoding="utf-8")
    return lessons


def test_page_section_and_markdown_block_draw_the_same_widget(tmp_path, monkeypatch):
    """Lesson 6's WordPiece section and a ```widget tokenizer``` block are one widget: same text,
    same figure (the data and every label), only the page adds its counts and split table."""
    from ui.widgets import WIDGETS as DRAWN

    assert set(DRAWN) == set(WIDGETS)
    page = run_lesson("bert-inputs", "en")
    text = page.text_input(key="bert-inputs.wp_text").value
    monkeypatch.setenv(
        "ATTENTION_LAB_LESSONS", str(_lesson_with_blocks(tmp_path, f"```widget tokenizer\ntext: {text}\n```"))
    )
    md = run_lesson("blocks", "en")
    assert not md.exception and not md.error
    from_page, from_block = _chart_json(page, 0), _chart_json(md, 0)
    assert from_page["data"] == from_block["data"]
    assert from_page["layout"]["title"] == from_block["layout"]["title"]


def test_seed_range_is_one_range_for_the_check_and_the_renderer(tmp_path, monkeypatch):
    """Issue 15: ``seed: 20000`` passed the lesson check and then failed in the renderer."""
    from core.widgets import SEED, parse_block, validate

    def block(seed):
        return parse_block("widget", "mask-simulator", [(2, f"seed: {seed}")], 1, 3)

    assert validate(block(20000))[1] == []  # what the check accepts ...
    assert validate(block(SEED.maximum))[1] == []
    assert validate(block(SEED.maximum + 1))[1]  # ... up to the one maximum
    lessons = _lesson_with_blocks(tmp_path, f"```widget mask-simulator\nseed: {SEED.maximum}\n```")
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(lessons))
    at = run_lesson("blocks", "en")
    assert not at.exception and not at.error, [e.value for e in at.exception] + [c.value for c in at.code]
    seed = next(n for n in at.number_input if n.key.endswith(".seed"))
    assert (seed.value, seed.max, seed.min) == (SEED.maximum, SEED.maximum, SEED.minimum)
    page = run_lesson("bert-outputs", "en")  # the page's seed box takes the same range
    page_seed = page.number_input(key="bert-outputs.seed")
    assert (page_seed.min, page_seed.max) == (SEED.minimum, SEED.maximum)


def test_figure_builders_take_one_labels_dict_and_refuse_unknown_keys():
    import pytest as _pytest

    from core.figures import bert as fb
    from core.figures import seq2seq as fs

    fig = fs.loss_curve([(1, 2.0), (2, 1.0)], labels={"title": "<b>loss</b>", "x": "步", "y": "損失"})
    assert fig.layout.title.text == "&lt;b&gt;loss&lt;/b&gt;"  # escaped, as every label
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("步", "損失")
    with _pytest.raises(KeyError, match="x_title"):
        fb.norms_figure(["a"], {"token": [1.0]}, labels={"x_title": "typo"})
