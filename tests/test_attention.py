"""core.attention and core.bertviz_views against independent references.

References: torch's own ``scaled_dot_product_attention`` and ``nn.MultiheadAttention`` (copied
weights), the model's own ``output_attentions`` and hooked intermediate tensors, float64 loops.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import re

import numpy as np
import pytest
import torch

from core import attention as A
from core import bertviz_views as BV

torch.set_num_threads(2)
SENT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def bundle():
    from core.bert import load

    return load()


@pytest.fixture(scope="module")
def tiny(bundle):
    """A 2-layer, 4-head, d_model=16 BertModel with random weights and the embedded tokenizer."""
    from transformers import BertConfig, BertModel

    from core.bert import BertBundle

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=bundle.tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=160,
        attn_implementation="eager",
    )
    model = BertModel(cfg).eval()
    return BertBundle(
        name="tiny",
        source="tiny",
        tokenizer=bundle.tokenizer,
        model=model,
        heads=frozenset(),
        notice=None,
        notice_code=None,
        device=torch.device("cpu"),
    )


# ---------------------------------------------------------------- from scratch


@pytest.mark.parametrize("scale", [True, False])
@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_matches_torch(scale, masked):
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 3, 5, 8, generator=g)
    k = torch.randn(2, 3, 7, 8, generator=g)
    v = torch.randn(2, 3, 7, 4, generator=g)
    mask = None
    if masked:
        mask = torch.rand(2, 3, 5, 7, generator=g) > 0.4
        mask[..., 0] = True  # every query may attend somewhere
    out, w = A.scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=None if scale else 1.0)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    # weights against a float64 hand computation
    s = (q.double() @ k.double().transpose(-2, -1)) / (math.sqrt(8) if scale else 1.0)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    e = torch.exp(s - s.amax(-1, keepdim=True))
    torch.testing.assert_close(w.double(), e / e.sum(-1, keepdim=True), rtol=1e-5, atol=1e-6)
    if mask is not None:
        assert float(w[~mask].abs().max()) == 0.0


def test_sdpa_rejects_float_mask():
    q = torch.randn(1, 2, 4)
    with pytest.raises(TypeError):
        A.scaled_dot_product_attention(q, q, q, mask=torch.zeros(2, 2))


@pytest.mark.parametrize("masked", [False, True])
def test_multihead_matches_torch(masked):
    torch.manual_seed(3)
    d_model, h, B, T, S = 24, 4, 2, 5, 6
    ours = A.MultiHeadAttention(d_model, h)
    ref = torch.nn.MultiheadAttention(d_model, h, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        ref.out_proj.weight.copy_(ours.W_o.weight)
        ref.out_proj.bias.copy_(ours.W_o.bias)
    x = torch.randn(B, T, d_model)
    mem = torch.randn(B, S, d_model)
    mask = None
    if masked:
        mask = torch.rand(T, S) > 0.5
        mask[:, 0] = True
    out, w = ours(x, mem, mem, mask=mask)
    # torch's nn.MultiheadAttention takes the opposite convention: True = may NOT attend.
    ref_out, ref_w = ref(x, mem, mem, attn_mask=None if mask is None else ~mask, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w, ref_w, rtol=1e-5, atol=1e-6)
    assert w.shape == (B, h, T, S)


def test_multihead_parts_concat_and_projection():
    torch.manual_seed(4)
    mha = A.MultiHeadAttention(12, 3)
    x = torch.randn(1, 4, 12)
    p = mha.parts(x, x, x)
    assert p.heads.shape == (1, 3, 4, 4) and p.concat.shape == (1, 4, 12)
    # the concatenation puts head i in columns i*d_k:(i+1)*d_k
    for i in range(3):
        torch.testing.assert_close(p.concat[0, :, 4 * i : 4 * (i + 1)], p.heads[0, i])
    torch.testing.assert_close(p.output, p.concat @ mha.W_o.weight.T + mha.W_o.bias)
    with pytest.raises(ValueError):
        A.MultiHeadAttention(10, 3)


# ---------------------------------------------------------------- glass box on real models


def _self_attention_context(bundle, enc, layer):
    """The model's own per-head outputs (context layer), captured with a hook: (T, d_model)."""
    lay = bundle.encoder.encoder.layer[layer]
    got = {}
    h = lay.attention.self.register_forward_hook(lambda m, i, o: got.__setitem__("c", o[0]))
    try:
        with torch.inference_mode():
            lay(enc.hidden_states[layer].unsqueeze(0))
    finally:
        h.remove()
    return got["c"][0].double().numpy()


