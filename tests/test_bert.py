"""core.bert against independent references: tiny random BERTs built here (every loader path, no
downloads), the embedded all-MiniLM-L6-v2, float64 hand computations and the BERT paper's shapes."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertForPreTraining,
    BertModel,
    BertTokenizer,
    RobertaConfig,
    RobertaModel,
)

import core.bert as cb
from core.bert import loader
from core.bert.inputs import embedding_parts, encode_pair, pad_batch, tokenize
from core.bert.outputs import hidden_states, layer_trajectory, sentence_embeddings, similarity
from core.bert.params import count, hf_config, loaded_total
from core.bert.pretraining import (
    IGNORE_INDEX,
    HeadMissing,
    fill_mask,
    mask_tokens,
    next_sentence,
    nsp_pairs,
    simulate_masking,
)

torch.set_num_threads(2)
ROOT = Path(__file__).resolve().parents[1]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "dog",
    "a",
    "un",
    "##believ",
    "##able",
    "play",
    "##ing",
    ".",
    ",",
    "!",
    "中",
    "文",
    "字",
] + [f"w{i}" for i in range(40)]


def tiny_config(**kw) -> BertConfig:
    base = dict(
        vocab_size=len(SPECIALS) + len(WORDS),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=64,
        type_vocab_size=2,
    )
    base.update(kw)
    return BertConfig(**base)


def save_tiny(folder: Path, cls, **model_kw) -> torch.nn.Module:
    """Save a random-weight model of class `cls` and a tiny WordPiece vocabulary into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = cls(tiny_config(), **model_kw).eval()
    model.save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(SPECIALS + WORDS) + "\n", encoding="utf-8")
    BertTokenizer.from_pretrained(str(folder)).save_pretrained(folder)  # transformers 5: reads vocab.txt
    return model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    made = {
        "model": save_tiny(root / "model", BertModel),
        "nopool": save_tiny(root / "nopool", BertModel, add_pooling_layer=False),
        "mlm": save_tiny(root / "mlm", BertForMaskedLM),
        "pre": save_tiny(root / "pre", BertForPreTraining),
    }
    return root, made


def tiny_load(root: Path, kind: str):
    """A tiny model straight from its folder (the picker's name rules are tested in test_picker.py)."""
    return loader.load_folder(root / kind, kind, kind, "cpu")


@pytest.fixture()
def tiny_default(tiny, monkeypatch, tmp_path):
    """Make the fallback load the tiny BertModel, so fallback tests do not pay for the real model."""
    root, _ = tiny
    monkeypatch.setattr(loader, "embedded_model_dir", lambda: root / "model")
    monkeypatch.setattr(loader, "default_model_dir", lambda: tmp_path / "no-lab-bert")
    return root


@pytest.fixture(scope="module")
def embedded():
    return cb.load(loader.EMBEDDED_SOURCE, device="cpu")


# ---------------------------------------------------------------- loader


@pytest.mark.parametrize(
    "kind, cls, heads",
    [("model", BertModel, set()), ("mlm", BertForMaskedLM, {"mlm"}), ("pre", BertForPreTraining, {"mlm", "nsp"})],
)
def test_loader_picks_class_by_heads_and_loads_the_saved_weights(tiny, kind, cls, heads):
    root, made = tiny
    b = tiny_load(root, kind)
    assert b.notice is None and b.notice_code is None
    assert type(b.model) is cls and b.heads == frozenset(heads)
    assert b.model.config._attn_implementation == "eager" and not b.model.training
    assert b.encoder is (b.model.bert if heads else b.model)
    assert (b.num_layers, b.num_heads, b.hidden_size) == (2, 4, 16)
    saved = made[kind].state_dict()
    for name, value in b.model.state_dict().items():  # nothing randomly re-initialised
        assert torch.equal(value, saved[name]), name


def test_loader_leaves_out_a_pooler_the_checkpoint_lacks(tiny):
    root, _ = tiny
    b = tiny_load(root, "nopool")
    assert b.notice is None and not b.has_pooler
    assert tiny_load(root, "model").has_pooler


