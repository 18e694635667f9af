"""Self-attention and multi-head attention, written out, and taken apart on a real BERT.

Two halves:

* From scratch (lesson 4 and 5, the equations): :func:`scaled_dot_product_attention` and
  :class:`MultiHeadAttention`, Vaswani et al. 2017 (arXiv 1706.03762) §3.2.1 and §3.2.2. Tests hold
  them equal to ``torch.nn.functional.scaled_dot_product_attention`` and ``torch.nn.MultiheadAttention``.
* The glass box (on a loaded :class:`core.bert.BertBundle`): :func:`encode` runs the encoder once and
  keeps every layer's input and reported attention; :func:`explain_head` recomputes one head from
  that layer's own W^Q, W^K, W^V; :func:`concat_projection` recomputes the concatenation and W^O;
  :func:`head_summaries` tags every head by rules the page shows; :func:`attention_rollout` follows
  Abnar & Zuidema 2020 (arXiv 2005.00928).

torch is imported at the top: this module is only imported by the attention pages, never by the
home page.
"""
from __future__ import annotations

import functools
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from core.text import clean

# Token caps (DESIGN.md, "Bad input"): a heatmap past 128 rows is unreadable and heavy to send;
# bertviz draws one SVG line per (layer, head, query, key), so it is capped lower, at 64.
MAX_TOKENS = 128
MAX_TOKENS_BERTVIZ = 64
MAX_CHARS = 2000

__all__ = [
    "scaled_dot_product_attention", "MultiHeadAttention", "MultiHeadParts",
    "Encoding", "encode", "HeadExplanation", "explain_head", "ProjectionExplanation",
    "concat_projection", "TagRule", "TAG_RULES", "HeadSummaries", "head_summaries", "summarize",
    "attention_rollout", "rollout", "scaling_study", "ScalingStudy",
    "MAX_TOKENS", "MAX_TOKENS_BERTVIZ", "MAX_CHARS",
]


# --------------------------------------------------------------------------------------------
# From scratch
# --------------------------------------------------------------------------------------------

def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None, scale: bool = True):
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V   (Vaswani et al. 2017, eq. (1)).

    q: (..., T, d_k), k: (..., S, d_k), v: (..., S, d_v). ``mask`` is boolean and broadcastable to
    (..., T, S); True means "may attend", as in ``torch.nn.functional.scaled_dot_product_attention``.
    ``scale=False`` drops the 1/√d_k factor, to show why the paper keeps it (footnote 4: for
    unit-variance q and k, q·k has variance d_k, which pushes softmax into saturation).

    Returns ``(output (..., T, d_v), weights (..., T, S))``.
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1)                    # (..., T, S)  raw dot products q_i · k_j
    if scale:
        scores = scores / math.sqrt(d_k)                # (..., T, S)  ÷ √d_k
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError("mask must be boolean (True = may attend)")
        scores = scores.masked_fill(~mask, float("-inf"))  # (..., T, S)  forbidden keys get weight 0
    weights = torch.softmax(scores, dim=-1)             # (..., T, S)  each row sums to 1
    output = weights @ v                                # (..., T, d_v) weighted sum of the values
    return output, weights


@dataclass
class MultiHeadParts:
    """The intermediate tensors of one multi-head forward pass, for drawing."""
    q: torch.Tensor        # (B, h, T, d_k)  Q W_i^Q for every head i
    k: torch.Tensor        # (B, h, S, d_k)
    v: torch.Tensor        # (B, h, S, d_v)
    heads: torch.Tensor    # (B, h, T, d_v)  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)
    concat: torch.Tensor   # (B, T, h·d_v)   Concat(head_1, ..., head_h)
    output: torch.Tensor   # (B, T, d_model) Concat(...) W^O
    weights: torch.Tensor  # (B, h, T, S)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)   (Vaswani et al. 2017, §3.2.2).

    The h projections W_i^Q (d_model × d_k) are stored side by side as one d_model × d_model
    linear layer ``W_q`` and split afterwards, as the paper's implementation and BERT both do;
    d_k = d_v = d_model / h.
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.h, self.d_k = d_model, num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.d_k).transpose(1, 2)  # (B, h, T, d_k)

    def parts(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              mask: torch.Tensor | None = None) -> MultiHeadParts:
        B, T, _ = query.shape
        q = self.split_heads(self.W_q(query))                  # (B, h, T, d_k)
        k = self.split_heads(self.W_k(key))                    # (B, h, S, d_k)
        v = self.split_heads(self.W_v(value))                  # (B, h, S, d_k)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)                           # (B, 1, T, S) same mask for every head
        heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, h, T, d_k), (B, h, T, S)
        concat = heads.transpose(1, 2).reshape(B, T, self.d_model)  # (B, T, h·d_k)
        output = self.W_o(concat)                              # (B, T, d_model)
        return MultiHeadParts(q, k, v, heads, concat, output, weights)

    def forward(self, query, key, value, mask=None):
        """Returns ``(output (B, T, d_model), weights (B, h, T, S))``; batch first."""
        p = self.parts(query, key, value, mask)
        return p.output, p.weights


