"""The project's own BERT: BERT's pre-training recipe, the shipped model, its CLIs, the live preset.

References are independent of the code under test: the paper's 15 % / 80-10-10 and 50/50 NSP rates
(Devlin et al. 2018, §3.1) with binomial tolerances, token ids planted so a pair's origin can be read
back, the manifest written at training time, the SHA-256 of the installed corpus files, torch's softmax.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import core.bert as cb
from core.bert import corpus as corpus_mod
from core.bert.pretrain import IS_NEXT, NOT_NEXT, EncodedDocs, Masker, Recipe, collate, lr_at, lr_at_progress, make_pair
from core.bert.pretraining import IGNORE_INDEX, fill_mask, next_sentence

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "models" / "attention-lab-bert"


def run_cli(*args, timeout=120, env=None):
    proc = subprocess.run(
        [sys.executable, "-m", "core.bert", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        env=env,
    )
    return proc


@pytest.fixture(scope="module")
def shipped():
    return cb.load(MODEL.name, device="cpu")  # by name: the picker loads models from models/ only


@pytest.fixture(scope="module")
def manifest():
    return json.loads((MODEL / "manifest.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the recipe


def within(observed: int, n: int, p: float, sigmas: float = 5.0) -> bool:
    return abs(observed - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


def test_masking_statistics_follow_berts_15_80_10_10(shipped):
    tok = shipped.tokenizer
    g = torch.Generator().manual_seed(7)
    body = torch.randint(5, len(tok), (400, 62), generator=g)
    cls_col = torch.full((400, 1), tok.cls_token_id)
    sep_col = torch.full((400, 1), tok.sep_token_id)
    ids = torch.cat([cls_col, body, sep_col], 1)
    ids[:50, -10:] = tok.pad_token_id  # some padding, never chosen
    masked, labels = Masker(tok)(ids, torch.Generator().manual_seed(3))
    special = torch.isin(ids, torch.tensor(tok.all_special_ids))
    chosen = labels != IGNORE_INDEX
    assert not (chosen & special).any()
    assert (labels[chosen] == ids[chosen]).all() and (masked[~chosen] == ids[~chosen]).all()
    n, k = int((~special).sum()), int(chosen.sum())
    to_mask = int((masked[chosen] == tok.mask_token_id).sum())
    kept = int((masked[chosen] == ids[chosen]).sum())
    assert within(k, n, 0.15) and within(to_mask, k, 0.8)
    # a random replacement may draw the original id itself (1 / |pool|), so "unchanged" is 10 % + a hair
    assert within(kept, k, 0.1 + 0.1 / (len(tok) - 5)) and within(k - to_mask - kept, k, 0.1)
    assert not torch.isin(
        masked[chosen & (masked != ids)], torch.tensor([tok.cls_token_id, tok.sep_token_id, tok.pad_token_id])
    ).any()


def planted_docs(n_docs=40, n_sent=6, sent_len=5):
    """Token id = 10000 * (doc + 1) + 100 * sentence + position: the origin of every token can be read back."""
    return EncodedDocs(
        [
            [np.array([10000 * (d + 1) + 100 * s + i for i in range(sent_len)], np.int32) for s in range(n_sent)]
            for d in range(n_docs)
        ]
    )


def test_nsp_pairs_isnext_is_the_following_sentence_notnext_another_document():
    enc = planted_docs()
    rng = np.random.default_rng(0)
    labels = []
    for _ in range(3000):
        a, b, label = make_pair(enc, rng, budget=40)
        assert len(a) + len(b) <= 40 and len(a) and len(b)
        doc_a, doc_b = a // 10000, b // 10000
        assert (doc_a == doc_a[0]).all() and (doc_b == doc_b[0]).all()
        sent_a_last, sent_b_first = (a[-1] % 10000) // 100, (b[0] % 10000) // 100
        if label == IS_NEXT:
            assert doc_b[0] == doc_a[0] and sent_b_first == sent_a_last + 1 and b[0] % 100 == 0
        else:
            assert label == NOT_NEXT and doc_b[0] != doc_a[0]
        labels.append(label)
    assert within(labels.count(IS_NEXT), len(labels), 0.5)


def test_pairs_are_trimmed_without_moving_the_a_b_boundary():
    enc = planted_docs(n_docs=5, n_sent=4, sent_len=30)
    rng = np.random.default_rng(1)
    for _ in range(200):
        a, b, label = make_pair(enc, rng, budget=20, short_seq_prob=0.0)
        assert len(a) + len(b) <= 20
        if label == IS_NEXT:  # A keeps its end, B its start: they still meet where the document continues
            assert b[0] % 100 == 0 and (b[0] % 10000) // 100 == (a[-1] % 10000) // 100 + 1
            assert a[-1] % 100 == 29  # A's last sentence ends whole: it was trimmed from the front


def test_collate_builds_cls_a_sep_b_sep_with_segments():
    ids, types, att, nsp = collate(
        [(np.array([7, 8]), np.array([9]), 0), (np.array([5]), np.array([6, 6, 6]), 1)], cls_id=2, sep_id=3, pad_id=0
    )
    assert ids.tolist() == [[2, 7, 8, 3, 9, 3, 0], [2, 5, 3, 6, 6, 6, 3]]
    assert types.tolist() == [[0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1]]
    assert att.tolist() == [[1, 1, 1, 1, 1, 1, 0], [1] * 7] and nsp.tolist() == [0, 1]


def test_schedules_warm_up_then_decay_to_zero():
    r = Recipe(steps=1000, warmup_frac=0.1, peak_lr=1e-3)
    assert lr_at(0, r) < lr_at(50, r) < lr_at(99, r) == pytest.approx(1e-3)
    assert lr_at(999, r) < 2e-5 and lr_at(500, r) == pytest.approx(1e-3 * 500 / 900)
    assert lr_at_progress(0.05, r) == pytest.approx(5e-4) and lr_at_progress(1.0, r) == 0.0


# ---------------------------------------------------------------- the shipped model


def test_manifest_names_the_installed_corpus_files_and_meets_its_figures(manifest):
    installed = {(s["package"], s["file"]): s.get("sha256") for s in corpus_mod.sources()}
    shipped = {(s["package"], s["file"]): s.get("sha256") for s in manifest["corpus"]["sources"]}
    assert shipped == installed
    assert manifest["recipe"]["mask_prob"] == 0.15 and manifest["recipe"]["mask_frac"] == 0.8
    for lang in ("zh", "en"):
        m = manifest["heldout"][lang]
        assert m["masked_tokens"] > 5000 and m["pairs"] >= 1000
        assert 0 < m["mlm_top1"] <= m["mlm_top5"] <= 1
    assert manifest["unk_rate_heldout"]["zh"] < 0.01
    size = sum(f.stat().st_size for f in MODEL.iterdir())
    assert size < 40 * 2**20


def test_evaluate_pretraining_reproduces_the_manifest(manifest):
    proc = run_cli("evaluate-pretraining", "--quick", "--json", "--source", str(MODEL))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    for lang in ("zh", "en"):
        want = manifest["heldout_quick"][lang]
        for key in ("mlm_top1", "mlm_top5", "nsp_accuracy", "masked_tokens", "pairs"):
            assert got["heldout"][lang][key] == pytest.approx(want[key], abs=1e-3), (lang, key)  # a tie or two
        assert got["unk_rate_heldout"][lang] == pytest.approx(manifest["unk_rate_heldout"][lang], abs=1e-9)


def test_loads_as_a_local_folder_with_both_heads_and_eager_attentions(shipped):
    assert shipped.heads == frozenset({"mlm", "nsp"}) and shipped.notice is None
    enc = shipped.tokenizer(
        "注意力機制讓模型看見整個句子。", "Attention lets the model see the whole sentence.", return_tensors="pt"
    )
    with torch.no_grad():
        out = shipped.model(**enc, output_attentions=True)
    att = out.attentions
    assert len(att) == shipped.config.num_hidden_layers
    T = enc["input_ids"].shape[1]
    for a in att:
        assert a.shape == (1, shipped.config.num_attention_heads, T, T)
        assert torch.allclose(a.sum(-1), torch.ones(1, a.shape[1], T), atol=1e-5)


def _logp(bundle, text, target):
    fm = fill_mask(bundle, text, top_k=len(bundle.tokenizer))
    tid = bundle.tokenizer.convert_tokens_to_ids(target)
    return math.log(next(c["probability"] for c in fm.masks[0]["top"] if c["id"] == tid))


@pytest.mark.parametrize(
    "text, target",
    [
        ("中華人民共和[MASK]成立於一九四九年。", "國"),
        ("今天的天氣非常[MASK]，我們去公園散步吧。", "好"),
        ("經濟發展和社會進[MASK]都很重要。", "步"),
        ("The president of the united [MASK] spoke to congress.", "states"),
        ("He was born in new [MASK] city.", "york"),
    ],
)
def test_fill_mask_uses_context(shipped, text, target):
    """The true token's log-probability rises with context, against the bare [MASK] (the unigram guess)."""
    assert _logp(shipped, text, target) > _logp(shipped, "[MASK]", target) + 1.0


