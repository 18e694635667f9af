"""Every head summarised and tagged by rules the page prints (Clark et al. 2019)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.attention.encoding import MAX_TOKENS, Encoding, encode


@dataclass(frozen=True)
class TagRule:
    tag: str  # the tag's key ("sep_sink", ...); the page translates it
    metric: str  # the summary column the rule reads
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
    tags: list[list[str]]  # (L, H)
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
    A = np.asarray(attentions, dtype=np.float64)  # (L, H, T, T)
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


def summarize(
    bundle, text: str | None, text_b: str | None = None, *, max_tokens: int = MAX_TOKENS
) -> tuple[Encoding, HeadSummaries]:
    """Encode and summarise every head in one call (for the page)."""
    enc = encode(bundle, text, text_b, max_tokens=max_tokens)
    summ = enc.memo(
        ("summaries",), lambda: head_summaries(enc.attentions, enc.special.get("cls", []), enc.special.get("sep", []))
    )
    return enc, summ