def test_attentions_are_returned_and_are_distributions(tiny):
    root, _ = tiny
    b = tiny_load(root, "pre")
    enc = b.tokenizer("the cat sat on the mat", "a dog", return_tensors="pt")
    out = b.encoder(**enc, output_attentions=True)
    assert len(out.attentions) == 2
    a = out.attentions[0]
    assert a.shape == (1, 4, enc["input_ids"].shape[1], enc["input_ids"].shape[1])
    torch.testing.assert_close(a.sum(-1), torch.ones(a.shape[:-1]))


def test_embedded_model_loads_with_attentions(embedded):
    b = embedded
    assert b.name == cb.EMBEDDED_NAME and b.source == loader.EMBEDDED_SOURCE and b.notice is None
    assert type(b.model) is BertModel and b.heads == frozenset()
    assert (b.num_layers, b.num_heads, b.hidden_size) == (6, 12, 384)
    enc = b.tokenizer("attention is all you need", return_tensors="pt")
    with torch.no_grad():
        out = b.model(**enc, output_attentions=True)
    assert len(out.attentions) == 6 and out.attentions[0].shape[1] == 12
    assert float(out.attentions[-1].abs().sum()) > 0


def _write_roberta(folder: Path):
    RobertaModel(
        RobertaConfig(
            vocab_size=60,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=4,
            intermediate_size=32,
            max_position_embeddings=40,
        )
    ).save_pretrained(folder)


def _vocab(p: Path):
    (p / "vocab.txt").write_text("\n".join(SPECIALS + WORDS) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    "make, code",
    [
        (lambda p: None, "offline_uncached"),  # no such folder: the name is tried as a hub id
        (lambda p: p.mkdir(), "offline_uncached"),  # a folder without config.json is not listed
        (lambda p: p.write_text("hello"), "offline_uncached"),  # a file is not listed
        (lambda p: (p.mkdir(), (p / "config.json").write_text("{oops")), "bad_config"),
        (
            lambda p: (p.mkdir(), (p / "config.json").write_text('{"model_type": "bert", "hidden_size": "big"}')),
            "bad_config",
        ),
        (lambda p: (p.mkdir(), (p / "config.json").write_text('{"model_type": "bert"}')), "no_tokenizer"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text('{"model_type": "bert"}'), _vocab(p)), "no_weights"),
        (_write_roberta, "unsupported_family"),
    ],
)
def test_bad_folders_fall_back_with_a_notice(tiny_default, tmp_path, monkeypatch, make, code):
    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setenv(loader.MODELS_DIR_ENV, str(models))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    make(models / "candidate")
    b = cb.load("candidate", device="cpu")
    assert b.notice_code == code and b.notice and b.name == cb.EMBEDDED_NAME
    assert b.source == "candidate" and type(b.model) is BertModel
    assert str(tmp_path) not in b.notice  # no server path in what a student sees
    if code == "unsupported_family":
        assert "roberta" in b.notice.lower()


@pytest.mark.parametrize(
    "source, code",
    [
        ("someone/not-cached-bert", "offline_uncached"),
        ("bert base", "not_found"),
        ("a\u200bb", "not_found"),
        ("x" * 5000, "not_found"),
        ("<script>alert(1)</script>", "not_found"),
    ],
)
def test_bad_ids_fall_back_offline(tiny_default, monkeypatch, source, code):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    b = cb.load(source, device="cpu")
    assert b.notice_code == code and b.name == cb.EMBEDDED_NAME


def test_cached_hub_id_is_loaded_without_network(tiny, tmp_path, monkeypatch):
    """A Hugging Face id found in the local cache loads from it, with HF_HUB_OFFLINE set."""
    import huggingface_hub.constants as hc

    root, _ = tiny
    repo = tmp_path / "hub" / "models--tiny-org--tiny-bert"
    snap = repo / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    for f in (root / "pre").iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    b = cb.load("tiny-org/tiny-bert", device="cpu")
    assert b.notice is None and b.name == "tiny-org/tiny-bert" and b.heads == frozenset({"mlm", "nsp"})


