"""AppTest for lessons 6–7: both languages, bad input, a refused model source, and a model with heads."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import BertForPreTraining, BertTokenizer

from core.bert.params import hf_config
from tests.apptest import plotly_values, run_lesson, texts

torch.set_num_threads(2)


def _errors(at) -> list[str]:
    return [e.value for e in at.error] + [str(e.value) for e in at.exception]


def _charts(at) -> int:
    return len(at.get("plotly_chart"))


def _metric(at, label: str) -> str:
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r}: {[m.label for m in at.metric]}")


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_inputs_page_renders(lang):
    from core.bert import BERT_BASE, BERT_LARGE, count

    at = run_lesson("bert-inputs", lang)
    assert _errors(at) == []
    assert _charts(at) == 7  # wordpiece, pair rows, batch, strips, norms, anatomy, one layer
    assert _metric(at, "BERT-base") == f"{count(**BERT_BASE).bert_model_total:,}" == "109,482,240"
    assert _metric(at, "BERT-large") == f"{count(**BERT_LARGE).bert_model_total:,}"
    assert "all-MiniLM-L6-v2" in texts(at)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_outputs_page_renders(lang):
    from core.bert import load
    from core.bert.sentiment import SentimentScorer, load_posts, posts_file, sentiment_factor

    at = run_lesson("bert-outputs", lang)
    assert _errors(at) == []
    # hidden, pooled, trajectory, similarity, masking, fill-mask, NSP, task heads, factor, confusion, own post:
    # the default model keeps both pre-training heads
    assert _charts(at) == 11
    assert "no masked-LM head" not in texts(at) and "沒有遮罩語言模型頭" not in texts(at)
    label = {"en": "Held-out accuracy", "zh-TW": "保留資料準確率"}[lang]
    expected = sentiment_factor(SentimentScorer(load("", device="cpu"), load_posts(posts_file(lang)))).accuracy
    assert _metric(at, label) == f"{expected:.1%}"


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_fill_mask_and_nsp_examples_are_in_the_page_language(lang):
    from core.bert import fill_mask, load, next_sentence
    from ui.i18n import strings

    bundle = load("", device="cpu")
    table = strings(lang)
    examples = table["bert_outputs.fill_examples"].splitlines()
    pairs = [tuple(x.strip() for x in line.split("|")) for line in table["bert_outputs.nsp_examples"].splitlines()]
    cjk = any("\u4e00" <= c <= "\u9fff" for c in examples[0] + pairs[0][0])
    assert cjk == (lang == "zh-TW")
    at = run_lesson("bert-outputs", lang)
    assert at.text_input(key="bert-outputs.fill_text").value == examples[0]
    at.selectbox(key="bert-outputs.fill_text_pick").set_value(examples[2]).run()
    assert at.text_input(key="bert-outputs.fill_text").value == examples[2]
    at.selectbox(key="bert-outputs.nsp_pick").set_value(f"{pairs[1][0]}  ⟶  {pairs[1][1]}").run()
    assert (at.text_input(key="bert-outputs.nsp_a").value, at.text_input(key="bert-outputs.nsp_b").value) == pairs[1]
    assert _errors(at) == []
    # the figures show what the model on screen computes for those inputs
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    fill = [
        f
        for f in specs
        if f["layout"].get("title", {}).get("text", "").startswith(table["bert_outputs.fill_title"][:8])
    ]
    top = fill_mask(bundle, examples[2], top_k=5).masks[0]["top"][0]["token"]
    assert fill and top in json.dumps(fill[0]["data"], ensure_ascii=False)
    r = next_sentence(bundle, *pairs[1])
    nsp = [f for f in specs if f["data"] and f["data"][0].get("x") == ["IsNext", "NotNext"]]
    assert len(nsp) == 1
    assert plotly_values(nsp[0]["data"][0]["y"]) == pytest.approx([r.is_next, r.not_next], abs=1e-4)


def test_examples_follow_a_change_of_language_unless_edited():
    from ui.i18n import strings

    zh, en = (strings(lang)["bert_outputs.fill_examples"].splitlines()[0] for lang in ("zh-TW", "en"))
    at = run_lesson("bert-outputs", "zh-TW")
    assert at.text_input(key="bert-outputs.fill_text").value == zh
    at.text_input(key="bert-outputs.nsp_b").set_value("我自己寫的句子。")
    at.query_params["lang"] = "en"
    at.run()
    assert at.text_input(key="bert-outputs.fill_text").value == en  # the page's own example follows
    assert at.text_input(key="bert-outputs.nsp_b").value == "我自己寫的句子。"  # the student's text stays
    assert _errors(at) == []


def test_fill_mask_says_when_it_cuts():
    at = run_lesson("bert-outputs", "en")
    at.text_input(key="bert-outputs.fill_text").set_value("the market opened higher " * 20 + "[MASK].").run()
    assert any(w.value.startswith("Only the first 64 tokens are shown") for w in at.warning)
    assert _errors(at) == []


BAD = [
    "",
    " \u200b\u200b ",
    "x" * 10_000,
    "🙂🙂🙂",
    "مرحبا بالعالم",
    "<script>alert(1)</script><img src=x onerror=alert(2)>",
    "注意力機制" * 300,
]


@pytest.mark.parametrize("value", BAD, ids=["empty", "zero-width", "10k", "emoji", "rtl", "html", "cjk-long"])
def test_inputs_page_survives_bad_text(value):
    at = run_lesson("bert-inputs", "en")
    for key in ("bert-inputs.wp_text", "bert-inputs.pair_a", "bert-inputs.batch_b", "bert-inputs.emb_a"):
        at.text_input(key=key).set_value(value)
    at.run()
    assert _errors(at) == []
    shown = texts(at)
    if not value.strip("\u200b "):
        assert "The text is empty" in shown
    if len(value) >= 1500:
        assert "Only the first 64 tokens are shown" in shown or "cut to the first" in shown
    assert "<script>" not in "".join(m.value for m in at.markdown)  # never rendered as Markdown/HTML


@pytest.mark.parametrize("value", BAD[:4] + BAD[5:6], ids=["empty", "zero-width", "10k", "emoji", "html"])
def test_outputs_page_survives_bad_text(value):
    at = run_lesson("bert-outputs", "en")
    for key in ("bert-outputs.text", "bert-outputs.mlm_text", "bert-outputs.heads_text", "bert-outputs.own_post"):
        at.text_input(key=key).set_value(value)
    at.text_area(key="bert-outputs.sentences").set_value(value)
    at.run()
    assert _errors(at) == []


def test_refused_source_falls_back_with_a_translated_notice(tmp_path):
    at = run_lesson("bert-outputs", "zh-TW")
    at.session_state["bert.source"] = str(tmp_path / "no-such-model")
    at.run()
    assert _errors(at) == []
    assert any("只能載入上面列出的模型" in w.value for w in at.warning)
    assert not any(str(tmp_path) in x.value for x in at.text)  # nothing about the server's files


@pytest.fixture(scope="module")
def tiny_pretraining(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-pre")
    words = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "the",
        "market",
        "opened",
        "higher",
        "chip",
        "makers",
        ".",
        "a",
        "b",
    ] + [f"w{i}" for i in range(30)]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    cfg = hf_config(vocab=len(words), hidden=16, layers=2, heads=2, intermediate=32, max_position=64)
    BertForPreTraining(cfg).save_pretrained(folder)
    BertTokenizer.from_pretrained(str(folder)).save_pretrained(folder)
    return folder


def test_model_with_heads_shows_fill_mask_and_nsp(tiny_pretraining, monkeypatch):
    monkeypatch.setenv("ATTNLAB_MODELS_DIR", str(tiny_pretraining.parent))
    at = run_lesson("bert-outputs", "en")
    at.session_state["bert.source"] = tiny_pretraining.name
    at.run()
    assert _errors(at) == [] and [w.value for w in at.warning if "[UNK]" not in w.value] == []
    assert "no masked-LM head" not in texts(at)
    # fill-mask top-k and the NSP probabilities; a 44-word vocabulary cannot read the posts: no sentiment figures
    assert _charts(at) == 8 and any("cannot read these posts" in w.value for w in at.warning)
    at.text_input(key="bert-outputs.fill_text").set_value("the market opened higher").run()
    assert "Write [MASK]" in texts(at)


PICKER_SCRIPT = """
import streamlit as st
from ui.bert import model_picker
with st.sidebar:
    model_picker()