# --------------------------------------------------------------------------------------------
# One forward pass of a real encoder, kept for every view of the page
# --------------------------------------------------------------------------------------------

@dataclass
class Encoding:
    """What one forward pass of the encoder gives the attention views."""
    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]
    sentence_b_start: int | None      # first position of sentence B, None for one sentence
    attentions: np.ndarray            # (L, H, T, T) float32, the model's own output_attentions
    hidden_states: list[torch.Tensor]  # L+1 tensors (T, d_model); [l] is the input of layer l
    notices: list[str]                # notice codes: empty, truncated, invisible_removed, tokens_capped, ...
    n_tokens_full: int                # tokens before the cap
    max_tokens: int
    forward_seconds: float
    text: str = ""                    # the cleaned text that was encoded
    text_b: str | None = None
    special: dict[str, list[int]] = field(default_factory=dict)  # "cls"/"sep" -> positions

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def num_layers(self) -> int:
        return int(self.attentions.shape[0])

    @property
    def num_heads(self) -> int:
        return int(self.attentions.shape[1])

    @property
    def empty(self) -> bool:
        return "empty" in self.notices


_CACHE: "OrderedDict[tuple, Encoding]" = OrderedDict()
_CACHE_SIZE = 8
_LOCK = threading.Lock()


def _clean(text: str | None, max_chars: int) -> tuple[str, list[str]]:
    c = clean(text, max_chars=max_chars)
    return c.text, list(c.notices)


def encode(bundle, text: str | None, text_b: str | None = None, *, max_tokens: int = MAX_TOKENS,
           max_chars: int = MAX_CHARS) -> Encoding:
    """Clean, tokenize (capped at ``max_tokens`` wordpieces, [CLS] and [SEP] included) and run the
    encoder once with ``output_attentions`` and ``output_hidden_states``.

    The last few results are kept, so that every figure of a page rerun shares one forward pass.
    Empty text still encodes ([CLS] [SEP]); ``notices`` then holds ``empty`` for the page to say so.
    """
    a, notices = _clean(text, max_chars)
    b = None
    if text_b is not None and str(text_b).strip():
        b, notices_b = _clean(text_b, max_chars)
        notices += [n for n in notices_b if n not in notices and n != "empty"]
        b = b or None
    model = bundle.encoder
    key = (model, a, b, int(max_tokens), int(max_chars))
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            # the same text under another cap that did not cut it has the very same tokens
            hit = next((e for k, e in _CACHE.items() if k[:3] == key[:3] and k[4] == key[4]
                        and e.n_tokens_full <= max_tokens and "tokens_capped" not in e.notices), None)
        if hit is not None:
            _CACHE[key] = hit
            _CACHE.move_to_end(key)
            return hit
    enc = _encode_uncached(bundle, a, b, notices, max_tokens)
    with _LOCK:
        _CACHE[key] = enc
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return enc