def test_offline_never_touches_the_network(tiny_default, monkeypatch):
    import huggingface_hub

    calls = []
    real = huggingface_hub.snapshot_download

    def spy(*a, **kw):
        calls.append(kw.get("local_files_only", False))
        return real(*a, **kw)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", spy)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cb.load("org/uncached", device="cpu")
    assert calls == [True]


def test_importing_core_bert_does_not_import_torch():
    code = "import sys, core.bert; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- inputs


def test_wordpiece_splits_unknown_words_and_cjk_characters(tiny):
    root, _ = tiny
    b = tiny_load(root, "model")
    v = tokenize(b, "the unbelievable cat 中文字 🙂")
    assert v.tokens == ["the", "un", "##believ", "##able", "cat", "中", "文", "字", "[UNK]"]
    assert v.ids == b.tokenizer.convert_tokens_to_ids(v.tokens)
    assert v.continuation == [False, False, True, True, False, False, False, False, False]
    assert v.cjk == [False] * 5 + [True] * 3 + [False]
    assert v.unknown[-1] and v.words[1:4] == ["unbelievable"] * 3
    assert v.split_words == [("unbelievable", ["un", "##believ", "##able"])]
    capped = tokenize(b, "the cat " * 50, max_tokens=7)
    assert capped.truncated and len(capped.tokens) == 7 and capped.n_total == 100


def test_embedded_tokenizer_splits_chinese_per_character(embedded):
    v = tokenize(embedded, "注意力機制")
    assert len(v.tokens) == 5 and all(v.cjk)


def test_pair_has_cls_sep_segments_positions(embedded):
    e = encode_pair(embedded, "the cat sat", "it was happy")
    assert e.tokens == ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "was", "happy", "[SEP]"]
    assert e.token_type_ids == [0] * 5 + [1] * 4
    assert e.position_ids == list(range(9)) and e.attention_mask == [1] * 9 and not e.truncated


def test_long_input_is_truncated_to_the_position_table(embedded):
    e = encode_pair(embedded, "word " * 2000)
    assert e.truncated and len(e.input_ids) == 512 and e.n_total == 2002 and e.tokens[-1] == "[SEP]"


def test_batch_padding_and_mask(embedded):
    batch = pad_batch(embedded, ["a short one", "this sentence is quite a bit longer than that"])
    assert len(batch.input_ids[0]) == len(batch.input_ids[1])
    short = batch.lengths[0]
    assert batch.attention_mask[0] == [1] * short + [0] * (len(batch.input_ids[0]) - short)
    assert batch.tokens[0][short:] == ["[PAD]"] * (len(batch.input_ids[0]) - short)
    assert all(m == 1 for m in batch.attention_mask[1])


@pytest.mark.parametrize("b_text", [None, "and a second sentence"])
def test_embedding_parts_match_the_models_own_embeddings(embedded, b_text):
    parts = embedding_parts(embedded, "The bank raised interest rates.", b_text)
    enc = parts.encoded
    with torch.no_grad():
        ref = embedded.encoder.embeddings(
            input_ids=torch.tensor([enc.input_ids]), token_type_ids=torch.tensor([enc.token_type_ids])
        )[0].numpy()
    np.testing.assert_allclose(parts.normed, ref, atol=1e-5, rtol=0)
    # float64 LayerNorm by hand from the three table rows
    emb = embedded.encoder.embeddings
    w = {
        k: getattr(emb, k).weight.detach().double().numpy()
        for k in ("word_embeddings", "token_type_embeddings", "position_embeddings")
    }
    s = (
        w["word_embeddings"][enc.input_ids]
        + w["token_type_embeddings"][enc.token_type_ids]
        + w["position_embeddings"][enc.position_ids]
    )
    mu, var = s.mean(-1, keepdims=True), s.var(-1, keepdims=True)
    ln = (s - mu) / np.sqrt(
        var + emb.LayerNorm.eps
    ) * emb.LayerNorm.weight.detach().double().numpy() + emb.LayerNorm.bias.detach().double().numpy()
    np.testing.assert_allclose(parts.summed, s, atol=1e-5)
    np.testing.assert_allclose(parts.normed, ln, atol=1e-5)
    np.testing.assert_allclose(
        parts.norms["token"], np.linalg.norm(w["word_embeddings"][enc.input_ids], axis=-1), rtol=1e-5
    )
    if b_text:
        assert parts.encoded.token_type_ids[-1] == 1
        np.testing.assert_allclose(parts.segment[-1], w["token_type_embeddings"][1], atol=1e-7)


