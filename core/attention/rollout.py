"""Attention rollout (Abnar & Zuidema 2020, arXiv 2005.00928)."""

from __future__ import annotations

import numpy as np

from core.attention.encoding import MAX_TOKENS, encode


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
        A = 0.5 * W[l] + 0.5 * eye if residual else W[l]  # (T, T)
        A = A / A.sum(axis=-1, keepdims=True)  # rows sum to 1
        acc = A if acc is None else A @ acc  # (T, T)
        out[l] = acc
    return out


def rollout(bundle, text: str | None, text_b: str | None = None, *, max_tokens: int = MAX_TOKENS):
    """(Encoding, rollout (L, T, T)) for the page: one call, one figure."""
    enc = encode(bundle, text, text_b, max_tokens=max_tokens)
    return enc, enc.memo(("rollout",), lambda: attention_rollout(enc.attentions))