@pytest.mark.parametrize("which", ["bundle", "tiny"])
def test_explain_head_equals_reported_attentions(which, request):
    b = request.getfixturevalue(which)
    enc = A.encode(b, SENT)
    worst = 0.0
    for layer in range(b.num_layers):
        ctx = _self_attention_context(b, enc, layer)
        for head in range(b.num_heads):
            e = A.explain_head(b, SENT, layer, head)
            assert e.weights.shape == (enc.n_tokens, enc.n_tokens)
            assert np.abs(e.weights - e.reported).max() <= 1e-5
            worst = max(worst, e.max_abs_diff)
            d = e.d_k
            np.testing.assert_allclose(e.output, ctx[:, head * d : (head + 1) * d], atol=1e-5)
    assert worst <= 1e-5


def test_explain_head_parts_by_hand(bundle):
    """q, k, v from the layer's raw weight matrices in float64, then eq. (1) step by step."""
    layer, head = min(2, bundle.num_layers - 1), min(7, bundle.num_heads - 1)
    e = A.explain_head(bundle, SENT, layer, head)
    sa = bundle.encoder.encoder.layer[layer].attention.self
    d = e.d_k
    rows = slice(head * d, (head + 1) * d)
    x = e.x
    for name, got in (("query", e.q), ("key", e.k), ("value", e.v)):
        lin = getattr(sa, name)
        ref = x @ lin.weight.detach().double().numpy()[rows].T + lin.bias.detach().double().numpy()[rows]
        np.testing.assert_allclose(got, ref, atol=1e-4)
    raw = e.q @ e.k.T
    np.testing.assert_allclose(e.raw_scores, raw, atol=1e-9)
    np.testing.assert_allclose(e.scaled_scores, raw / math.sqrt(d), atol=1e-9)
    ex = np.exp(e.scaled_scores - e.scaled_scores.max(1, keepdims=True))
    np.testing.assert_allclose(e.weights, ex / ex.sum(1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(e.output, e.weights @ e.v, atol=1e-12)
    np.testing.assert_allclose(e.weights.sum(1), 1.0, atol=1e-12)
    # dropping 1/sqrt(d_k) makes the rows more peaked: the saturation the toggle shows
    s = e.saturation()
    assert s["max_weight_unscaled"] > s["max_weight_scaled"]
    assert s["entropy_unscaled"] < s["entropy_scaled"]
    assert s["score_std_raw"] == pytest.approx(s["score_std_scaled"] * math.sqrt(d))
    rows_ = e.query_table(10)
    assert [r["key_token"] for r in rows_] == e.tokens
    assert sum(r["weight"] for r in rows_) == pytest.approx(1.0)


def test_explain_head_range_checks(bundle):
    with pytest.raises(IndexError):
        A.explain_head(bundle, SENT, -1, 0)
    with pytest.raises(IndexError):
        A.explain_head(bundle, SENT, 0, bundle.num_heads)


@pytest.mark.parametrize("which", ["bundle", "tiny"])
def test_concat_projection_matches_model(which, request):
    b = request.getfixturevalue(which)
    p = A.concat_projection(b, SENT, 1, "It was tired.")
    T = len(p.tokens)
    assert p.concat.shape == (T, b.hidden_size)
    assert p.W_O_shape == (b.hidden_size, b.hidden_size)
    assert p.max_abs_diff <= 1e-5
    for i in range(p.num_heads):
        np.testing.assert_array_equal(p.concat[:, i * p.d_k : (i + 1) * p.d_k], p.heads[i])
    shapes = p.shapes()
    assert shapes[-3] == {"step": "W_O", "rows": b.hidden_size, "cols": b.hidden_size}


# ---------------------------------------------------------------- input handling


def test_encode_pairs_caps_and_bad_input(bundle):
    enc = A.encode(bundle, SENT, "It was tired.")
    assert enc.sentence_b_start == enc.tokens.index("[SEP]") + 1
    assert enc.special["sep"] == [enc.sentence_b_start - 1, enc.n_tokens - 1]
    assert set(enc.token_type_ids[enc.sentence_b_start :]) == {1}

    long = A.encode(bundle, "word " * 5000, max_tokens=40)
    assert long.n_tokens == 40 and "tokens_capped" in long.notices and long.n_tokens_full > 40
    assert "truncated" in long.notices  # 25 000 characters > MAX_CHARS
    assert long.tokens[0] == "[CLS]" and long.tokens[-1] == "[SEP]"
    pair = A.encode(bundle, "word " * 200, "other " * 200, max_tokens=30)
    assert pair.n_tokens == 30 and pair.sentence_b_start is not None

    empty = A.encode(bundle, "   \u200b ")
    assert empty.empty and empty.tokens == ["[CLS]", "[SEP]"]
    assert "invisible_removed" in empty.notices
    for text in [
        "😀🎉 emoji",
        "自注意力機制",
        "שלום עולם مرحبا",
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "a\u200bb\u202ec",
    ]:
        enc = A.encode(bundle, text)
        assert enc.attentions.shape[2] == enc.n_tokens
        np.testing.assert_allclose(enc.attentions.sum(-1), 1.0, atol=1e-5)


def test_shared_cache_is_bounded_by_bytes(bundle, monkeypatch):
    from core.attention import encoding

    A.clear_cache()
    one = A.encode(bundle, SENT)
    size = one.nbytes
    assert size >= one.attentions.nbytes + sum(h.numel() * 4 for h in one.hidden_states)
    monkeypatch.setattr(encoding, "CACHE_BYTES", int(size * 2.5))
    texts = [f"{SENT} {w}" for w in ("one", "two", "three", "four", "five")]
    for text in texts:
        A.encode(bundle, text)
    held = A.cached_encodings()
    assert 1 <= len(held) <= 3 and A.cache_bytes() <= size * 2.5 * 1.2  # a few tokens longer than SENT
    assert held[-1].text == texts[-1]  # least recently used first: the newest stays
    assert all(e.text != SENT for e in held)  # the oldest went first
    # a cache hit is the very same object, so every session on this text shares one forward pass
    assert A.encode(bundle, texts[-1]) is held[-1]
    A.clear_cache()
    assert A.cached_encodings() == []


def test_derived_results_are_computed_once_per_encoding(bundle):
    A.clear_cache()
    e1 = A.explain_head(bundle, SENT, 0, 0)
    assert A.explain_head(bundle, SENT, 0, 0) is e1
    p1 = A.concat_projection(bundle, SENT, 0)
    assert A.concat_projection(bundle, SENT, 0) is p1
    enc, s1 = A.summarize(bundle, SENT)
    assert A.summarize(bundle, SENT)[1] is s1 and enc.nbytes > enc.attentions.nbytes
    A.clear_cache()
    e2 = A.explain_head(bundle, SENT, 0, 0)
    assert e2 is not e1
    np.testing.assert_array_equal(e2.weights, e1.weights)


def test_sessions_asking_for_the_same_text_at_once_share_one_forward_pass(bundle, monkeypatch):
    """A cold server and thirty students opening the same lesson: one forward pass, and one derived
    result per key, however many sessions ask at the same moment; all get the very same object."""
    import threading
    import time

    from core.attention import encoding

    A.clear_cache()
    real = encoding._encode_uncached
    calls = []

    def slow(*a, **k):
        calls.append(1)
        time.sleep(0.3)  # long enough that every thread asks while the first is still computing
        return real(*a, **k)

    monkeypatch.setattr(encoding, "_encode_uncached", slow)
    made = []

    def make():
        made.append(1)
        time.sleep(0.3)
        return object()

    got, derived = [], []
    start = threading.Barrier(8)

    def student():
        start.wait()
        enc = A.encode(bundle, SENT + " together")
        got.append(enc)
        derived.append(enc.memo(("test-key",), make))

    threads = [threading.Thread(target=student) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(calls) == 1 and len(made) == 1
    assert all(e is got[0] for e in got) and all(d is derived[0] for d in derived)
    A.clear_cache()


def test_a_failed_computation_does_not_block_the_sessions_waiting_for_it(bundle, monkeypatch):
    import threading
    import time

    from core.attention import encoding

    A.clear_cache()
    real = encoding._encode_uncached
    calls = []

    def first_fails(*a, **k):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.2)
            raise RuntimeError("out of memory")
        return real(*a, **k)

    monkeypatch.setattr(encoding, "_encode_uncached", first_fails)
    errors, got = [], []

    def student():
        try:
            got.append(A.encode(bundle, SENT + " again"))
        except RuntimeError as e:
            errors.append(e)

    threads = [threading.Thread(target=student) for _ in range(3)]
    threads[0].start()
    time.sleep(0.05)
    for th in threads[1:]:
        th.start()
    for th in threads:
        th.join(10)
    assert len(errors) == 1 and len(got) == 2  # the failure is the owner's alone; the others computed it
    assert encoding._IN_FLIGHT == {}
    A.clear_cache()


# ---------------------------------------------------------------- summaries, tags, rollout


def _summaries_by_hand(att, cls, seps):
    L, H, T, _ = att.shape
    out = {}
    for l in range(L):
        for h in range(H):
            a = att[l, h]
            ent = sum(-sum(a[i, j] * math.log(a[i, j]) for j in range(T) if a[i, j] > 0) for i in range(T)) / T
            out[(l, h)] = {
                "entropy": ent,
                "cls": sum(a[i, cls] for i in range(T)) / T,
                "sep": sum(a[i, s] for i in range(T) for s in seps) / T,
                "self": sum(a[i, i] for i in range(T)) / T,
                "previous": sum(a[i, i - 1] for i in range(1, T)) / (T - 1),
                "next": sum(a[i, i + 1] for i in range(T - 1)) / (T - 1),
            }
    return out


def test_head_summaries_and_tags():
    T = 6
    eye = np.eye(T)
    prev = np.roll(eye, -1, axis=1)
    prev[0] = eye[0]  # the first token has no previous: attends to itself
    nxt = np.roll(eye, 1, axis=1)
    nxt[-1] = eye[-1]
    uniform = np.full((T, T), 1 / T)
    sep = np.zeros((T, T))
    sep[:, T - 1] = 0.9
    sep[:, 1] = 0.1
    cls = np.zeros((T, T))
    cls[:, 0] = 0.7
    cls[:, 2] = 0.3
    rng = np.random.default_rng(0)
    mixed = rng.dirichlet(np.full(T, 0.3), size=T)
    att = np.stack([np.stack([eye, prev, nxt, uniform]), np.stack([sep, cls, mixed, uniform])])
    s = A.head_summaries(att, [0], [T - 1])
    assert s.tags[0] == ["self", "previous", "next", "broad"]
    assert s.tags[1][:2] == ["sep_sink", "cls_sink"]
    ref = _summaries_by_hand(att, 0, [T - 1])
    for (l, h), m in ref.items():
        for key, val in m.items():
            assert s.metrics[key][l, h] == pytest.approx(val, abs=1e-12), (l, h, key)
    assert s.metrics["entropy"][0, 3] == pytest.approx(math.log(T))
    assert s.metrics["entropy_norm"][0, 3] == pytest.approx(1.0)
    # the mixed head gets whatever the rules say, applied by hand in order
    m = {k: s.metrics[k][1, 2] for k in A.SUMMARY_METRICS}
    expect = next((r.tag for r in A.TAG_RULES if m[r.metric] >= r.threshold), A.FALLBACK_TAG)
    assert s.tags[1][2] == expect
    assert len(s.rows()) == 8 and {"layer", "head", "tag", "entropy"} <= set(s.rows()[0])


def test_attention_rollout_by_hand():
    rng = np.random.default_rng(1)
    L, H, T = 3, 2, 5
    att = rng.dirichlet(np.ones(T), size=(L, H, T))  # (L, H, T, T), rows sum to 1
    r = A.attention_rollout(att)
    acc = None
    for l in range(L):
        mean = sum(att[l, h] for h in range(H)) / H
        a = 0.5 * mean + 0.5 * np.eye(T)
        a = a / a.sum(1, keepdims=True)
        acc = a if acc is None else a @ acc
        np.testing.assert_allclose(r[l], acc, atol=1e-12)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-12)
    raw = A.attention_rollout(att, residual=False)
    np.testing.assert_allclose(raw[1], att[1].mean(0) @ att[0].mean(0), atol=1e-12)


def test_scaling_study_follows_footnote_4():
    s = A.scaling_study(d_ks=(4, 64, 1024), n_keys=16, trials=400, seed=0)
    for d, std in zip(s.d_k, s.score_std):
        assert std == pytest.approx(math.sqrt(d), rel=0.1)
    assert s.max_weight_unscaled[-1] > 0.8 > s.max_weight_scaled[-1]
    assert list(s.max_weight_unscaled) == sorted(s.max_weight_unscaled)


# ---------------------------------------------------------------- bertviz views


def _payload(doc):
    m = re.search(r'<script type="application/json" id="attnlab-payload">(.*?)</script>', doc, re.S)
    return json.loads(m.group(1))


def test_json_for_script_cannot_close_the_script():
    s = BV.json_for_script({"t": "</script><script>alert(1)</script><!-- \u2028 &amp;"})
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s
    assert json.loads(s) == {"t": "</script><script>alert(1)</script><!-- \u2028 &amp;"}


@pytest.mark.parametrize("kind", BV.KINDS)
def test_bertviz_view_offline_small_and_exact(bundle, kind):
    text = (SENT + " <script>alert(1)</script> <img src=x onerror=alert(2)> ") * 5
    v = BV.build(bundle, text, kind, "It was tired.", layer=2, head=3)
    assert v.supported and v.html
    assert v.n_tokens == A.MAX_TOKENS_BERTVIZ and "tokens_capped" in v.notices
    assert v.n_bytes <= 2_000_000
    doc = v.html
    assert "cdnjs" not in doc and "= PYTHON_PARAMS" not in doc and "https://" not in doc.split("attnlab-payload")[1]
    assert "Content-Security-Policy" in doc
    # user text never appears raw: only inside the escaped JSON payload
    assert "<img src=x" not in doc and "alert(1)</script>" not in doc
    p = _payload(doc)
    enc = A.encode(bundle, text, "It was tired.", max_tokens=A.MAX_TOKENS_BERTVIZ)
    assert p["tokens"] == enc.tokens and p["b_start"] == enc.sentence_b_start
    got = np.frombuffer(base64.b64decode(p["attn"]), dtype=np.uint8).reshape(enc.attentions.shape) / 255
    assert np.abs(got - enc.attentions).max() <= 0.5 / 255 + 1e-9
    if kind == "neuron":
        q = (
            np.frombuffer(base64.b64decode(p["q"]), dtype="<f2")
            .reshape(bundle.num_layers, bundle.num_heads, enc.n_tokens, -1)
            .astype(np.float64)
        )
        e = A.explain_head(bundle, text, 2, 3, "It was tired.", max_tokens=A.MAX_TOKENS_BERTVIZ)
        np.testing.assert_allclose(q[2, 3], e.q, rtol=2e-3, atol=2e-3)


def test_bertviz_assets_come_from_pip_packages():
    import site

    roots = [str(p) for p in site.getsitepackages()]
    for name, (dist, rel) in BV._ASSETS.items():
        import importlib.metadata as md

        f = next(f for f in md.distribution(dist).files if str(f) == rel)
        assert any(str(f.locate()).startswith(r) for r in roots)
        assert len(BV.asset(name)) > 10_000
    assert "d3js.org v5" in BV.asset("d3")[:200]


def test_neuron_view_says_why_when_unsupported(tiny):
    enc = A.encode(tiny, SENT)
    ok, code, *_ = BV._neuron_check(tiny, enc)
    assert ok and code is None
    # attention that q and k cannot explain (as with relative-position or ALiBi attention)
    tampered = dataclasses.replace(enc, attentions=np.roll(enc.attentions, 1, axis=-1))
    ok, code, why, q, k = BV._neuron_check(tiny, tampered)
    assert not ok and code == "neuron_mismatch" and "differs" in why and q is None

    class NoQK:
        encoder = type("E", (), {"encoder": type("X", (), {"layer": [object()]})()})()

    ok, code, *_ = BV._neuron_check(NoQK(), enc)
    assert not ok and code == "neuron_no_qk"


def test_bertviz_bytes_guard_lowers_the_cap(bundle):
    full = BV.build(bundle, "word " * 300, "head")  # the budget is set from this model's own size
    assert full.n_tokens == A.MAX_TOKENS_BERTVIZ
    small = BV.build(bundle, "word " * 10, "head")  # the scripts alone weigh ~0.4 MB
    budget = (full.n_bytes + small.n_bytes) // 2
    v = BV.build(bundle, "word " * 300, "head", bytes_budget=budget)
    assert v.n_bytes <= budget and v.n_tokens < A.MAX_TOKENS_BERTVIZ
    assert "bertviz_bytes_capped" in v.notices


# ---------------------------------------------------------------- exports and figures


def test_exports_hold_the_same_numbers(bundle):
    enc = A.encode(bundle, SENT, "It was tired.")
    e = A.explain_head(bundle, SENT, 3, 1, "It was tired.")
    wide = e.matrix_wide()
    assert list(wide.columns[:2]) == ["query_position", "query_token"] and len(wide.columns) == 2 + e.n_tokens
    np.testing.assert_array_equal(wide.iloc[:, 2:].to_numpy(), e.weights)
    long = A.weights_table(enc)
    assert len(long) == enc.attentions.size
    L, H = enc.num_layers - 1, enc.num_heads - 1  # the last head of the last layer
    row = long[(long.layer == L) & (long["head"] == H) & (long["query"] == 3) & (long["key"] == 5)].iloc[0]
    assert row.weight == pytest.approx(float(enc.attentions[L, H, 3, 5]))
    assert row.query_token == enc.tokens[3] and row.key_token == enc.tokens[5]
    roll = A.attention_rollout(enc.attentions)
    np.testing.assert_array_equal(A.rollout_table(enc, roll, 2).iloc[:, 2:].to_numpy(), roll[2])
    p = A.concat_projection(bundle, SENT, 3)
    tab = p.table()
    np.testing.assert_allclose(tab[[c for c in tab.columns if c.startswith("concat_")]].to_numpy(), p.concat)
    np.testing.assert_allclose(tab[[c for c in tab.columns if c.startswith("out_")]].to_numpy(), p.projected)


def test_figures_show_the_numbers_and_escape_tokens(bundle):
    import plotly.io as pio

    from core.figures import attention as F

    text = "it <script>alert(1)</script> was"
    e = A.explain_head(bundle, text, 3, 1)
    heat = F.head_heatmap(e, highlight_row=2)
    assert heat.data[0].z[2][3] == pytest.approx(e.weights[2, 3], abs=5e-5)
    dump = pio.to_json(heat, validate=False)
    assert "<script>" not in dump and "&lt;" in dump
    steps = F.score_steps(e, 2, scaled=False)
    np.testing.assert_allclose(steps.data[2].x, np.round(e.weights_unscaled[2], 4))
    np.testing.assert_allclose(steps.data[1].x, np.round(e.raw_scores[2], 4))
    ws = F.weighted_sum(e, 2)
    np.testing.assert_allclose(np.asarray(ws.data[0].z)[-1], np.round(e.output[2], 4), atol=1e-4)
    enc = A.encode(bundle, text)
    grid = F.layer_head_grid(enc, selected=(3, 1))
    assert len(grid.data) == bundle.num_layers * bundle.num_heads
    np.testing.assert_array_equal(
        np.asarray(grid.data[3 * bundle.num_heads + 1].z), np.rint(enc.attentions[3, 1] * 100).astype(np.uint8)
    )
    assert grid.layout.shapes[0].xref == f"x{3 * bundle.num_heads + 2} domain"
    _, summ = A.summarize(bundle, text)
    tags = F.tag_grid(summ, tag_names={"broad": "BROAD"})
    flat = [x for row in tags.data[0].text for x in row]
    assert flat.count("BROAD") == sum(t == "broad" for row in summ.tags for t in row)
    p = A.concat_projection(bundle, text, 3)
    shapes = F.projection_shapes(p).layout.shapes
    w_o = shapes[bundle.num_heads + 1]  # heads, concat, then W^O: drawn to its real size
    assert (w_o.x1 - w_o.x0, w_o.y0 - w_o.y1) == (bundle.hidden_size, bundle.hidden_size)
    concat = shapes[bundle.num_heads]
    assert (concat.x1 - concat.x0, concat.y0 - concat.y1) == (bundle.hidden_size, len(p.tokens))