# ---------------------------------------------------------------- parameter count


def hand_bert(V, H, L, I, P=512, S=2):
    """BERT's parameter count written out by hand (weights + biases, LayerNorm gamma/beta)."""
    emb = V * H + P * H + S * H + 2 * H
    layer = 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H
    pooler = H * H + H
    mlm = (H * H + H) + 2 * H + V  # transform dense, LayerNorm, decoder bias (matrix tied)
    nsp = 2 * H + 2
    return emb + L * layer + pooler, emb + L * layer + pooler + mlm + nsp


def test_bert_base_and_large_counts():
    base = count()
    assert base.bert_model_total == 109_482_240 == hand_bert(30522, 768, 12, 3072)[0]
    assert base.pretraining_total == hand_bert(30522, 768, 12, 3072)[1]
    large = count(hidden=1024, layers=24, heads=16, intermediate=4096)
    assert large.bert_model_total == hand_bert(30522, 1024, 24, 4096)[0] == 335_141_888
    assert base.layer["query"] == 768 * 768 + 768 and base.layer_total * 12 == base.all_layers
    assert sum(base.embeddings.values()) + base.all_layers + base.pooler == base.bert_model_total


def test_count_matches_summing_a_real_transformers_model():
    shape = dict(vocab=500, hidden=48, layers=3, heads=4, intermediate=96, max_position=64, type_vocab=3)
    c = count(**shape)
    cfg = hf_config(**shape)
    assert c.bert_model_total == sum(p.numel() for p in BertModel(cfg).parameters())
    assert c.pretraining_total == sum(p.numel() for p in BertForPreTraining(cfg).parameters())
    assert (c.bert_model_total, c.pretraining_total) == hand_bert(500, 48, 3, 96, 64, 3)