def test_fill_mask_and_nsp_report_truncation(shipped):
    long_text = "[MASK]是一個很長的句子。" + "很長的句子。" * 200
    fm = fill_mask(shipped, long_text, top_k=3)
    assert fm.truncated and len(fm.masks) == 1 and len(fm.tokens) == shipped.config.max_position_embeddings
    ns = next_sentence(shipped, "短句。", "很長的句子。" * 200)
    assert ns.truncated and ns.is_next + ns.not_next == pytest.approx(1.0)
    assert not next_sentence(shipped, "今天下雨。", "我帶了傘。").truncated


# The example sentences the app ships are checked for [UNK] in tests/test_no_unk.py.


def test_zh_tw_lesson_text_is_covered(shipped):
    text = "".join(md.read_text(encoding="utf-8") for md in sorted((REPO / "lessons").rglob("zh-TW.md")))
    view = cb.tokenize(shipped, text, max_tokens=10**7)
    cjk_unk = [w for w, u in zip(view.words, view.unknown) if u and any(cb.inputs.is_cjk(c) for c in w)]
    assert view.n_total > 5000 and cjk_unk == []


# ---------------------------------------------------------------- the command line


def test_tokenize_cli_json():
    proc = run_cli("tokenize", "注意力機制讓模型看見整個句子。", "--json", "--source", str(MODEL))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["tokens"] == list("注意力機制讓模型看見整個句子。") and len(out["ids"]) == len(out["tokens"])
    assert "[UNK]" not in out["tokens"]


