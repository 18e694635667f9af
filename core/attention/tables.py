"""Attention numbers as tables (pandas DataFrames) for export: CSV and JSON downloads."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.attention.encoding import Encoding


def matrix_frame(
    values,
    row_tokens: Sequence[str],
    col_tokens: Sequence[str] | None = None,
    row_name: str = "query",
    col_prefix: str = "",
):
    """A T × S matrix as a DataFrame for export: position and token columns, then one column per key."""
    import pandas as pd

    col_tokens = row_tokens if col_tokens is None else col_tokens
    frame = pd.DataFrame(
        np.asarray(values, dtype=np.float64), columns=[f"{col_prefix}{j}:{tok}" for j, tok in enumerate(col_tokens)]
    )
    frame.insert(0, f"{row_name}_token", list(row_tokens))
    frame.insert(0, f"{row_name}_position", range(len(row_tokens)))
    return frame


def weights_table(enc: Encoding):
    """Every weight of every head in long format (layer, head, query, key, tokens, weight): a DataFrame."""
    import pandas as pd

    L, H, T, _ = enc.attentions.shape
    l, h, i, j = np.meshgrid(np.arange(L), np.arange(H), np.arange(T), np.arange(T), indexing="ij")
    toks = np.array(enc.tokens, dtype=object)
    return pd.DataFrame(
        {
            "layer": l.ravel(),
            "head": h.ravel(),
            "query": i.ravel(),
            "query_token": toks[i.ravel()],
            "key": j.ravel(),
            "key_token": toks[j.ravel()],
            "weight": enc.attentions.astype(np.float64).ravel(),
        }
    )


def rollout_table(enc: Encoding, roll: np.ndarray, layer: int):
    """Rollout after ``layer`` for export: one row per position, one column per input token."""
    return matrix_frame(roll[layer], enc.tokens, row_name="position")
