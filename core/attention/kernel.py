"""The attention equations from scratch: the one kernel every view and layer of the app uses.

Vaswani et al. 2017 (arXiv 1706.03762) §3.2.1 (scaled dot-product attention, eq. (1)) and §3.2.2
(multi-head attention). The glass box (lesson 4), the Megatron layers (lesson 8) and the bertviz
neuron view (lesson 5) all call :func:`scaled_dot_product_attention`. Tests hold it equal to
``torch.nn.functional.scaled_dot_product_attention`` and ``torch.nn.MultiheadAttention``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, scale: bool = True
):
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V   (Vaswani et al. 2017, eq. (1)).

    q: (..., T, d_k), k: (..., S, d_k), v: (..., S, d_v). ``mask`` is boolean and broadcastable to
    (..., T, S); True means "may attend", as in ``torch.nn.functional.scaled_dot_product_attention``.
    ``scale=False`` drops the 1/√d_k factor, to show why the paper keeps it (footnote 4: for
    unit-variance q and k, q·k has variance d_k, which pushes softmax into saturation).

    Returns ``(output (..., T, d_v), weights (..., T, S))``.
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1)  # (..., T, S)  raw dot products q_i · k_j
    if scale:
        scores = scores / math.sqrt(d_k)  # (..., T, S)  ÷ √d_k
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError("mask must be boolean (True = may attend)")
        scores = scores.masked_fill(~mask, float("-inf"))  # (..., T, S)  forbidden keys get weight 0
    weights = torch.softmax(scores, dim=-1)  # (..., T, S)  each row sums to 1
    output = weights @ v  # (..., T, d_v) weighted sum of the values
    return output, weights


@dataclass
class MultiHeadParts:
    """The intermediate tensors of one multi-head forward pass, for drawing."""

    q: torch.Tensor  # (B, h, T, d_k)  Q W_i^Q for every head i
    k: torch.Tensor  # (B, h, S, d_k)
    v: torch.Tensor  # (B, h, S, d_v)
    heads: torch.Tensor  # (B, h, T, d_v)  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)
    concat: torch.Tensor  # (B, T, h·d_v)   Concat(head_1, ..., head_h)
    output: torch.Tensor  # (B, T, d_model) Concat(...) W^O
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

    def parts(
        self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None
    ) -> MultiHeadParts:
        B, T, _ = query.shape
        q = self.split_heads(self.W_q(query))  # (B, h, T, d_k)
        k = self.split_heads(self.W_k(key))  # (B, h, S, d_k)
        v = self.split_heads(self.W_v(value))  # (B, h, S, d_k)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, T, S) same mask for every head
        heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, h, T, d_k), (B, h, T, S)
        concat = heads.transpose(1, 2).reshape(B, T, self.d_model)  # (B, T, h·d_k)
        output = self.W_o(concat)  # (B, T, d_model)
        return MultiHeadParts(q, k, v, heads, concat, output, weights)

    def forward(self, query, key, value, mask=None):
        """Returns ``(output (B, T, d_model), weights (B, h, T, S))``; batch first."""
        p = self.parts(query, key, value, mask)
        return p.output, p.weights
