"""Why 1/√d_k: a controlled study on random vectors (Vaswani et al. 2017, footnote 4)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from core.attention.kernel import scaled_dot_product_attention


@dataclass(frozen=True)  # frozen and of tuples: hashable, so a figure built from it can be cached
class ScalingStudy:
    d_k: tuple[int, ...]
    score_std: tuple[float, ...]  # std of q·k: grows like √d_k
    max_weight_unscaled: tuple[float, ...]  # mean largest softmax weight without 1/√d_k
    max_weight_scaled: tuple[float, ...]  # ... with it
    n_keys: int
    trials: int

    def rows(self) -> list[dict[str, Any]]:
        return [
            {"d_k": d, "score_std": s, "max_weight_unscaled": u, "max_weight_scaled": w}
            for d, s, u, w in zip(self.d_k, self.score_std, self.max_weight_unscaled, self.max_weight_scaled)
        ]


@functools.lru_cache(maxsize=8)  # deterministic (seeded) and shown on every rerun of lesson 4
def scaling_study(
    d_ks: Sequence[int] = (4, 16, 64, 256, 1024), n_keys: int = 16, trials: int = 256, seed: int = 0
) -> ScalingStudy:
    """q, k with independent N(0, 1) components: q·k has mean 0 and variance d_k (footnote 4).
    Without scaling the softmax over ``n_keys`` keys becomes nearly one-hot as d_k grows."""
    g = torch.Generator().manual_seed(seed)
    stds, mu, ms = [], [], []
    for d in d_ks:
        q = torch.randn(trials, 1, d, generator=g, dtype=torch.float64)  # (N, 1, d_k)
        k = torch.randn(trials, n_keys, d, generator=g, dtype=torch.float64)  # (N, n, d_k)
        s = (q @ k.transpose(-2, -1)).squeeze(1)  # (N, n)
        stds.append(float(s.std()))
        _, w_raw = scaled_dot_product_attention(q, k, k, scale=False)  # (N, 1, n)
        _, w_scaled = scaled_dot_product_attention(q, k, k)  # (N, 1, n) ÷ √d_k
        mu.append(float(w_raw.max(-1).values.mean()))
        ms.append(float(w_scaled.max(-1).values.mean()))
    return ScalingStudy(tuple(d_ks), tuple(stds), tuple(mu), tuple(ms), n_keys, trials)
