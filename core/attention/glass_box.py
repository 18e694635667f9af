"""The glass box: one head of one layer of a real BERT, recomputed from that layer's own weights,
and the concatenation and W^O after it (Vaswani et al. 2017, §3.2.1-3.2.2)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from core.attention.encoding import MAX_TOKENS, Encoding, _layer, encode
from core.attention.kernel import scaled_dot_product_attention
from core.attention.tables import matrix_frame


@dataclass
class HeadExplanation:
    tokens: list[str]
    layer: int
    head: int
    d_k: int
    d_model: int
    x: np.ndarray  # (T, d_model) the layer's input (output of the layer below)
    q: np.ndarray  # (T, d_k)  x W_i^Q + b
    k: np.ndarray  # (T, d_k)  x W_i^K + b
    v: np.ndarray  # (T, d_k)  x W_i^V + b
    raw_scores: np.ndarray  # (T, T)    q_i · k_j
    scaled_scores: np.ndarray  # (T, T)    q_i · k_j / √d_k
    weights: np.ndarray  # (T, T)    softmax over j of the scaled scores
    weights_unscaled: np.ndarray  # (T, T)   softmax of the raw scores (what 1/√d_k prevents)
    output: np.ndarray  # (T, d_k)  Σ_j weights_ij v_j
    reported: np.ndarray  # (T, T)    the model's own output_attentions for this head
    max_abs_diff: float  # max |weights - reported|
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
            {
                "key_position": j,
                "key_token": self.tokens[j],
                "q_dot_k": float(self.raw_scores[i, j]),
                "scaled": float(self.scaled_scores[i, j]),
                "weight": float(self.weights[i, j]),
                "weight_without_scaling": float(self.weights_unscaled[i, j]),
            }
            for j in range(self.n_tokens)
        ]

    def matrix_wide(self):
        """The weight matrix as the heatmap shows it (a DataFrame): one row per query, one column
        per key, named "position:token" so that a repeated token keeps its own column."""
        return matrix_frame(self.weights, self.tokens)

    def matrix_table(self) -> list[dict[str, Any]]:
        """Long format of the weight matrix (query, key, weight) for export."""
        return [
            {
                "query_position": i,
                "query_token": self.tokens[i],
                "key_position": j,
                "key_token": self.tokens[j],
                "weight": float(self.weights[i, j]),
            }
            for i in range(self.n_tokens)
            for j in range(self.n_tokens)
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
        return {
            "max_weight_scaled": m_s,
            "entropy_scaled": e_s,
            "max_weight_unscaled": m_u,
            "entropy_unscaled": e_u,
            "score_std_raw": float(np.std(self.raw_scores)),
            "score_std_scaled": float(np.std(self.scaled_scores)),
        }


def _head_projections(bundle, layer: int, x: torch.Tensor):
    """q, k, v for every head of ``layer`` from its own nn.Linear weights: (H, T, d_k) each."""
    sa = _layer(bundle, layer).attention.self
    H, d_k = sa.num_attention_heads, sa.attention_head_size
    T = x.shape[0]
    with torch.inference_mode():
        q = sa.query(x).view(T, H, d_k).transpose(0, 1)  # (H, T, d_k)
        k = sa.key(x).view(T, H, d_k).transpose(0, 1)  # (H, T, d_k)
        v = sa.value(x).view(T, H, d_k).transpose(0, 1)  # (H, T, d_k)
    return q, k, v


def _recomputed(enc: Encoding, layer: int, x: torch.Tensor, d_k: int, ours: np.ndarray, model: np.ndarray) -> dict:
    """The fields HeadExplanation and ProjectionExplanation share: where the recomputation ran and
    how far it lies from the model's own tensor."""
    return dict(
        tokens=list(enc.tokens),
        layer=layer,
        d_k=d_k,
        d_model=int(x.shape[-1]),
        max_abs_diff=float(np.abs(ours - model).max()),
        notices=list(enc.notices),
    )


def explain_head(
    bundle,
    text: str | None,
    layer: int,
    head: int,
    text_b: str | None = None,
    *,
    max_tokens: int = MAX_TOKENS,
    encoding: Encoding | None = None,
) -> HeadExplanation:
    """Recompute one head of a real BERT from the layer's own W^Q, W^K, W^V and its input x.

    Vaswani et al. 2017, eq. (1) on head i's projections (§3.2.2):
    q = x W_i^Q, k = x W_i^K, v = x W_i^V; weights = softmax(q kᵀ / √d_k); output = weights · v.
    The weights equal the model's reported ``output_attentions`` (checked in the tests, ≤ 1e-5).
    """
    _layer(bundle, layer)  # range check first: a negative index would silently wrap
    enc = encoding or encode(bundle, text, text_b, max_tokens=max_tokens)
    if not 0 <= head < enc.num_heads:
        raise IndexError(f"head {head} is not in 0..{enc.num_heads - 1}")
    # kept with the encoding: every session on this text and head shares one recomputation
    return enc.memo(("head", int(layer), int(head)), lambda: _explain_head(bundle, enc, int(layer), int(head)))


