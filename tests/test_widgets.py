"""Every widget a lesson can embed has a renderer and draws, with its defaults, in both languages."""
from __future__ import annotations

import shutil

import pytest

from core.lessons import LANGS, ROOT, new_lesson
from core.widgets import WIDGETS
from tests.apptest import run_lesson


def test_every_widget_spec_has_a_renderer_and_nothing_else():
    from ui.widgets import RENDERERS

    assert set(RENDERERS) == set(WIDGETS)


@pytest.fixture(scope="module")
def all_widgets_lesson(tmp_path_factory):
    lessons = tmp_path_factory.mktemp("widgets") / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    folder = new_lesson("all-widgets", "全部元件", "All widgets", lessons_dir=lessons)
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
    assert len(at.get("plotly_chart")) == len(WIDGETS)


def test_a_student_can_change_a_widget_text(all_widgets_lesson, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_LESSONS", str(all_widgets_lesson))
    at = run_lesson("all-widgets", "en")
    box = next(b for b in at.text_input if b.key.endswith("widget-tokenizer-" + b.key.split("-")[-1].split(".")[0] + ".text")
               or "tokenizer" in b.key)
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