def test_fill_mask_cli_json():
    proc = run_cli("fill-mask", "他[MASK]北京[MASK]了。", "--top-k", "4", "--json", "--source", str(MODEL))
    assert proc.returncode == 0, proc.stderr
    masks = json.loads(proc.stdout)["masks"]
    assert [m["position"] for m in masks] == [2, 5]
    for m in masks:
        probs = [c["prob"] for c in m["candidates"]]
        assert len(probs) == 4 and probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
        assert all(isinstance(c["token"], str) for c in m["candidates"])


def test_nsp_cli_json():
    proc = run_cli("nsp", "今天下雨了。", "我帶了雨傘出門。", "--json", "--source", str(MODEL))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["is_next"] + out["not_next"] == pytest.approx(1.0) and 0 <= out["is_next"] <= 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["fill-mask", "no mask here"], "[MASK]"),
        (["fill-mask", "   "], "empty"),
        (["nsp", "", "b"], "empty"),
        (["tokenize", ""], "empty"),
    ],
)
def test_cli_bad_input_gets_a_clear_message(args, message):
    proc = run_cli(*args, "--source", str(MODEL))
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_cli_says_when_a_model_has_no_mlm_head(tmp_path):
    from transformers import BertConfig, BertModel

    from core.bert.vocab import SPECIAL

    folder = tmp_path / "encoder-only"
    BertModel(
        BertConfig(vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8)
    ).save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(SPECIAL + ["a", "b", "c"]) + "\n", encoding="utf-8")
    env = dict(os.environ, ATTNLAB_MODELS_DIR=str(tmp_path))  # an instructor's models folder
    proc = run_cli("fill-mask", "a [MASK]", "--source", folder.name, env=env)
    assert proc.returncode == 2 and "no MLM head" in proc.stderr


def test_pretrain_live_cli_json_losses_fall():
    proc = run_cli("pretrain", "--preset", "live", "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {"steps", "mlm_loss", "nsp_loss", "seconds"}
    assert out["steps"] == len(out["mlm_loss"]) == len(out["nsp_loss"]) > 50
    first, last = np.mean(out["mlm_loss"][:10]), np.mean(out["mlm_loss"][-10:])
    assert last < first - 1.0  # from ~ln(vocab) towards the unigram entropy and below


# ---------------------------------------------------------------- the live preset


def _live(steps, seed=0, cancel_after=None):
    from core.bert.live import pretrain_live

    cancel = threading.Event()
    seen = []

    def on_step(info):
        seen.append(info)
        if cancel_after is not None and info["step"] >= cancel_after:
            cancel.set()

    res = pretrain_live(steps=steps, on_step=on_step, cancel=cancel, seed=seed)
    return res, seen


def test_live_two_runs_at_once_equal_a_run_alone():
    alone, _ = _live(16)
    results = [None, None]

    def worker(i):
        results[i] = _live(16)[0]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert r["mlm_loss"] == alone["mlm_loss"] and r["nsp_loss"] == alone["nsp_loss"]
        assert r["cloze"] == alone["cloze"]
        for (k, v), w in zip(r["model"].state_dict().items(), alone["model"].state_dict().values()):
            assert torch.equal(v, w), k
    other, _ = _live(16, seed=1)
    assert other["mlm_loss"] != alone["mlm_loss"]


def test_live_reports_each_step_and_cloze_at_start_middle_end():
    res, seen = _live(12)
    assert [i["step"] for i in seen] == list(range(0, 13)) + [12]
    assert [i["cloze"]["phase"] for i in seen if "cloze" in i] == ["start", "middle", "end"]
    assert seen[-1]["progress"] == 1.0 and set(res["cloze"]) == {"start", "middle", "end"}
    for rows in res["cloze"]["end"]["zh-TW"] + res["cloze"]["end"]["en"]:
        probs = [c["prob"] for c in rows["candidates"]]
        assert len(probs) == 5 and probs == sorted(probs, reverse=True)


def test_live_cancel_stops_after_the_current_step():
    res, seen = _live(200, cancel_after=3)
    assert res["cancelled"] and res["steps"] == 3 and len(res["mlm_loss"]) == 3
    assert seen[-1]["cloze"]["phase"] == "end"
