"""Every example sentence the lessons and locales ship tokenizes with no [UNK] under the default BERT.

Collected independently of the pages: the ```widget``` blocks of every lesson's Markdown (their text
arguments), the BERT lessons' example keys in ui/locales (…_default, …_examples, the presets of lessons
4–5), the defaults of core/widgets.py's BERT widgets, and the sentiment posts of both languages. The
tokenizer is the default model's own (the project's bilingual BERT when installed), asked directly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.lessons.catalog import load_locale_keys
from core.lessons.markdown import split_steps
from core.widgets import WIDGETS, Block

ROOT = Path(__file__).resolve().parents[1]
BERT_WIDGETS = ("attention-heatmap", "head-grid", "tokenizer", "embedding-sum", "mask-simulator")
BERT_NAMESPACES = ("bert_inputs", "bert_outputs", "self_attention", "multi_head", "widgets")
TEXT_ARGS = ("text", "text_b")


def _split(value: str) -> list[str]:
    """A locale value may hold several examples: one per line, NSP pairs as "A | B"."""
    out = []
    for line in value.splitlines():
        out += [part.strip() for part in line.split(" | ") if part.strip()]
    return out


def widget_sentences(markdown: str, where: str) -> list[tuple[str, str]]:
    """The text arguments of a lesson's BERT widget blocks."""
    found = []
    for step in split_steps(markdown):
        for seg in step.segments:
            if isinstance(seg, Block) and seg.kind == "widget" and seg.name in BERT_WIDGETS:
                found += [(f"{where}:{line}", value) for key, value, line in seg.raw_args if key in TEXT_ARGS]
    return found


def example_sentences() -> list[tuple[str, str]]:
    """(where, sentence) for every shipped example sentence."""
    found: list[tuple[str, str]] = []
    for md in sorted(ROOT.glob("lessons/*/*.md")):
        found += widget_sentences(md.read_text(encoding="utf-8"), str(md.relative_to(ROOT)))
    for lang in ("en", "zh-TW"):
        for key, value in load_locale_keys(lang).items():
            ns, _, name = key.partition(".")
            if ns in BERT_NAMESPACES and (name.endswith(("_default", "_examples")) or name.startswith("presets.")):
                found += [(f"ui/locales/{lang}/{ns}.toml {name}", s) for s in _split(value)]
    for name in BERT_WIDGETS:
        for arg, param in WIDGETS[name].params.items():
            if arg in TEXT_ARGS and param.default:
                found.append((f"core/widgets.py {name}.{arg}", str(param.default)))
    for path in sorted((ROOT / "core/bert/data").glob("posts*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        posts = data["train"] + [p for d in data["days"] for p in d["posts"]]
        found += [(str(path.relative_to(ROOT)), p["text"]) for p in posts]
    return found


@pytest.fixture(scope="module")
def tokenizer():
    from core.bert.loader import DEFAULT_MODEL_NAME, load

    bundle = load("", device="cpu")
    assert bundle.name == DEFAULT_MODEL_NAME, (
        f"the default model is {bundle.name}, not the project's bilingual BERT: install models/{DEFAULT_MODEL_NAME}"
    )
    return bundle.tokenizer


def test_collector_finds_both_languages_and_every_source():
    found = example_sentences()
    wheres = " ".join(w for w, _ in found)
    for source in ("ui/locales/en/", "ui/locales/zh-TW/", "core/widgets.py", "posts_zh.json"):
        assert source in wheres, source
    assert any("\u4e00" <= c <= "\u9fff" for _, s in found for c in s)  # Chinese examples are collected
    assert any("[MASK]" in s for _, s in found)  # and the fill-mask examples


def test_no_example_sentence_has_unk(tokenizer):
    unk = tokenizer.unk_token
    bad = []
    for where, sentence in example_sentences():
        tokens = tokenizer.tokenize(sentence)
        if unk in tokens:
            bad.append(f"{where}: {sentence!r} -> {tokens}")
    assert bad == [], "\n".join(bad)


def test_widget_blocks_are_collected():
    md = "Intro.\n\n## Step {#s}\n\n```widget tokenizer\ntext: 今天 🙂\n```\n\n```widget head-grid\ntext: Hi\n```\n"
    assert [s for _, s in widget_sentences(md, "x.md")] == ["今天 🙂", "Hi"]


def test_check_is_able_to_fail(tokenizer):
    """The same check flags characters the vocabulary lacks (an emoji, a rare CJK extension character)."""
    assert tokenizer.unk_token in tokenizer.tokenize("今天 🙂")
    assert tokenizer.unk_token in tokenizer.tokenize("𠀀")
