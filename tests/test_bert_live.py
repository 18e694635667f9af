"""Lesson 7's live steps: "watch BERT learn" (unit and AppTest: start, progress, finish, cancel, two runs at
once) and the sentiment factor in the page's language ([UNK] guard, Chinese posts, held-out accuracy)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
import torch

from tests.apptest import lesson_app, texts

ROOT = Path(__file__).resolve().parents[1]
RUN_KEY, STEPS_KEY = "bert-outputs.live_run", "bert-outputs.live_steps"


def _wait(run, timeout: float = 300) -> dict:
    run.thread.join(timeout)
    assert not run.thread.is_alive(), "the run did not finish in time"
    return run.snapshot()


# ---------------------------------------------------------------- unit: the background run


def test_run_finishes_with_losses_progress_and_three_cloze_snapshots():
    from core.bert.live import CLOZE, _prepared
    from ui.bert_live import LiveRun

    run = LiveRun(steps=10, time_budget_s=None).start()
    snap = _wait(run)
    assert snap["done"] and not snap["cancelled"] and snap["error"] is None
    assert snap["step"] == snap["steps"] == 10
    assert len(snap["mlm"]) == len(snap["nsp"]) == 10
    assert all(math.isfinite(x) for x in snap["mlm"] + snap["nsp"])
    # a freshly initialised BERT (weights N(0, 0.02)) guesses nearly uniformly: loss ~ ln V and ~ ln 2
    vocab = len(_prepared()[0])
    assert abs(snap["mlm"][0] - math.log(vocab)) < 0.5
    assert abs(snap["nsp"][0] - math.log(2)) < 0.2
    assert set(snap["cloze"]) == {"start", "middle", "end"}
    for phase in snap["cloze"].values():
        for lang, sentences in CLOZE.items():
            assert [r["text"] for r in phase[lang]] == sentences
            for row in phase[lang]:
                probs = [c["prob"] for c in row["candidates"]]
                assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6


def test_stop_ends_the_run_early():
    from ui.bert_live import LiveRun

    run = LiveRun(steps=120, time_budget_s=None).start()
    deadline = time.monotonic() + 120
    while run.snapshot()["step"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    run.cancel.set()
    snap = _wait(run)
    assert snap["done"] and snap["cancelled"]
    assert 2 <= snap["step"] < 120 and len(snap["mlm"]) == snap["step"]
    assert "end" in snap["cloze"]  # the model as far as it got is still shown


def test_time_budget_ends_the_run_on_the_clock():
    """On a busy machine the run still ends in time: the budget stops it (finished, not cancelled), the bar
    reaches 100 %, and the middle snapshot is taken at half the time."""
    from ui.bert_live import BUDGET_S, LiveRun

    assert BUDGET_S <= 50  # + three cloze snapshots: within the lesson's minute
    t0 = time.monotonic()
    snap = _wait(
        LiveRun(steps=100_000, time_budget_s=3.0).start()
    )  # more steps than 3 s allow anywhere: the clock ends it
    assert snap["done"] and not snap["cancelled"] and snap["error"] is None
    assert 1 <= snap["step"] < 100_000 and snap["progress"] == 1.0
    assert set(snap["cloze"]) == {"start", "middle", "end"}
    assert time.monotonic() - t0 < 3.0 + 20  # the budget, plus one step and the snapshots on a loaded machine


def test_two_runs_at_once_do_not_interfere():
    """Two sessions training together get exactly what each gets alone (same seed), and a different seed
    gives a different run: nothing random is shared between the threads."""
    from ui.bert_live import LiveRun

    a, b = LiveRun(steps=6, seed=0, time_budget_s=None).start(), LiveRun(steps=6, seed=0, time_budget_s=None).start()
    sa, sb = _wait(a), _wait(b)
    alone = _wait(LiveRun(steps=6, seed=0, time_budget_s=None).start())
    other = _wait(LiveRun(steps=6, seed=1, time_budget_s=None).start())
    assert sa["mlm"] == sb["mlm"] == alone["mlm"] and sa["nsp"] == sb["nsp"] == alone["nsp"]
    assert other["mlm"] != alone["mlm"]


def test_comparison_numbers_come_from_the_presets_and_the_manifest():
    from core.bert.live import LIVE, _prepared
    from core.bert.loader import default_model_dir
    from core.bert.pretrain import build_model
    from ui.bert_live import comparison

    manifest = default_model_dir() / "manifest.json"
    c = comparison(str(manifest))
    tok, enc = _prepared()
    model = build_model(LIVE, tok, torch.Generator().manual_seed(0))
    assert c["live"]["parameters"] == sum(p.numel() for p in model.parameters())  # tied decoder counted once
    assert (c["live"]["layers"], c["live"]["hidden"], c["live"]["steps"]) == (LIVE.layers, LIVE.hidden, LIVE.steps)
    assert c["live"]["tokens"] == sum(len(s) for d in enc.docs for s in d)
    m = json.loads(manifest.read_text(encoding="utf-8"))
    assert c["shipped"]["parameters"] == m["parameters"]
    assert c["shipped"]["layers"] == m["recipe"]["layers"] and c["shipped"]["seconds"] == m["train_seconds"]
    assert c["shipped"]["tokens"] == sum(m["corpus"]["train_tokens"].values())
    assert comparison(None)["shipped"] is None


# ---------------------------------------------------------------- unit: posts in the page's language


def test_chinese_posts_are_well_formed():
    from core.bert.sentiment import LABELS, load_posts, posts_file

    assert posts_file("zh-TW").name == "posts_zh.json" and posts_file("en").name == "posts.json"
    data = load_posts(posts_file("zh-TW"))
    train = [p["text"] for p in data["train"]]
    held = [p["text"] for d in data["days"] for p in d["posts"]]
    assert len(train) + len(held) >= 150
    assert {lab: sum(p["label"] == lab for p in data["train"]) for lab in LABELS} == dict.fromkeys(LABELS, 24)
    assert len(set(train + held)) == len(train + held) and not set(train) & set(held)
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in train + held)


def test_unk_rate_counts_unknown_pieces():
    from core.bert.loader import EMBEDDED_SOURCE, load
    from core.bert.sentiment import load_posts, posts_file, unk_rate

    minilm = load(EMBEDDED_SOURCE, device="cpu").tokenizer
    lab = load("", device="cpu").tokenizer
    texts_zh = [p["text"] for p in load_posts(posts_file("zh-TW"))["train"]]
    pieces = [tok for s in texts_zh for tok in minilm.tokenize(s)]  # reference: count by hand
    assert unk_rate(minilm, texts_zh) == pytest.approx(pieces.count("[UNK]") / len(pieces))
    assert unk_rate(minilm, texts_zh) > 0.10  # MiniLM cannot read the Chinese posts: the page warns
    assert unk_rate(lab, texts_zh) < 0.01  # the project's BERT can
    assert unk_rate(minilm, ["the market is up"]) == 0.0


# ---------------------------------------------------------------- AppTest


def _live_app(lang: str = "en"):
    at = lesson_app("bert-outputs", lang)
    at.run()
    assert [e.value for e in at.exception] == []
    return at


def test_apptest_start_progress_finish():
    at = _live_app("en")
    assert at.button(key="bert-outputs.live_start").label == "Start pre-training"
    assert RUN_KEY not in at.session_state and 'Press "Start pre-training"' in texts(at)
    at.slider(key=STEPS_KEY).set_value(10)
    at.button(key="bert-outputs.live_start").click().run()
    run = at.session_state[RUN_KEY]
    assert at.button(key="bert-outputs.live_start").disabled  # one run at a time
    assert not at.button(key="bert-outputs.live_stop").disabled
    assert len(at.get("progress")) >= 1  # the progress bar is drawn at once
    _wait(run)
    at.run()
    assert [e.value for e in at.exception] == []
    shown = texts(at)
    assert "Done: 10 steps" in shown
    assert len(at.get("vega_lite_chart")) >= 1  # the two losses
    cloze = [df for df in at.dataframe if "start" in df.value.columns]
    assert cloze and {"start", "middle", "end"} <= set(cloze[0].value.columns)
    assert not at.button(key="bert-outputs.live_start").disabled


def test_apptest_cancel_and_chinese():
    at = _live_app("zh-TW")
    at.button(key="bert-outputs.live_start").click().run()
    run = at.session_state[RUN_KEY]
    at.button(key="bert-outputs.live_stop").click().run()
    snap = _wait(run)
    at.run()
    assert snap["cancelled"] and snap["step"] < snap["steps"]
    assert f"在第 {snap['step']} 步" in texts(at)
    # the comparison table: the live preset beside the shipped model, in Chinese
    tables = [df.value for df in at.dataframe if "項目" in df.value.columns]
    assert tables and {"這次的即時訓練", "預設模型（隨專案發布）"} <= set(tables[0].columns)


def test_sentiment_uses_chinese_posts_on_the_chinese_page():
    from core.bert import load
    from core.bert.sentiment import SentimentScorer, load_posts, posts_file, sentiment_factor

    at = _live_app("zh-TW")
    expected = sentiment_factor(SentimentScorer(load("", device="cpu"), load_posts(posts_file("zh-TW")))).accuracy
    assert [m.value for m in at.metric if m.label == "保留資料準確率"] == [f"{expected:.1%}"]
    held = {p["text"] for d in load_posts(posts_file("zh-TW"))["days"] for p in d["posts"]}
    table = [df.value for df in at.dataframe if "貼文" in df.value.columns]
    assert table and set(table[0]["貼文"]) == held


def test_sentiment_warns_for_a_model_that_cannot_read_the_language():
    from core.bert.loader import EMBEDDED_SOURCE

    at = lesson_app("bert-outputs", "zh-TW")
    at.session_state["bert.source"] = EMBEDDED_SOURCE
    at.run()
    assert [e.value for e in at.exception] == []
    warnings = " ".join(w.value for w in at.warning)
    assert "[UNK]" in warnings and "讀不懂" in warnings
    assert not [m for m in at.metric if m.label == "保留資料準確率"]  # no score for unreadable posts
