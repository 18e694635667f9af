"""The BERT model picker is not a file browser; the default model; deadlines on the network; failed
loads are not cached. Tiny random BERTs built here, a local socket that never answers, no downloads."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForPreTraining, BertModel, BertTokenizer

import core.bert as cb
from core.bert import loader

torch.set_num_threads(2)
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "mat", "中", "文"] + [f"w{i}" for i in range(30)]


def save_tiny(folder: Path, cls=BertModel, vocab: list[str] | None = None, **cfg) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    words = SPECIALS + WORDS if vocab is None else vocab
    base = dict(
        vocab_size=len(SPECIALS + WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        type_vocab_size=2,
    )
    cls(BertConfig(**{**base, **cfg})).save_pretrained(folder)
    if words:
        (folder / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
        BertTokenizer.from_pretrained(str(folder)).save_pretrained(folder)
    return folder


@pytest.fixture()
def models(tmp_path, monkeypatch):
    """An instructor's models directory, a tiny stand-in for the embedded model, no project BERT,
    no repository models/ folder, offline."""
    folder = tmp_path / "models"
    folder.mkdir()
    save_tiny(tmp_path / "embedded")
    monkeypatch.setenv(loader.MODELS_DIR_ENV, str(folder))
    monkeypatch.setattr(loader, "REPO_ROOT", tmp_path / "repo")
    monkeypatch.setattr(loader, "embedded_model_dir", lambda: tmp_path / "embedded")
    monkeypatch.setattr(loader, "default_model_dir", lambda: tmp_path / "repo" / "models" / "attention-lab-bert")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loader, "_HUB_FAILED", {})
    monkeypatch.setattr(loader, "_HUB_INFLIGHT", {})
    return folder


# ---------------------------------------------------------------- not a file browser


def test_paths_are_refused_with_one_message_that_reveals_nothing(models, tmp_path):
    good = save_tiny(models / "tiny")  # a valid model: refused all the same when given as a path
    (tmp_path / "secret.txt").write_text("x")
    sources = [
        "/etc/shadow",
        "/etc/passwd",
        "/proc/self/cwd",
        "~",
        "~/",
        "~root",
        "/nonexistent/nothing",
        str(good),
        str(models),
        str(tmp_path / "secret.txt"),
        "../../etc",
        "./models/tiny",
        "..",
        "C:\\Windows",
        "a/b/c",
        "tiny/",
        "file:///etc/passwd",
    ]
    bundles = [cb.load(s, device="cpu") for s in sources]
    assert {b.notice_code for b in bundles} == {"not_allowed"}
    assert len({b.notice for b in bundles}) == 1  # one message whatever the path
    notice = bundles[0].notice
    assert "/" not in notice and "shadow" not in notice and str(tmp_path) not in notice
    assert all(b.name == cb.EMBEDDED_NAME for b in bundles)


def test_models_are_listed_and_loaded_by_name_only(models, monkeypatch):
    save_tiny(models / "tiny")
    (models / "not-a-model").mkdir()
    (models / "file.txt").write_text("x")
    assert loader.local_models() == ["tiny"]
    b = cb.load("tiny", device="cpu")
    assert b.notice is None and b.name == "tiny" and Path(b.path) == models / "tiny"
    # a second models directory; the first one wins a name
    other = models.parent / "more"
    save_tiny(other / "tiny", max_position_embeddings=32)
    save_tiny(other / "second")
    import os

    monkeypatch.setenv(loader.MODELS_DIR_ENV, os.pathsep.join([str(models), str(other)]))
    assert loader.local_models() == ["second", "tiny"]
    assert cb.load("tiny", device="cpu").config.max_position_embeddings == 64


def test_folder_without_tokenizer_files_is_refused(models):
    save_tiny(models / "no-tokenizer", vocab=[])
    b = cb.load("no-tokenizer", device="cpu")
    assert b.notice_code == "no_tokenizer" and b.name == cb.EMBEDDED_NAME and "vocab.txt" in b.notice


def test_tokenizer_of_only_special_tokens_is_refused(models):
    save_tiny(models / "specials-only", vocab=list(SPECIALS))
    b = cb.load("specials-only", device="cpu")
    assert b.notice_code == "no_tokenizer" and "[UNK]" in b.notice


@pytest.mark.parametrize(
    "config, says",
    [
        ("{oops", "not valid JSON"),
        ('{"model_type": "bert", "hidden_size": "big"}', "hidden_size"),
        ('{"model_type": "bert", "max_position_embeddings": 0}', "max_position_embeddings"),
        ('{"model_type": "bert", "hidden_size": 10, "num_attention_heads": 4}', "multiple"),
        ('["bert"]', "does not hold"),
    ],
)
def test_bad_config_is_reported_as_a_bad_config(models, config, says):
    folder = save_tiny(models / "broken")
    (folder / "config.json").write_text(config, encoding="utf-8")
    b = cb.load("broken", device="cpu")
    assert b.notice_code == "bad_config" and says in b.notice


def test_max_tokens_follows_the_models_position_table(models):
    save_tiny(models / "short", max_position_embeddings=40)
    save_tiny(models / "long", max_position_embeddings=512)
    assert cb.load("short", device="cpu").max_tokens == 40
    assert cb.load("long", device="cpu").max_tokens == loader.APP_MAX_TOKENS == 128


def test_a_short_position_table_caps_what_the_views_read(models):
    """A BERT with 40 positions reads 40 tokens in every view (a forward past its table crashes)."""
    from core.attention import encode, explain_head
    from core.bert.outputs import similarity

    save_tiny(models / "short", max_position_embeddings=40)
    b = cb.load("short", device="cpu")
    long_text = " ".join(WORDS * 30)
    enc = encode(b, long_text)
    assert enc.n_tokens == 40 and enc.n_tokens_full > 40
    assert len(enc.tokens) == 40 and enc.attentions[0].shape[-1] == 40
    assert explain_head(b, long_text, 0, 1).n_tokens == 40
    sims = similarity(b, [long_text, "a"])
    assert sims.shape == (2, 2)


# ---------------------------------------------------------------- the default model


def test_default_is_the_project_bert_when_its_folder_is_there(models, tmp_path):
    assert cb.load("", device="cpu").name == cb.EMBEDDED_NAME  # not trained yet
    lab = save_tiny(loader.default_model_dir(), BertForPreTraining)
    b = cb.load("", device="cpu")
    assert b.name == loader.DEFAULT_MODEL_NAME and b.notice is None and b.is_default
    assert b.heads == frozenset({"mlm", "nsp"}) and Path(b.path) == lab
    # a refused source falls back to it
    assert cb.load("/etc/shadow", device="cpu").name == loader.DEFAULT_MODEL_NAME
    # the embedded model stays one choice away
    e = cb.load(loader.EMBEDDED_SOURCE, device="cpu")
    assert e.name == cb.EMBEDDED_NAME and e.notice is None
    # a broken project folder: the embedded model, saying why
    (lab / "config.json").write_text("{oops")
    b = cb.load("", device="cpu")
    assert b.name == cb.EMBEDDED_NAME and b.notice_code == "bad_config"


# ---------------------------------------------------------------- network deadlines


@pytest.fixture()
def black_hole(monkeypatch, tmp_path):
    """HF_ENDPOINT pointed at a local server that accepts connections and never answers."""
    import huggingface_hub.constants as hc

    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.1)
    held, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                pass

    threading.Thread(target=accept, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(loader, "NETWORK_DEADLINE_S", 1.0)
    yield held
    stop.set()
    for c in held:
        c.close()
    server.close()


def _timed(fn, *args, limit=20.0):
    """fn(*args) in a thread: (result, seconds); the test fails instead of hanging."""
    box = {}

    def run():
        t0 = time.perf_counter()
        box["value"] = fn(*args)
        box["seconds"] = time.perf_counter() - t0

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(limit)
    assert not th.is_alive(), f"still waiting after {limit} s: no deadline on the network"
    return box["value"], box["seconds"]


def test_a_black_holed_hub_gives_the_fallback_within_the_deadline(models, black_hole):
    b, seconds = _timed(cb.load, "org/black-holed", "cpu")
    assert black_hole, "the loader never reached the test server"
    assert b.notice_code == "network_timeout" and b.name == cb.EMBEDDED_NAME
    assert seconds < 1.0 + 3.0
    again, seconds = _timed(cb.load, "org/black-holed", "cpu")  # nobody waits twice for the same id
    assert again.notice_code == "network_timeout" and seconds < 0.5


def test_nobody_else_waits_for_an_id_being_fetched(models, black_hole):
    """Two sessions choose the same black-holed id at once through ui.bert's cached loader."""
    import ui.bert as ub

    ub._default_bundle.clear()
    ub._bundle_at.clear()
    results = []

    def choose():
        results.append(_timed(ub.get_bundle, "org/everyone-wants-it"))

    threads = [threading.Thread(target=choose) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(25)
    assert len(results) == 2
    codes = sorted(b.notice_code for b, _ in results)
    assert codes in (["network_busy", "network_timeout"], ["network_timeout", "network_timeout"])
    assert max(s for _, s in results) < 1.0 + 3.0
    ub._default_bundle.clear()


# ---------------------------------------------------------------- failures are not cached


def test_a_folder_that_appears_later_loads(models):
    import ui.bert as ub

    ub._default_bundle.clear()
    ub._bundle_at.clear()
    first = ub.get_bundle("late")
    assert first.notice_code == "offline_uncached" and first.name == cb.EMBEDDED_NAME
    save_tiny(models / "late")
    second = ub.get_bundle("late")
    assert second.notice is None and second.name == "late"
    folder = save_tiny(models / "fixed")
    (folder / "config.json").write_text("{oops")
    assert ub.get_bundle("fixed").notice_code == "bad_config"
    save_tiny(folder)
    assert ub.get_bundle("fixed").notice is None
    assert json.loads((folder / "config.json").read_text())["model_type"] == "bert"
    ub._default_bundle.clear()
    ub._bundle_at.clear()


def test_safe_name_escapes_markdown():
    import ui.bert as ub

    assert ub.safe_name("__x__[a](b)") == "\\_\\_x\\_\\_\\[a\\]\\(b\\)"


PICKER_SCRIPT = """
import streamlit as st
from ui.bert import model_picker
with st.sidebar:
    model_picker()
"""


@pytest.mark.parametrize(
    "lang, default, minilm",
    [
        ("en", "Default: Attention Lab BERT", "all-MiniLM-L6-v2 (embedded): English only, no pre-training heads"),
        ("zh-TW", "預設：Attention Lab BERT", "all-MiniLM-L6-v2（內建）：只懂英文，沒有預訓練頭"),
    ],
)
def test_picker_lists_the_default_minilm_and_the_models_folder(models, lang, default, minilm):
    from streamlit.testing.v1 import AppTest

    save_tiny(loader.default_model_dir(), BertForPreTraining)
    save_tiny(models / "course-bert")
    at = AppTest.from_string(PICKER_SCRIPT, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception
    box = at.selectbox(key="bert.choice")
    assert box.options[0].startswith(default) and box.options[1] == minilm and box.options[2] == "course-bert"
    box.select_index(1).run()
    assert at.session_state["bert.source"] == loader.EMBEDDED_SOURCE
    at.selectbox(key="bert.choice").select_index(2).run()
    assert at.session_state["bert.source"] == "course-bert"
    at.button(key="bert.reset_button").click().run()
    assert at.session_state["bert.source"] == "" and not at.exception


def test_sentiment_fitted_on_a_fallback_is_not_kept_for_a_source_that_loads_later(models, monkeypatch):
    import ui.bert as ub

    fitted = []
    monkeypatch.setattr(ub, "_sentiment", lambda path, source, lang: fitted.append((path, source)) or (path, source))
    ub._default_bundle.clear()
    ub._bundle_at.clear()
    first = ub.sentiment("later", "en")  # not there yet: the default's model
    save_tiny(models / "later")
    second = ub.sentiment("later", "en")
    assert first == (str(models.parent / "embedded"), "") and second == (str(models / "later"), "later")
    ub._default_bundle.clear()
    ub._bundle_at.clear()