def test_count_cli_json_agrees_with_transformers():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "core.bert",
            "count",
            "--vocab",
            "1000",
            "--hidden",
            "64",
            "--layers",
            "2",
            "--heads",
            "4",
            "--intermediate",
            "128",
            "--max-position",
            "128",
            "--type-vocab",
            "2",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    cfg = hf_config(vocab=1000, hidden=64, layers=2, heads=4, intermediate=128, max_position=128, type_vocab=2)
    assert data["bert_model_total"] == sum(p.numel() for p in BertModel(cfg).parameters())
    assert data["pretraining_total"] == sum(p.numel() for p in BertForPreTraining(cfg).parameters())
    bad = subprocess.run(
        [sys.executable, "-m", "core.bert", "count", "--heads", "7", "--json"], cwd=ROOT, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "divisible" in bad.stderr


def test_count_for_the_loaded_model_equals_its_weights(embedded):
    assert cb.count_bundle(embedded).bert_model_total == loaded_total(embedded) == 22_713_216


# ---------------------------------------------------------------- masked LM


def test_mask_tokens_proportions(embedded):
    tok = embedded.tokenizer
    g = torch.Generator().manual_seed(1)
    body = torch.randint(1000, 29000, (400, 126), generator=g)  # ordinary word pieces
    ids = torch.cat([torch.full((400, 1), tok.cls_token_id), body, torch.full((400, 1), tok.sep_token_id)], 1)
    ids[:, -10:] = tok.pad_token_id  # padding must never be chosen
    masked, labels = mask_tokens(ids, tok, seed=123)
    special = torch.isin(ids, torch.tensor(tok.all_special_ids))
    chosen = labels != IGNORE_INDEX
    assert not chosen[special].any()
    assert torch.equal(labels[chosen], ids[chosen]) and torch.equal(masked[~chosen], ids[~chosen])
    n = int((~special).sum())
    k = int(chosen.sum())
    # binomial: |observed - expected| < 5 standard deviations (fails with probability < 1e-6)
    assert abs(k - 0.15 * n) < 5 * math.sqrt(n * 0.15 * 0.85)
    is_mask = masked[chosen] == tok.mask_token_id
    kept = masked[chosen] == ids[chosen]
    rand = ~is_mask & ~kept
    for observed, p in ((is_mask.sum(), 0.8), (rand.sum(), 0.1), (kept.sum(), 0.1)):
        assert abs(int(observed) - p * k) < 5 * math.sqrt(k * p * (1 - p)), (int(observed), p, k)
    assert not torch.isin(masked[chosen][rand], torch.tensor(tok.all_special_ids)).any()


def test_mask_tokens_is_seeded_and_respects_extremes(embedded):
    tok = embedded.tokenizer
    ids = torch.tensor([tok("the quick brown fox jumps over the lazy dog " * 4)["input_ids"]])
    a, b = mask_tokens(ids, tok, seed=5), mask_tokens(ids, tok, seed=5)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(mask_tokens(ids, tok, seed=6)[1], a[1])
    assert (mask_tokens(ids, tok, seed=1, prob=0.0)[1] == IGNORE_INDEX).all()
    labels = mask_tokens(ids, tok, seed=1, prob=1.0)[1]
    assert ((labels != IGNORE_INDEX) == ~torch.isin(ids, torch.tensor(tok.all_special_ids))).all()
    with pytest.raises(ValueError):
        mask_tokens(ids, tok, seed=1, prob=1.5)


def test_simulate_masking_explains_every_token(embedded):
    r = simulate_masking(embedded, "the quick brown fox jumps over the lazy dog", seed=3, prob=0.5)
    assert r.actions[0] == r.actions[-1] == "special"
    for orig, shown, act, lab in zip(r.original, r.tokens, r.actions, r.labels):
        if act in ("special", "not chosen"):
            assert shown == orig and lab == IGNORE_INDEX
        elif act == "mask":
            assert shown == "[MASK]"
        elif act == "keep":
            assert shown == orig and lab != IGNORE_INDEX
    assert sum(r.counts.values()) == len(r.tokens)


def test_fill_mask_is_the_heads_softmax(tiny):
    root, _ = tiny
    b = tiny_load(root, "mlm")
    res = fill_mask(b, "the cat [MASK] on the mat", top_k=3)
    assert len(res.masks) == 1 and res.masks[0]["position"] == 3
    enc = b.tokenizer("the cat [MASK] on the mat", return_tensors="pt")
    with torch.no_grad():
        p = b.model(**enc).logits[0, 3].double().softmax(-1)
    ref = p.topk(3)
    assert [t["id"] for t in res.masks[0]["top"]] == ref.indices.tolist()
    np.testing.assert_allclose([t["probability"] for t in res.masks[0]["top"]], ref.values.numpy(), rtol=1e-5)
    with pytest.raises(HeadMissing):
        fill_mask(tiny_load(root, "model"), "the [MASK]")


# ---------------------------------------------------------------- next sentence prediction


def test_next_sentence_probabilities(tiny):
    root, _ = tiny
    b = tiny_load(root, "pre")
    r = next_sentence(b, "the cat sat", "on the mat")
    enc = b.tokenizer("the cat sat", "on the mat", return_tensors="pt")
    with torch.no_grad():
        ref = b.model(**enc).seq_relationship_logits[0].double().softmax(-1)
    assert r.is_next == pytest.approx(float(ref[0]), rel=1e-6) and r.is_next + r.not_next == pytest.approx(1)
    with pytest.raises(HeadMissing):
        next_sentence(tiny_load(root, "mlm"), "a", "b")


def test_nsp_pairs_are_half_true_next():
    sents = [f"sentence {i}" for i in range(2001)]
    pairs = nsp_pairs(sents, seed=0)
    is_next = [p for p in pairs if p["label"] == "IsNext"]
    assert abs(len(is_next) - 1000) < 5 * math.sqrt(2000 * 0.25)
    for p in pairs:
        i, j = int(p["a"].split()[1]), int(p["b"].split()[1])
        assert (j == i + 1) == (p["label"] == "IsNext")


# ---------------------------------------------------------------- outputs


def test_hidden_states_and_pooler(embedded):
    hs = hidden_states(embedded, "The cat sat on the mat.")
    assert hs.layers.shape == (7, len(hs.tokens), 384)
    enc = embedded.tokenizer("The cat sat on the mat.", return_tensors="pt")
    with torch.no_grad():
        out = embedded.model(**enc)
        emb = embedded.encoder.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])
    np.testing.assert_allclose(hs.last, out.last_hidden_state[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(hs.layers[0], emb[0].numpy(), atol=1e-5)
    W = embedded.encoder.pooler.dense.weight.detach().double().numpy()
    bias = embedded.encoder.pooler.dense.bias.detach().double().numpy()
    np.testing.assert_allclose(hs.pooled, np.tanh(W @ hs.last[0].astype(np.float64) + bias), atol=1e-5)
    traj = layer_trajectory(hs, 2)
    assert len(traj) == 7 and traj[0]["cos_embedding"] == pytest.approx(1.0)
    assert traj[3]["change"] == pytest.approx(float(np.linalg.norm(hs.layers[3, 2] - hs.layers[2, 2])), rel=1e-6)


def test_sentence_similarity(embedded):
    texts = ["A cat sits on the mat.", "A kitten is resting on the rug.", "Stock prices fell sharply today."]
    e = sentence_embeddings(embedded, texts)
    enc = embedded.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = embedded.model(**enc).last_hidden_state.double()
    m = enc["attention_mask"].unsqueeze(-1).double()
    ref = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1).numpy()
    np.testing.assert_allclose(e, ref, atol=1e-5)
    s = similarity(embedded, texts)
    np.testing.assert_allclose(np.diag(s), 1.0, atol=1e-5)
    np.testing.assert_allclose(s, s.T, atol=1e-12)
    assert s[0, 1] > s[0, 2] + 0.2


# ---------------------------------------------------------------- sentiment factor


def test_softmax_head_reaches_the_optimum():
    from core.bert.sentiment import fit_softmax_head

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 8)) * 3
    y = np.repeat(np.arange(3), 30)
    x = centres[y] + rng.normal(size=(90, 8))
    W, b = fit_softmax_head(x, y, 3, l2=1e-2)
    Wt = torch.tensor(W, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(torch.tensor(x) @ Wt.T + bt, torch.tensor(y)) + 1e-2 * (Wt * Wt).sum()
    loss.backward()
    assert float(Wt.grad.abs().max()) < 1e-5 and float(bt.grad.abs().max()) < 1e-5  # stationary point
    assert ((x @ W.T + b).argmax(1) == y).mean() > 0.95


def test_sentiment_factor_on_held_out_posts(embedded):
    from core.bert.sentiment import LABELS, SentimentScorer, load_posts, sentiment_factor

    posts = load_posts()
    train_texts = {p["text"] for p in posts["train"]}
    assert not train_texts & {p["text"] for d in posts["days"] for p in d["posts"]}  # really held out
    r = sentiment_factor(SentimentScorer(embedded, posts))
    majority = max(sum(p["human"] == lab for p in r.posts) for lab in LABELS) / len(r.posts)
    assert r.accuracy >= 0.8 > majority + 0.3
    assert sum(map(sum, r.confusion)) == len(r.posts) == 80
    assert sum(r.confusion[i][i] for i in range(3)) / 80 == pytest.approx(r.accuracy)
    day = r.days[3]
    rows = [p for p in r.posts if p["date"] == day["date"]]
    hand = (sum(p["predicted"] == "positive" for p in rows) - sum(p["predicted"] == "negative" for p in rows)) / len(
        rows
    )
    assert day["factor_model"] == pytest.approx(hand)
    assert r.correlation > 0.7