def _encode_uncached(bundle, a: str, b: str | None, notices: list[str], max_tokens: int) -> Encoding:
    tok = bundle.tokenizer
    if max_tokens < 3:
        raise ValueError("max_tokens must leave room for [CLS], one token and [SEP]")
    full = tok(a, b, add_special_tokens=True)
    n_full = len(full["input_ids"])
    if n_full > max_tokens:
        # longest_first trims the longer sentence of a pair first, so both keep some tokens.
        batch = tok(a, b, add_special_tokens=True, truncation="longest_first", max_length=max_tokens)
        notices = notices + ["tokens_capped"]
    else:
        batch = full
    ids = list(batch["input_ids"])
    types = list(batch.get("token_type_ids") or [0] * len(ids))
    tokens = tok.convert_ids_to_tokens(ids)
    device = getattr(bundle, "device", None) or next(bundle.encoder.parameters()).device
    input_ids = torch.tensor([ids], device=device)
    token_type_ids = torch.tensor([types], device=device)
    model = bundle.encoder
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = model(input_ids=input_ids, token_type_ids=token_type_ids,
                    attention_mask=torch.ones_like(input_ids),
                    output_attentions=True, output_hidden_states=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    if not out.attentions or out.attentions[0] is None:
        raise RuntimeError("the model returned no attentions: load it with attn_implementation='eager'")
    attn = torch.stack([a_[0] for a_ in out.attentions]).float().cpu().numpy()  # (L, H, T, T)
    hidden = [h[0].detach() for h in out.hidden_states]                          # L+1 × (T, d_model)
    b_start = types.index(1) if b is not None and 1 in types else None
    special = {
        "cls": [i for i, t in enumerate(ids) if t == tok.cls_token_id],
        "sep": [i for i, t in enumerate(ids) if t == tok.sep_token_id],
    }
    return Encoding(tokens=tokens, input_ids=ids, token_type_ids=types, sentence_b_start=b_start,
                    attentions=attn, hidden_states=hidden, notices=notices, n_tokens_full=n_full,
                    max_tokens=max_tokens, forward_seconds=seconds, text=a, text_b=b, special=special)


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()


def _layer(bundle, layer: int):
    layers = bundle.encoder.encoder.layer
    if not 0 <= layer < len(layers):
        raise IndexError(f"layer {layer} is not in 0..{len(layers) - 1}")
    return layers[layer]


# --------------------------------------------------------------------------------------------
# The glass box: one head of one layer, recomputed from that layer's own weights
# --------------------------------------------------------------------------------------------

@dataclass
class HeadExplanation:
    tokens: list[str]
    layer: int
    head: int
    d_k: int
    d_model: int
    x: np.ndarray                # (T, d_model) the layer's input (output of the layer below)
    q: np.ndarray                # (T, d_k)  x W_i^Q + b
    k: np.ndarray                # (T, d_k)  x W_i^K + b
    v: np.ndarray                # (T, d_k)  x W_i^V + b
    raw_scores: np.ndarray       # (T, T)    q_i · k_j
    scaled_scores: np.ndarray    # (T, T)    q_i · k_j / √d_k
    weights: np.ndarray          # (T, T)    softmax over j of the scaled scores
    weights_unscaled: np.ndarray  # (T, T)   softmax of the raw scores (what 1/√d_k prevents)
    output: np.ndarray           # (T, d_k)  Σ_j weights_ij v_j
    reported: np.ndarray         # (T, T)    the model's own output_attentions for this head
    max_abs_diff: float          # max |weights - reported|
    notices: list[str]
    n_tokens_full: int
    sentence_b_start: int | None
    special: dict[str, list[int]]

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    def query_table(self, i: int) -> list[dict[str, Any]]:
        """One row per key j for query i: the numbers of the glass box, for CSV/JSON export."""
        return [
            {"key_position": j, "key_token": self.tokens[j],
             "q_dot_k": float(self.raw_scores[i, j]), "scaled": float(self.scaled_scores[i, j]),
             "weight": float(self.weights[i, j]), "weight_without_scaling": float(self.weights_unscaled[i, j])}
            for j in range(self.n_tokens)
        ]

    def matrix_wide(self):
        """The weight matrix as the heatmap shows it (a DataFrame): one row per query, one column
        per key, named "position:token" so that a repeated token keeps its own column."""
        return matrix_frame(self.weights, self.tokens)

    def matrix_table(self) -> list[dict[str, Any]]:
        """Long format of the weight matrix (query, key, weight) for export."""
        return [
            {"query_position": i, "query_token": self.tokens[i], "key_position": j,
             "key_token": self.tokens[j], "weight": float(self.weights[i, j])}
            for i in range(self.n_tokens) for j in range(self.n_tokens)
        ]

    def row_entropy(self, i: int, scaled: bool = True) -> float:
        """Entropy (nats) of query i's weights: ln T for uniform attention, 0 for one-hot."""
        w = np.asarray((self.weights if scaled else self.weights_unscaled)[i], dtype=np.float64)
        return float(-(w * np.log(np.clip(w, 1e-300, None))).sum())

    def saturation(self) -> dict[str, float]:
        """How peaked the rows are with and without 1/√d_k: mean max weight and mean entropy (nats)."""
        def stats(w):
            w = np.asarray(w, dtype=np.float64)
            ent = -(w * np.log(np.clip(w, 1e-300, None))).sum(-1)
            return float(w.max(-1).mean()), float(ent.mean())
        m_s, e_s = stats(self.weights)
        m_u, e_u = stats(self.weights_unscaled)
        return {"max_weight_scaled": m_s, "entropy_scaled": e_s,
                "max_weight_unscaled": m_u, "entropy_unscaled": e_u,
                "score_std_raw": float(np.std(self.raw_scores)),
                "score_std_scaled": float(np.std(self.scaled_scores))}


def matrix_frame(values, row_tokens: Sequence[str], col_tokens: Sequence[str] | None = None,
                 row_name: str = "query", col_prefix: str = ""):
    """A T × S matrix as a DataFrame for export: position and token columns, then one column per key."""
    import pandas as pd

    col_tokens = row_tokens if col_tokens is None else col_tokens
    frame = pd.DataFrame(np.asarray(values, dtype=np.float64),
                         columns=[f"{col_prefix}{j}:{tok}" for j, tok in enumerate(col_tokens)])
    frame.insert(0, f"{row_name}_token", list(row_tokens))
    frame.insert(0, f"{row_name}_position", range(len(row_tokens)))
    return frame


def _head_projections(bundle, layer: int, x: torch.Tensor):
    """q, k, v for every head of ``layer`` from its own nn.Linear weights: (H, T, d_k) each."""
    sa = _layer(bundle, layer).attention.self
    H, d_k = sa.num_attention_heads, sa.attention_head_size
    T = x.shape[0]
    with torch.inference_mode():
        q = sa.query(x).view(T, H, d_k).transpose(0, 1)  # (H, T, d_k)
        k = sa.key(x).view(T, H, d_k).transpose(0, 1)    # (H, T, d_k)
        v = sa.value(x).view(T, H, d_k).transpose(0, 1)  # (H, T, d_k)
    return q, k, v


def explain_head(bundle, text: str | None, layer: int, head: int, text_b: str | None = None, *,
                 max_tokens: int = MAX_TOKENS, encoding: Encoding | None = None) -> HeadExplanation:
    """Recompute one head of a real BERT from the layer's own W^Q, W^K, W^V and its input x.

    Vaswani et al. 2017, eq. (1) on head i's projections (§3.2.2):
    q = x W_i^Q, k = x W_i^K, v = x W_i^V; weights = softmax(q kᵀ / √d_k); output = weights · v.
    The weights equal the model's reported ``output_attentions`` (checked in the tests, ≤ 1e-5).
    """
    _layer(bundle, layer)  # range check first: a negative index would silently wrap
    enc = encoding or encode(bundle, text, text_b, max_tokens=max_tokens)
    if not 0 <= head < enc.num_heads:
        raise IndexError(f"head {head} is not in 0..{enc.num_heads - 1}")
    x = enc.hidden_states[layer].to(torch.float32)  # (T, d_model) input of this layer
    q_all, k_all, v_all = _head_projections(bundle, layer, enc.hidden_states[layer])
    q = q_all[head].double().cpu()                    # (T, d_k)
    k = k_all[head].double().cpu()                    # (T, d_k)
    v = v_all[head].double().cpu()                    # (T, d_k)
    d_k = q.shape[-1]
    raw = q @ k.T                                     # (T, T) q_i · k_j
    scaled = raw / math.sqrt(d_k)                     # (T, T) eq. (1): ÷ √d_k
    weights = torch.softmax(scaled, dim=-1)           # (T, T)
    unscaled = torch.softmax(raw, dim=-1)             # (T, T) the same without scaling
    out = weights @ v                                 # (T, d_k)
    reported = enc.attentions[layer, head].astype(np.float64)
    w = weights.numpy()
    return HeadExplanation(
        tokens=list(enc.tokens), layer=layer, head=head, d_k=d_k, d_model=int(x.shape[-1]),
        x=x.double().cpu().numpy(), q=q.numpy(), k=k.numpy(), v=v.numpy(), raw_scores=raw.numpy(),
        scaled_scores=scaled.numpy(), weights=w, weights_unscaled=unscaled.numpy(), output=out.numpy(),
        reported=reported, max_abs_diff=float(np.abs(w - reported).max()),
        notices=list(enc.notices), n_tokens_full=enc.n_tokens_full,
        sentence_b_start=enc.sentence_b_start, special=dict(enc.special),
    )


# --------------------------------------------------------------------------------------------
# Concatenation and the output projection W^O, on the real layer
# --------------------------------------------------------------------------------------------

@dataclass
class ProjectionExplanation:
    tokens: list[str]
    layer: int
    num_heads: int
    d_k: int
    d_model: int
    heads: np.ndarray          # (H, T, d_k)  head_i outputs
    concat: np.ndarray         # (T, H·d_k)   Concat(head_1, ..., head_h)
    W_O_shape: tuple[int, int]  # (H·d_k, d_model) as the paper writes it (x W^O)
    projected: np.ndarray      # (T, d_model) Concat(...) W^O + b^O
    after_add_norm: np.ndarray  # (T, d_model) LayerNorm(x + projected): BERT's sub-layer output
    model_after_add_norm: np.ndarray  # (T, d_model) the same tensor captured from the model
    max_abs_diff: float
    notices: list[str]

    def table(self):
        """Concat and the projected output side by side, one row per token (a DataFrame)."""
        import pandas as pd

        left = matrix_frame(self.concat, self.tokens, [f"h{c // self.d_k}d{c % self.d_k}"
                                                       for c in range(self.concat.shape[1])],
                            row_name="token", col_prefix="concat_")
        right = pd.DataFrame(self.projected.astype(np.float64),
                             columns=[f"out_{c}" for c in range(self.projected.shape[1])])
        return pd.concat([left, right], axis=1)

    def shapes(self) -> list[dict[str, Any]]:
        """The chain of shapes, one row per step, for the drawing and for export."""
        T = len(self.tokens)
        rows = [{"step": f"head_{i + 1}", "rows": T, "cols": self.d_k} for i in range(self.num_heads)]
        rows += [
            {"step": "concat", "rows": T, "cols": self.num_heads * self.d_k},
            {"step": "W_O", "rows": self.W_O_shape[0], "cols": self.W_O_shape[1]},
            {"step": "projected", "rows": T, "cols": self.d_model},
            {"step": "add_norm", "rows": T, "cols": self.d_model},
        ]
        return rows


def concat_projection(bundle, text: str | None, layer: int, text_b: str | None = None, *,
                      max_tokens: int = MAX_TOKENS, encoding: Encoding | None = None) -> ProjectionExplanation:
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O (Vaswani et al. 2017, §3.2.2), then
    BERT's LayerNorm(x + Sublayer(x)) (§3.1), recomputed and checked against the model's own tensor."""
    enc = encoding or encode(bundle, text, text_b, max_tokens=max_tokens)
    lay = _layer(bundle, layer)
    x = enc.hidden_states[layer]                                  # (T, d_model)
    q, k, v = _head_projections(bundle, layer, x)                 # (H, T, d_k) each
    with torch.inference_mode():
        heads, _ = scaled_dot_product_attention(q, k, v)          # (H, T, d_k)
        H, T, d_k = heads.shape
        concat = heads.transpose(0, 1).reshape(T, H * d_k)        # (T, H·d_k)
        dense = lay.attention.output.dense                        # weight: (d_model, H·d_k)
        projected = dense(concat)                                 # (T, d_model) = concat W^O + b^O
        after = lay.attention.output.LayerNorm(projected + x)     # (T, d_model) add & norm
        captured: dict[str, torch.Tensor] = {}
        hook = lay.attention.register_forward_hook(
            lambda _m, _i, o: captured.__setitem__("out", o[0] if isinstance(o, tuple) else o))
        try:
            lay(x.unsqueeze(0))                                   # (1, T, d_model) the layer itself
        finally:
            hook.remove()
    model_after = captured["out"][0].float().cpu().numpy()
    ours = after.float().cpu().numpy()
    return ProjectionExplanation(
        tokens=list(enc.tokens), layer=layer, num_heads=H, d_k=d_k, d_model=int(x.shape[-1]),
        heads=heads.float().cpu().numpy(), concat=concat.float().cpu().numpy(),
        W_O_shape=(int(dense.weight.shape[1]), int(dense.weight.shape[0])),
        projected=projected.float().cpu().numpy(), after_add_norm=ours, model_after_add_norm=model_after,
        max_abs_diff=float(np.abs(ours - model_after).max()), notices=list(enc.notices),
    )


# --------------------------------------------------------------------------------------------
# Head summaries and tags
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TagRule:
    tag: str          # the tag's key ("sep_sink", ...); the page translates it
    metric: str       # the summary column the rule reads
    threshold: float  # the rule fires when metric >= threshold


# Tried in this order; the first that fires names the head (the page prints this list as the rule).
# Shares are of attention mass averaged over the query rows. Clark et al. 2019 ("What does BERT look
# at?", arXiv 1906.04341) found heads that put most of their mass on [SEP], on the previous or the
# next token, and broad heads; the thresholds are ours.
TAG_RULES: tuple[TagRule, ...] = (
    TagRule("sep_sink", "sep", 0.5),
    TagRule("cls_sink", "cls", 0.5),
    TagRule("previous", "previous", 0.5),
    TagRule("next", "next", 0.5),
    TagRule("self", "self", 0.5),
    TagRule("broad", "entropy_norm", 0.75),
)
FALLBACK_TAG = "mixed"
SUMMARY_METRICS = ("entropy", "entropy_norm", "cls", "sep", "previous", "next", "self")


@dataclass
class HeadSummaries:
    num_layers: int
    num_heads: int
    n_tokens: int
    metrics: dict[str, np.ndarray]  # metric -> (L, H) float64
    tags: list[list[str]]           # (L, H)
    rules: tuple[TagRule, ...] = TAG_RULES

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for l in range(self.num_layers):
            for h in range(self.num_heads):
                row = {"layer": l, "head": h, "tag": self.tags[l][h]}
                row.update({m: round(float(self.metrics[m][l, h]), 4) for m in SUMMARY_METRICS})
                out.append(row)
        return out


def tag_head(values: dict[str, float], rules: Sequence[TagRule] = TAG_RULES) -> str:
    for r in rules:
        if values[r.metric] >= r.threshold:
            return r.tag
    return FALLBACK_TAG


def head_summaries(attentions, cls_positions: Sequence[int], sep_positions: Sequence[int]) -> HeadSummaries:
    """Per head: entropy and the share of attention to [CLS], [SEP], previous, next and self.

    attentions: (L, H, T, T) rows sum to 1. Entropy is -Σ_j a_ij ln a_ij averaged over rows (nats);
    ``entropy_norm`` divides it by ln T, the entropy of uniform attention.
    """
    A = np.asarray(attentions, dtype=np.float64)             # (L, H, T, T)
    L, H, T, _ = A.shape
    ent = -(A * np.log(np.clip(A, 1e-300, None))).sum(-1).mean(-1)  # (L, H)
    metrics = {
        "entropy": ent,
        "entropy_norm": ent / math.log(T) if T > 1 else np.zeros_like(ent),
        "cls": A[..., list(cls_positions)].sum(-1).mean(-1) if cls_positions else np.zeros((L, H)),
        "sep": A[..., list(sep_positions)].sum(-1).mean(-1) if sep_positions else np.zeros((L, H)),
        "self": np.diagonal(A, axis1=-2, axis2=-1).mean(-1),
        # A[i, i-1] for i = 1..T-1 is the first sub-diagonal; A[i, i+1] the first super-diagonal.
        "previous": np.diagonal(A, offset=-1, axis1=-2, axis2=-1).mean(-1) if T > 1 else np.zeros((L, H)),
        "next": np.diagonal(A, offset=1, axis1=-2, axis2=-1).mean(-1) if T > 1 else np.zeros((L, H)),
    }
    tags = [[tag_head({m: metrics[m][l, h] for m in SUMMARY_METRICS}) for h in range(H)] for l in range(L)]
    return HeadSummaries(L, H, T, metrics, tags)


def summarize(bundle, text: str | None, text_b: str | None = None, *,
              max_tokens: int = MAX_TOKENS) -> tuple[Encoding, HeadSummaries]:
    """Encode and summarise every head in one call (for the page)."""
    enc = encode(bundle, text, text_b, max_tokens=max_tokens)
    return enc, head_summaries(enc.attentions, enc.special.get("cls", []), enc.special.get("sep", []))


# --------------------------------------------------------------------------------------------
# Attention rollout (Abnar & Zuidema 2020)
# --------------------------------------------------------------------------------------------

def attention_rollout(attentions, residual: bool = True) -> np.ndarray:
    """Attention rollout, Abnar & Zuidema 2020 (arXiv 2005.00928), §3.

    Heads are averaged; the residual connection is modelled as A = 0.5 W_att + 0.5 I and rows are
    re-normalised; then Ã(l_i) = A(l_i) Ã(l_{i-1}), Ã(l_0) = A(l_0). Returns (L, T, T): row i of
    layer l says how much of position i's representation after layer l comes from each input token.
    """
    W = np.asarray(attentions, dtype=np.float64).mean(axis=1)  # (L, T, T) average over heads
    L, T, _ = W.shape
    eye = np.eye(T)
    out = np.empty_like(W)
    acc = None
    for l in range(L):
        A = 0.5 * W[l] + 0.5 * eye if residual else W[l]     # (T, T)
        A = A / A.sum(axis=-1, keepdims=True)                # rows sum to 1
        acc = A if acc is None else A @ acc                  # (T, T)
        out[l] = acc
    return out


def weights_table(enc: Encoding):
    """Every weight of every head in long format (layer, head, query, key, tokens, weight): a DataFrame."""
    import pandas as pd

    L, H, T, _ = enc.attentions.shape
    l, h, i, j = np.meshgrid(np.arange(L), np.arange(H), np.arange(T), np.arange(T), indexing="ij")
    toks = np.array(enc.tokens, dtype=object)
    return pd.DataFrame({"layer": l.ravel(), "head": h.ravel(), "query": i.ravel(), "query_token": toks[i.ravel()],
                         "key": j.ravel(), "key_token": toks[j.ravel()],
                         "weight": enc.attentions.astype(np.float64).ravel()})


def rollout_table(enc: Encoding, roll: np.ndarray, layer: int):
    """Rollout after ``layer`` for export: one row per position, one column per input token."""
    return matrix_frame(roll[layer], enc.tokens, row_name="position")


def rollout(bundle, text: str | None, text_b: str | None = None, *, max_tokens: int = MAX_TOKENS):
    """(Encoding, rollout (L, T, T)) for the page: one call, one figure."""
    enc = encode(bundle, text, text_b, max_tokens=max_tokens)
    return enc, attention_rollout(enc.attentions)


# --------------------------------------------------------------------------------------------
# Why 1/√d_k: a controlled study on random vectors (Vaswani et al. 2017, footnote 4)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)  # frozen and of tuples: hashable, so a figure built from it can be cached
class ScalingStudy:
    d_k: tuple[int, ...]
    score_std: tuple[float, ...]             # std of q·k: grows like √d_k
    max_weight_unscaled: tuple[float, ...]   # mean largest softmax weight without 1/√d_k
    max_weight_scaled: tuple[float, ...]     # ... with it
    n_keys: int
    trials: int

    def rows(self) -> list[dict[str, Any]]:
        return [{"d_k": d, "score_std": s, "max_weight_unscaled": u, "max_weight_scaled": w}
                for d, s, u, w in zip(self.d_k, self.score_std, self.max_weight_unscaled, self.max_weight_scaled)]


@functools.lru_cache(maxsize=8)  # deterministic (seeded) and shown on every rerun of lesson 4
def scaling_study(d_ks: Sequence[int] = (4, 16, 64, 256, 1024), n_keys: int = 16, trials: int = 256,
                  seed: int = 0) -> ScalingStudy:
    """q, k with independent N(0, 1) components: q·k has mean 0 and variance d_k (footnote 4).
    Without scaling the softmax over ``n_keys`` keys becomes nearly one-hot as d_k grows."""
    g = torch.Generator().manual_seed(seed)
    stds, mu, ms = [], [], []
    for d in d_ks:
        q = torch.randn(trials, 1, d, generator=g, dtype=torch.float64)       # (N, 1, d_k)
        k = torch.randn(trials, n_keys, d, generator=g, dtype=torch.float64)  # (N, n, d_k)
        s = (q @ k.transpose(-2, -1)).squeeze(1)                              # (N, n)
        stds.append(float(s.std()))
        mu.append(float(torch.softmax(s, -1).max(-1).values.mean()))
        ms.append(float(torch.softmax(s / math.sqrt(d), -1).max(-1).values.mean()))
    return ScalingStudy(tuple(d_ks), tuple(stds), tuple(mu), tuple(ms), n_keys, trials)