"""

PICKER_CHECK = """
import sys
from streamlit.testing.v1 import AppTest
from tests.test_bert_pages import PICKER_SCRIPT
assert 'torch' not in sys.modules
at = AppTest.from_string(PICKER_SCRIPT, default_timeout=60)
at.query_params['lang'] = 'en'
at.run()
assert not at.exception, at.exception
at.text_input(key='bert.source_input').set_value('  bert-base-uncased  ').run()
at.button(key='bert.load_button').click().run()
assert at.session_state['bert.source'] == 'bert-base-uncased'
at.button(key='bert.reset_button').click().run()
assert at.session_state['bert.source'] == ''
print('torch' in sys.modules)
"""


def test_model_picker_sets_the_source_without_importing_torch():
    import subprocess
    import sys
    from pathlib import Path

    # A fresh interpreter that imports only the picker (this module's own imports pull in torch,
    # so PICKER_CHECK must not import it: it reads PICKER_SCRIPT through a light import path).
    root = Path(__file__).resolve().parents[1]
    code = PICKER_CHECK.replace("from tests.test_bert_pages import PICKER_SCRIPT", f"PICKER_SCRIPT = {PICKER_SCRIPT!r}")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("lesson_id", ["bert-inputs", "bert-outputs"])
def test_presenter_mode_reveals_step_by_step(lesson_id):
    from core.lessons import load_catalog

    last = len(load_catalog().get(lesson_id).steps("zh-TW")) - 1
    first = run_lesson(lesson_id, "zh-TW", present=True, step=1)
    assert _errors(first) == [] and _charts(first) == 0  # the intro only: no figure yet
    end = run_lesson(lesson_id, "zh-TW", present=True, step=last + 1)
    assert _errors(end) == [] and _charts(end) == (7 if lesson_id == "bert-inputs" else 11)


def test_sentence_vectors_say_when_they_cut_a_long_text():
    from core.bert import load

    long = "The market opened higher and chip makers led the gains " * 30
    n = len(load("", device="cpu").tokenizer(long)["input_ids"])  # the tokenizer's own count
    assert n > 128
    at = run_lesson("bert-outputs", "en")
    assert not [w.value for w in at.warning if "tokens are shown" in w.value]
    at.text_area(key="bert-outputs.sentences").set_value(f"A short one.\n{long}\nAnother short one.").run()
    assert f"Only the first 128 tokens are shown (the input had {n})." in [w.value for w in at.warning]
    at.text_area(key="bert-outputs.sentences").set_value("A short one.\nAnother short one.").run()
    at.text_input(key="bert-outputs.own_post").set_value(long).run()
    assert [w.value for w in at.warning if "tokens are shown" in w.value] == [
        f"Only the first 128 tokens are shown (the input had {n})."
    ]
    assert _errors(at) == []


def test_next_sentence_says_when_it_cuts(tiny_pretraining, monkeypatch):
    monkeypatch.setenv("ATTNLAB_MODELS_DIR", str(tiny_pretraining.parent))
    at = run_lesson("bert-outputs", "en")
    at.session_state["bert.source"] = tiny_pretraining.name
    at.run()
    assert [w.value for w in at.warning if "[UNK]" not in w.value] == []
    at.text_input(key="bert-outputs.nsp_a").set_value("the market opened higher " * 20).run()
    assert any(w.value.startswith("Only the first 64 tokens are shown") for w in at.warning)
    assert _errors(at) == []
