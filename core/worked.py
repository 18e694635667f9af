"""Hand-sized worked examples: numbers small enough to check on paper, computed by the same core code
that runs the real models (no streamlit here).

    bahdanau()   three inputs through e -> alpha -> c     (Bahdanau et al. 2014, eqs. (5)-(6))
    attention()  three tokens, d_k = 2                    (Vaswani et al. 2017, eq. (1))
    megatron()   a 2x4 weight split over two "GPUs"       (Shoeybi et al. 2019, eqs. (3) and §3)

Each returns a frozen dataclass of plain Python floats (rounded only when shown). The inputs are
fixed and exact (small integers and halves), so a student with a calculator gets the same numbers.

    python -m core.worked            # prints all three as JSON
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

import torch

EXAMPLES = ("bahdanau", "attention", "megatron")


def _rows(t: torch.Tensor) -> list:
    return t.detach().to(torch.float64).tolist()


@dataclass(frozen=True)
class BahdanauExample:
    """One decoder step i over three inputs x_1..x_3; every vector has 2 numbers."""

    inputs: tuple[str, ...]
    s_prev: list[float]  # s_{i-1}, the decoder state before step i
    h: list[list[float]]  # h_1..h_3, the annotations (one row per input)
    W_a: list[list[float]]  # 2x2, applied to s_{i-1}
    U_a: list[list[float]]  # 2x2, applied to h_j
    v_a: list[float]  # 2 numbers, reads one score out
    hidden: list[list[float]]  # tanh(W_a s_{i-1} + U_a h_j), one row per input
    e: list[float]  # e_ij, eq. (6)
    alpha: list[float]  # alpha_ij = softmax_j(e_ij), eq. (6)
    c: list[float]  # c_i = sum_j alpha_ij h_j, eq. (5)


def bahdanau() -> BahdanauExample:
    """Three inputs through the alignment model of core.seq2seq.model.BahdanauAttention itself."""
    from core.seq2seq.model import BahdanauAttention

    s_prev = torch.tensor([[0.5, -0.5]], dtype=torch.float64)  # (B=1, Dq=2)
    h = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], dtype=torch.float64)  # (1, T=3, Dk=2)
    W_a = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    U_a = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    v_a = torch.tensor([1.0, 1.0], dtype=torch.float64)
    attn = BahdanauAttention(query_dim=2, key_dim=2, attn_dim=2).to(torch.float64)
    with torch.no_grad():
        # torch's Linear stores (out, in) and computes x @ weight.T; the paper writes W_a s, so the
        # weight is W_a as written. The paper has no biases: ours are set to 0 for this example.
        attn.W_a.weight.copy_(W_a)
        attn.W_a.bias.zero_()
        attn.U_a.weight.copy_(U_a)
        attn.U_a.bias.zero_()
        attn.v_a.weight.copy_(v_a.unsqueeze(0))
        mask = torch.ones(1, 3, dtype=torch.bool)
        context, weights, energies = attn(s_prev, h, mask, return_energies=True)
        hidden = torch.tanh(attn.W_a(s_prev).unsqueeze(1) + attn.U_a(h))  # (1, 3, 2)
    return BahdanauExample(
        inputs=("x₁", "x₂", "x₃"),
        s_prev=_rows(s_prev[0]),
        h=_rows(h[0]),
        W_a=_rows(W_a),
        U_a=_rows(U_a),
        v_a=_rows(v_a),
        hidden=_rows(hidden[0]),
        e=_rows(energies[0]),
        alpha=_rows(weights[0]),
        c=_rows(context[0]),
    )


@dataclass(frozen=True)
class AttentionExample:
    """Three tokens, d_k = 2: Q, K, V given; scores, weights and outputs computed."""

    tokens: tuple[str, ...]
    d_k: int
    Q: list[list[float]]
    K: list[list[float]]
    V: list[list[float]]
    dots: list[list[float]]  # q_i . k_j
    scaled: list[list[float]]  # q_i . k_j / sqrt(d_k)
    weights: list[list[float]]  # softmax over each row
    Z: list[list[float]]  # z_i = sum_j alpha_ij v_j


def attention() -> AttentionExample:
    """Eq. (1) on three tokens, by core.attention.scaled_dot_product_attention in float64."""
    from core.attention import scaled_dot_product_attention

    Q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)  # (T=3, d_k=2)
    K = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], dtype=torch.float64)  # (3, 2)
    V = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=torch.float64)  # (3, 2)
    Z, weights = scaled_dot_product_attention(Q, K, V)
    dots = Q @ K.T
    return AttentionExample(
        tokens=("the", "cat", "sat"),
        d_k=2,
        Q=_rows(Q),
        K=_rows(K),
        V=_rows(V),
        dots=_rows(dots),
        scaled=_rows(dots / math.sqrt(2)),
        weights=_rows(weights),
        Z=_rows(Z),
    )


@dataclass(frozen=True)
class MegatronExample:
    """Z = (X A) B with A (2x4) split by columns and B (4x2) split by rows over two ranks."""

    X: list[list[float]]  # 1x2 input
    A: list[list[float]]  # 2x4, split by columns: A_1 = A[:, :2], A_2 = A[:, 2:]
    B: list[list[float]]  # 4x2, split by rows:    B_1 = B[:2], B_2 = B[2:]
    A_parts: list[list[list[float]]]  # [A_1, A_2]
    B_parts: list[list[list[float]]]  # [B_1, B_2]
    Y_parts: list[list[list[float]]]  # [X A_1, X A_2]: each rank's slice of the hidden layer
    Z_parts: list[list[list[float]]]  # [Y_1 B_1, Y_2 B_2]: each rank's partial sum
    Z: list[list[float]]  # Z_1 + Z_2, what the all-reduce (g) returns on every rank
    Y_full: list[list[float]]  # X A on one device
    Z_full: list[list[float]]  # (X A) B on one device


def megatron() -> MegatronExample:
    """The split done by core.megatron.layers' ColumnParallelLinear and RowParallelLinear, rank by rank.

    One process plays both ranks, so the g all-reduce is skipped and each rank's partial sum is
    visible; the example adds them, as the all-reduce would. The activation is left out (identity)
    so that every number is a small integer; GeLU would act on each Y_i on its own.
    """
    from core.megatron import mappings
    from core.megatron.layers import ColumnParallelLinear, RowParallelLinear

    X = torch.tensor([[1.0, 2.0]], dtype=torch.float64)  # (1, 2)
    A = torch.tensor([[1.0, 1.0, 2.0, -1.0], [0.0, 1.0, 1.0, 1.0]], dtype=torch.float64)  # (2, 4)
    B = torch.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0], [-1.0, 2.0]], dtype=torch.float64)  # (4, 2)
    log_len = len(mappings.COLLECTIVE_LOG)
    y_parts, z_parts, a_parts, b_parts = [], [], [], []
    with torch.no_grad():
        for rank in range(2):
            # torch.nn.Linear layout: weight is (out, in), so A and B are passed transposed
            col = ColumnParallelLinear(A.T.contiguous(), torch.zeros(4, dtype=torch.float64), rank, 2)
            row = RowParallelLinear(B.T.contiguous(), torch.zeros(2, dtype=torch.float64), rank, 2)
            y_i = col(X)  # (1, 2) = X A_i
            row(y_i)
            z_i = row.last_partial  # (1, 2) = Y_i B_i
            a_parts.append(_rows(col.weight.T))
            b_parts.append(_rows(row.weight.T))
            y_parts.append(_rows(y_i))
            z_parts.append(_rows(z_i))
    del mappings.COLLECTIVE_LOG[log_len:]  # this example is not part of the demo's collective log
    Z = [[z_parts[0][0][k] + z_parts[1][0][k] for k in range(2)]]
    return MegatronExample(
        X=_rows(X),
        A=_rows(A),
        B=_rows(B),
        A_parts=a_parts,
        B_parts=b_parts,
        Y_parts=y_parts,
        Z_parts=z_parts,
        Z=Z,
        Y_full=_rows(X @ A),
        Z_full=_rows(X @ A @ B),
    )


def example(name: str):
    """One example by name (``bahdanau``, ``attention`` or ``megatron``)."""
    makers = {"bahdanau": bahdanau, "attention": attention, "megatron": megatron}
    if name not in makers:
        raise ValueError(f"unknown worked example {name!r}; known: {', '.join(EXAMPLES)}")
    return makers[name]()


if __name__ == "__main__":
    print(json.dumps({name: asdict(example(name)) for name in EXAMPLES}, ensure_ascii=False, indent=1))