def _explain_head(bundle, enc: Encoding, layer: int, head: int) -> HeadExplanation:
    x = enc.hidden_states[layer].to(torch.float32)  # (T, d_model) input of this layer
    q_all, k_all, v_all = _head_projections(bundle, layer, enc.hidden_states[layer])
    q = q_all[head].double().cpu()  # (T, d_k)
    k = k_all[head].double().cpu()  # (T, d_k)
    v = v_all[head].double().cpu()  # (T, d_k)
    d_k = q.shape[-1]
    raw = q @ k.T  # (T, T) q_i · k_j, shown as a step
    scaled = raw / math.sqrt(d_k)  # (T, T) eq. (1): ÷ √d_k, shown as a step
    out, weights = scaled_dot_product_attention(q, k, v)  # (T, d_k), (T, T) the kernel
    _, unscaled = scaled_dot_product_attention(q, k, v, scale=False)  # (T, T) the same without 1/√d_k
    reported = enc.attentions[layer, head].astype(np.float64)
    w = weights.numpy()
    return HeadExplanation(
        **_recomputed(enc, layer, x, d_k, w, reported),
        head=head,
        x=x.double().cpu().numpy(),
        q=q.numpy(),
        k=k.numpy(),
        v=v.numpy(),
        raw_scores=raw.numpy(),
        scaled_scores=scaled.numpy(),
        weights=w,
        weights_unscaled=unscaled.numpy(),
        output=out.numpy(),
        reported=reported,
        n_tokens_full=enc.n_tokens_full,
        sentence_b_start=enc.sentence_b_start,
        special=dict(enc.special),
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
    heads: np.ndarray  # (H, T, d_k)  head_i outputs
    concat: np.ndarray  # (T, H·d_k)   Concat(head_1, ..., head_h)
    W_O_shape: tuple[int, int]  # (H·d_k, d_model) as the paper writes it (x W^O)
    projected: np.ndarray  # (T, d_model) Concat(...) W^O + b^O
    after_add_norm: np.ndarray  # (T, d_model) LayerNorm(x + projected): BERT's sub-layer output
    model_after_add_norm: np.ndarray  # (T, d_model) the same tensor captured from the model
    max_abs_diff: float
    notices: list[str]

    def table(self):
        """Concat and the projected output side by side, one row per token (a DataFrame)."""
        import pandas as pd

        left = matrix_frame(
            self.concat,
            self.tokens,
            [f"h{c // self.d_k}d{c % self.d_k}" for c in range(self.concat.shape[1])],
            row_name="token",
            col_prefix="concat_",
        )
        right = pd.DataFrame(
            self.projected.astype(np.float64), columns=[f"out_{c}" for c in range(self.projected.shape[1])]
        )
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


def concat_projection(
    bundle,
    text: str | None,
    layer: int,
    text_b: str | None = None,
    *,
    max_tokens: int = MAX_TOKENS,
    encoding: Encoding | None = None,
) -> ProjectionExplanation:
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O (Vaswani et al. 2017, §3.2.2), then
    BERT's LayerNorm(x + Sublayer(x)) (§3.1), recomputed and checked against the model's own tensor."""
    enc = encoding or encode(bundle, text, text_b, max_tokens=max_tokens)
    _layer(bundle, layer)
    return enc.memo(("concat", int(layer)), lambda: _concat_projection(bundle, enc, int(layer)))


def _concat_projection(bundle, enc: Encoding, layer: int) -> ProjectionExplanation:
    lay = _layer(bundle, layer)
    x = enc.hidden_states[layer]  # (T, d_model)
    q, k, v = _head_projections(bundle, layer, x)  # (H, T, d_k) each
    with torch.inference_mode():
        heads, _ = scaled_dot_product_attention(q, k, v)  # (H, T, d_k)
        H, T, d_k = heads.shape
        concat = heads.transpose(0, 1).reshape(T, H * d_k)  # (T, H·d_k)
        dense = lay.attention.output.dense  # weight: (d_model, H·d_k)
        projected = dense(concat)  # (T, d_model) = concat W^O + b^O
        after = lay.attention.output.LayerNorm(projected + x)  # (T, d_model) add & norm
        # the model's own attention sub-layer on the same input: self-attention, W^O, add & norm
        # (only this sub-layer runs, not the feed-forward after it; no hook on the shared model)
        own = lay.attention(x.unsqueeze(0))  # (1, T, d_model)
        own = own[0] if isinstance(own, tuple) else own
    model_after = own[0].float().cpu().numpy()
    ours = after.float().cpu().numpy()
    return ProjectionExplanation(
        **_recomputed(enc, layer, x, d_k, ours, model_after),
        num_heads=H,
        heads=heads.float().cpu().numpy(),
        concat=concat.float().cpu().numpy(),
        W_O_shape=(int(dense.weight.shape[1]), int(dense.weight.shape[0])),
        projected=projected.float().cpu().numpy(),
        after_add_norm=ours,
        model_after_add_norm=model_after,
    )
