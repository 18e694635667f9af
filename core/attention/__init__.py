"""Self-attention and multi-head attention, written out, and taken apart on a real BERT.

* :mod:`~core.attention.kernel` (lessons 4, 5 and 8, the equations): :func:`scaled_dot_product_attention`,
  the one kernel of the app, and :class:`MultiHeadAttention`, Vaswani et al. 2017 (arXiv 1706.03762)
  §3.2.1 and §3.2.2.
* :mod:`~core.attention.encoding`: :func:`encode` runs a loaded :class:`core.bert.BertBundle` once and
  keeps every layer's input and reported attention, shared by every figure of a rerun.
* :mod:`~core.attention.glass_box`: :func:`explain_head` recomputes one head from that layer's own
  W^Q, W^K, W^V; :func:`concat_projection` recomputes the concatenation and W^O.
* :mod:`~core.attention.heads`: :func:`head_summaries` tags every head by rules the page shows.
* :mod:`~core.attention.census`: :func:`head_census` counts the heads of each kind on the sentence on
  screen, beside Clark et al. 2019's counts for BERT-base (arXiv 1906.04341).
* :mod:`~core.attention.rollout`: :func:`attention_rollout`, Abnar & Zuidema 2020 (arXiv 2005.00928).
* :mod:`~core.attention.scaling`: :func:`scaling_study`, why 1/√d_k (footnote 4).
* :mod:`~core.attention.tables`: DataFrames for export.

torch is imported here: this package is only imported by the attention pages and the Megatron
layers, never by the home page.
"""

from core.attention.census import (
    CENSUS_KINDS,
    CENSUS_THRESHOLD,
    PAPER_COUNTS,
    PAPER_HEADS,
    PAPER_LAYERS,
    HeadCensus,
    census_from,
    head_census,
)
from core.attention.encoding import (
    MAX_CHARS,
    MAX_TOKENS,
    MAX_TOKENS_BERTVIZ,
    Encoding,
    cache_bytes,
    cached_encodings,
    clear_cache,
    encode,
)
from core.attention.glass_box import (
    HeadExplanation,
    ProjectionExplanation,
    _head_projections,
    concat_projection,
    explain_head,
)
from core.attention.heads import (
    FALLBACK_TAG,
    SUMMARY_METRICS,
    TAG_RULES,
    HeadSummaries,
    TagRule,
    head_summaries,
    summarize,
    tag_head,
)
from core.attention.kernel import MultiHeadAttention, MultiHeadParts, scaled_dot_product_attention
from core.attention.rollout import attention_rollout, rollout
from core.attention.scaling import ScalingStudy, scaling_study
from core.attention.tables import matrix_frame, rollout_table, weights_table

__all__ = [
    "CENSUS_KINDS",
    "CENSUS_THRESHOLD",
    "PAPER_COUNTS",
    "PAPER_HEADS",
    "PAPER_LAYERS",
    "HeadCensus",
    "census_from",
    "head_census",
    "FALLBACK_TAG",
    "MAX_CHARS",
    "MAX_TOKENS",
    "MAX_TOKENS_BERTVIZ",
    "SUMMARY_METRICS",
    "TAG_RULES",
    "Encoding",
    "HeadExplanation",
    "HeadSummaries",
    "MultiHeadAttention",
    "MultiHeadParts",
    "ProjectionExplanation",
    "ScalingStudy",
    "TagRule",
    "_head_projections",
    "attention_rollout",
    "cache_bytes",
    "cached_encodings",
    "clear_cache",
    "concat_projection",
    "encode",
    "explain_head",
    "head_summaries",
    "matrix_frame",
    "rollout",
    "rollout_table",
    "scaled_dot_product_attention",
    "scaling_study",
    "summarize",
    "tag_head",
    "weights_table",
]
