"""A head census: on the sentence on screen, how many heads of the loaded model put at least half
of their attention on [CLS], on [SEP], on themselves, on the previous or on the next token.

The shares are :func:`core.attention.head_summaries`' own metrics (attention mass averaged over the
query rows), so the census, the tag grid and the exported table read one computation. The lessons
set these counts beside what Clark et al. 2019 ("What Does BERT Look At? An Analysis of BERT's
Attention", arXiv 1906.04341) report for BERT-base: statements about heads are computed from the
model on screen, and the paper's findings are cited as the paper's, about its model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.attention.encoding import MAX_TOKENS, Encoding
from core.attention.heads import TAG_RULES, HeadSummaries, summarize

# The census' kinds, in the order the lessons list them; each is a metric of head_summaries.
CENSUS_KINDS: tuple[str, ...] = ("cls", "sep", "self", "previous", "next")
# "At least half of its attention": Clark et al. count heads that put > 50 % on the previous or next token.
CENSUS_THRESHOLD = 0.5
# A broad head: normalised entropy at or above the tag rule's threshold (the lesson prints that rule).
BROAD_THRESHOLD = next(r.threshold for r in TAG_RULES if r.tag == "broad")

# What Clark et al. 2019 report for BERT-base (12 layers x 12 heads = 144; their layers count from 1),
# measured on 1,000 Wikipedia segments of up to 128 tokens. None: the paper gives no head count;
# the lessons then quote its finding in words (locale keys multi_head.census_paper.<kind>).
PAPER_HEADS = 144
PAPER_COUNTS: dict[str, int | None] = {"cls": None, "sep": None, "self": None, "previous": 4, "next": 5, "broad": None}
PAPER_LAYERS: dict[str, tuple[int, ...]] = {"previous": (2, 4, 7, 8), "next": (1, 2, 2, 3, 6)}


@dataclass
class HeadCensus:
    num_layers: int
    num_heads: int
    n_tokens: int
    threshold: float
    heads: dict[str, list[tuple[int, int]]]  # kind -> (layer, head) pairs at or above the threshold
    broad: list[tuple[int, int]] = field(default_factory=list)  # normalised entropy >= BROAD_THRESHOLD
    sep_share_by_layer: list[float] = field(default_factory=list)  # mean share on [SEP], per layer

    @property
    def total(self) -> int:
        return self.num_layers * self.num_heads

    @property
    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.heads.items()} | {"broad": len(self.broad)}

    def layers(self, kind: str) -> list[int]:
        """The (0-based) layers of the heads of one kind, one entry per head."""
        pairs = self.broad if kind == "broad" else self.heads[kind]
        return [layer for layer, _ in pairs]

    def rows(self) -> list[dict]:
        """One row per kind, for export: this model's count and heads beside the paper's count."""
        out = []
        for kind in CENSUS_KINDS + ("broad",):
            pairs = self.broad if kind == "broad" else self.heads[kind]
            out.append(
                {
                    "kind": kind,
                    "heads": len(pairs),
                    "of": self.total,
                    "which": " ".join(f"{layer}-{head}" for layer, head in pairs),
                    "paper_heads": PAPER_COUNTS[kind],
                    "paper_of": PAPER_HEADS,
                }
            )
        return out


def census_from(summ: HeadSummaries, *, threshold: float = CENSUS_THRESHOLD) -> HeadCensus:
    """Count from head summaries (no second implementation of the shares)."""
    L, H = summ.num_layers, summ.num_heads
    heads = {
        kind: [
            (layer, head)
            for layer in range(L)
            for head in range(H)
            if float(summ.metrics[kind][layer, head]) >= threshold
        ]
        for kind in CENSUS_KINDS
    }
    broad = [
        (layer, head)
        for layer in range(L)
        for head in range(H)
        if float(summ.metrics["entropy_norm"][layer, head]) >= BROAD_THRESHOLD
    ]
    sep_by_layer = [float(np.mean(summ.metrics["sep"][layer])) for layer in range(L)]
    return HeadCensus(L, H, summ.n_tokens, float(threshold), heads, broad, sep_by_layer)


def head_census(
    bundle,
    text: str | None,
    text_b: str | None = None,
    *,
    max_tokens: int = MAX_TOKENS,
    threshold: float = CENSUS_THRESHOLD,
) -> tuple[Encoding, HeadSummaries, HeadCensus]:
    """Encode (shared cache), summarise every head and count them, for the sentence on screen."""
    enc, summ = summarize(bundle, text, text_b, max_tokens=max_tokens)
    return enc, summ, census_from(summ, threshold=threshold)
