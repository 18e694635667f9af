"""Tensor-parallel layers in the style of Megatron-LM, and the unsharded layer they must match.

Shoeybi et al. 2019 (arXiv 1909.08053), section 3. A weight A of a linear layer Y = X A^T + b is
split either by its output features ("column parallel", eq. 3: [Y_1, Y_2] = [GeLU(X A_1), GeLU(X A_2)])
or by its input features ("row parallel", eq. 2: Y = X_1 A_1 + X_2 A_2, joined by an all-reduce).
A column-parallel layer followed by a row-parallel one needs one all-reduce forward (g) and one
backward (f): two in a transformer layer each way (attention + MLP), Fig. 4 of the paper.

Every parallel module is built from the master (unsharded) weights by slicing, the way Megatron-LM's
CPU initialisation does it, so the sharded layer can be checked number for number against the
unsharded one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from core.attention.kernel import scaled_dot_product_attention
from core.megatron.mappings import (
    copy_to_tensor_model_parallel_region,
    reduce_from_tensor_model_parallel_region,
)


@dataclass
class LayerConfig:
    hidden: int = 64
    heads: int = 8
    ffn: int = 256  # 4h, as in BERT and Megatron
    seq: int = 8
    batch: int = 2
    vocab: int = 96  # for the VocabParallelEmbedding check
    eps: float = 1e-5

    def check(self, world_size: int) -> None:
        for name, value in (("heads", self.heads), ("ffn", self.ffn), ("vocab", self.vocab)):
            if value % world_size:
                raise ValueError(f"{name}={value} is not divisible by {world_size} ranks")
        if self.hidden % self.heads:
            raise ValueError(f"hidden={self.hidden} is not divisible by heads={self.heads}")


def _split(n: int, rank: int, world_size: int) -> tuple[int, int]:
    per = n // world_size
    return rank * per, (rank + 1) * per


def _shard(name: str, full_shape, dim: int, ranges: list[tuple[int, int]], local_shape) -> dict:
    return {
        "name": name,
        "global_shape": list(full_shape),
        "local_shape": list(local_shape),
        "split_dim": dim,
        "ranges": [list(r) for r in ranges],
    }


class _ParallelLinear(nn.Module):
    """A linear layer Y = X A^T + b with A split across ranks along ``split_dim`` of the torch weight
    (0: output features, 1: input features). Each rank keeps its slice of A, the index ranges it
    holds, A's global shape, and a name and f/g site for the shard map and the collectives log.

    groups > 1 treats the split dimension as that many equal blocks, each split across ranks.
    b follows A's output features: split with them, otherwise kept whole on every rank.
    """

    split_dim: int
    default_name: str
    default_site: str

    def __init__(
        self,
        weight: torch.Tensor,
        bias: torch.Tensor,
        rank: int,
        world_size: int,
        *,
        groups: int = 1,
        name: str | None = None,
        site: str | None = None,
    ):
        super().__init__()
        self.full_shape = tuple(weight.shape)  # (out, in)
        block = weight.shape[self.split_dim] // groups
        self.ranges = []
        for g in range(groups):
            lo, hi = _split(block, rank, world_size)
            self.ranges.append((g * block + lo, g * block + hi))
        index = torch.cat([torch.arange(lo, hi) for lo, hi in self.ranges]).to(weight.device)
        self.weight = nn.Parameter(weight.detach().index_select(self.split_dim, index).clone())
        local_bias = bias.detach()[index] if self._bias_split else bias.detach()
        self.bias = nn.Parameter(local_bias.clone())
        self.name = name or self.default_name
        self.site = site or self.default_site

    @property
    def _bias_split(self) -> bool:
        return self.split_dim == 0

    def shards(self) -> list[dict]:
        bias_ranges = self.ranges if self._bias_split else [(0, self.full_shape[0])]
        return [
            _shard(f"{self.name}.weight", self.full_shape, self.split_dim, self.ranges, self.weight.shape),
            _shard(
                f"{self.name}.bias", self.full_shape[:1], 0 if self._bias_split else None, bias_ranges, self.bias.shape
            ),
        ]


class ColumnParallelLinear(_ParallelLinear):
    """Y_i = X A_i^T + b_i, with A split along its output features (rows of the torch weight).

    groups > 1: the fused query/key/value weight [W_Q; W_K; W_V] gives each rank its own heads of Q, K and V.
    """

    split_dim = 0
    default_name = "column"
    default_site = "f"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = copy_to_tensor_model_parallel_region(x, self.site)  # f: identity now, all-reduce in backward
        return F.linear(x, self.weight, self.bias)  # (..., out/t)


class RowParallelLinear(_ParallelLinear):
    """Y = sum_i X_i A_i^T + b, with A split along its input features; input already split.
    The bias is added once, after the reduction; every rank keeps a full copy."""

    split_dim = 1
    default_name = "row"
    default_site = "g"
    last_partial: torch.Tensor | None = None
    last_reduced: torch.Tensor | None = None

    def forward(self, x_i: torch.Tensor) -> torch.Tensor:
        partial = F.linear(x_i, self.weight)  # (..., out): this rank's X_i A_i^T
        self.last_partial = partial.detach()
        y = reduce_from_tensor_model_parallel_region(partial, self.site)  # g: sum over ranks
        self.last_reduced = y.detach()
        return y + self.bias


class VocabParallelEmbedding(nn.Module):
    """The embedding table E split along the vocabulary (Shoeybi et al. 2019, section 3)."""

    def __init__(
        self, weight: torch.Tensor, rank: int, world_size: int, name: str = "embedding", site: str = "embedding.g"
    ):
        super().__init__()
        vocab, hidden = weight.shape
        self.vocab_start, self.vocab_end = _split(vocab, rank, world_size)
        self.weight = nn.Parameter(weight.detach()[self.vocab_start : self.vocab_end].clone())  # (V/t, h)
        self.full_shape = (vocab, hidden)
        self.name, self.site = name, site
        self.last_partial: torch.Tensor | None = None

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        outside = (ids < self.vocab_start) | (ids >= self.vocab_end)  # (b, s): not this rank's rows
        local = (ids - self.vocab_start).masked_fill(outside, 0)
        out = F.embedding(local, self.weight)  # (b, s, h)
        out = out.masked_fill(outside.unsqueeze(-1), 0.0)
        self.last_partial = out.detach()
        # Exactly one rank holds each token's row; the sum over ranks is the lookup.
        return reduce_from_tensor_model_parallel_region(out, self.site)

    def shards(self) -> list[dict]:
        return [
            _shard(f"{self.name}.weight", self.full_shape, 0, [(self.vocab_start, self.vocab_end)], self.weight.shape)
        ]


def _attention(q, k, v, heads_local: int):
    """Split (b, s, nh*d) into heads, attend with the app's one kernel, join the heads again."""
    b, s, _ = q.shape
    d = q.shape[-1] // heads_local
    q = q.view(b, s, heads_local, d).transpose(1, 2)  # (b, nh, s, d)
    k = k.view(b, s, heads_local, d).transpose(1, 2)  # (b, nh, s, d)
    v = v.view(b, s, heads_local, d).transpose(1, 2)  # (b, nh, s, d)
    y, _ = scaled_dot_product_attention(q, k, v)  # (b, nh, s, d) softmax(Q K^T / sqrt(d)) V
    return y.transpose(1, 2).reshape(b, s, heads_local * d)  # (b, s, nh*d)


class ParallelSelfAttention(nn.Module):
    """Heads split across ranks: fused QKV column-parallel, output projection row-parallel (Fig. 3b)."""

    def __init__(self, ref: "SelfAttention", rank: int, world_size: int):
        super().__init__()
        self.heads_local = ref.heads // world_size
        self.query_key_value = ColumnParallelLinear(
            ref.query_key_value.weight,
            ref.query_key_value.bias,
            rank,
            world_size,
            groups=3,
            name="attention.query_key_value",
            site="attention.f",
        )
        self.dense = RowParallelLinear(
            ref.dense.weight, ref.dense.bias, rank, world_size, name="attention.dense", site="attention.g"
        )

    def forward(self, x):
        qkv = self.query_key_value(x)  # (b, s, 3h/t): this rank's heads only
        q, k, v = qkv.chunk(3, dim=-1)  # (b, s, h/t) each
        return self.dense(_attention(q, k, v, self.heads_local))  # (b, s, h) after g

    def shards(self):
        return self.query_key_value.shards() + self.dense.shards()


class ParallelMLP(nn.Module):
    """h -> 4h column-parallel, GeLU on each rank's slice, 4h -> h row-parallel (Fig. 3a, eq. 3)."""

    def __init__(self, ref: "MLP", rank: int, world_size: int):
        super().__init__()
        self.dense_h_to_4h = ColumnParallelLinear(
            ref.dense_h_to_4h.weight, ref.dense_h_to_4h.bias, rank, world_size, name="mlp.dense_h_to_4h", site="mlp.f"
        )
        self.dense_4h_to_h = RowParallelLinear(
            ref.dense_4h_to_h.weight, ref.dense_4h_to_h.bias, rank, world_size, name="mlp.dense_4h_to_h", site="mlp.g"
        )

    def forward(self, x):
        # GeLU is applied to each slice on its own rank: no sync needed, eq. (3).
        return self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(x)))  # (b, s, 4h/t) -> (b, s, h)

    def shards(self):
        return self.dense_h_to_4h.shards() + self.dense_4h_to_h.shards()


class ParallelTransformerLayer(nn.Module):
    """Pre-LN layer (Megatron-BERT's rearranged order, Fig. 7b); layer norms replicated on every rank."""

    def __init__(self, ref: "TransformerLayer", rank: int, world_size: int):
        super().__init__()
        self.input_layernorm = _copy_ln(ref.input_layernorm)
        self.attention = ParallelSelfAttention(ref.attention, rank, world_size)
        self.post_attention_layernorm = _copy_ln(ref.post_attention_layernorm)
        self.mlp = ParallelMLP(ref.mlp, rank, world_size)

    def forward(self, x):
        x = x + self.attention(self.input_layernorm(x))  # (b, s, h)
        return x + self.mlp(self.post_attention_layernorm(x))  # (b, s, h)

    def shards(self) -> list[dict]:
        reps = []
        for name, ln in (
            ("input_layernorm", self.input_layernorm),
            ("post_attention_layernorm", self.post_attention_layernorm),
        ):
            for p in ("weight", "bias"):
                shape = getattr(ln, p).shape
                reps.append(_shard(f"{name}.{p}", shape, None, [(0, shape[0])], shape))
        return self.attention.shards() + self.mlp.shards() + reps

    def local_slice(self, name: str, full: torch.Tensor) -> torch.Tensor:
        """The piece of the unsharded layer's tensor ``name`` (a parameter or its gradient) that this
        rank holds, cut the way the module that owns ``name`` cut its weight."""
        owner_name, _, param = name.rpartition(".")
        owner = self.get_submodule(owner_name)
        if isinstance(owner, ColumnParallelLinear):
            rows = torch.cat([torch.arange(lo, hi) for lo, hi in owner.ranges]).to(full.device)
            return full[rows]
        if isinstance(owner, RowParallelLinear) and param == "weight":
            ((lo, hi),) = owner.ranges
            return full[:, lo:hi]
        return full  # row-parallel bias and layer norms: replicated


def _copy_ln(ln: nn.LayerNorm) -> nn.LayerNorm:
    out = nn.LayerNorm(ln.normalized_shape, eps=ln.eps).to(ln.weight.device, ln.weight.dtype)
    out.load_state_dict(ln.state_dict())
    return out


# ---- the unsharded reference ---------------------------------------------------------------

# Megatron-LM's parameter names (ParallelTransformerLayer's too), so that a parameter of the
# parallel layer and the unsharded one it must match share a name in named_parameters().


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.query_key_value = nn.Linear(hidden, 3 * hidden)  # weight rows: [W_Q; W_K; W_V]
        self.dense = nn.Linear(hidden, hidden)  # W^O

    def forward(self, x):
        q, k, v = self.query_key_value(x).chunk(3, dim=-1)  # (b, s, h) each
        return self.dense(_attention(q, k, v, self.heads))


class MLP(nn.Module):
    def __init__(self, hidden: int, ffn: int):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(hidden, ffn)
        self.dense_4h_to_h = nn.Linear(ffn, hidden)

    def forward(self, x):
        return self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(x)))


class TransformerLayer(nn.Module):
    """The unsharded pre-LN layer (Megatron-BERT's order, Fig. 7b)."""

    def __init__(self, cfg: LayerConfig):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(cfg.hidden, eps=cfg.eps)
        self.attention = SelfAttention(cfg.hidden, cfg.heads)
        self.post_attention_layernorm = nn.LayerNorm(cfg.hidden, eps=cfg.eps)
        self.mlp = MLP(cfg.hidden, cfg.ffn)

    def forward(self, x):
        x = x + self.attention(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


def gradient_diffs(par: ParallelTransformerLayer, ref: TransformerLayer) -> dict[str, float]:
    """max |grad - the unsharded grad's slice| for every parameter of the parallel layer, by name."""
    full = dict(ref.named_parameters())
    return {
        f"{name}.grad": float((p.grad - par.local_slice(name, full[name].grad)).abs().max())
        for name, p in par.named_parameters()
    }


def build_reference(cfg: LayerConfig, seed: int, device="cpu", dtype=torch.float32):
    """The same seeded layer, input, upstream gradient and token ids on every rank."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    layer = TransformerLayer(cfg)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "layernorm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * noise)  # a layer-norm gain near 1, but not exactly 1
            else:
                p.copy_(noise * (0.1 if p.dim() == 2 else 0.5))
    layer = layer.to(device, dtype)
    x = torch.randn(cfg.batch, cfg.seq, cfg.hidden, generator=gen).to(device, dtype)  # (b, s, h)
    dy = torch.randn(cfg.batch, cfg.seq, cfg.hidden, generator=gen).to(device, dtype)  # dL/dY
    emb = (torch.randn(cfg.vocab, cfg.hidden, generator=gen) * 0.1).to(device, dtype)  # (V, h)
    ids = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq), generator=gen).to(device)  # (b, s)
    return layer, x, dy, emb, ids


def shard_layout(world_size: int, cfg: LayerConfig | None = None) -> dict[str, list[dict]]:
    """Which slice of each weight every rank holds, {rank: [shard dicts]}, as the demo reports it.

    Computed in one process (slicing needs no communication), for drawing the split without
    starting workers.
    """
    cfg = cfg or LayerConfig()
    cfg.check(world_size)
    ref = build_reference(cfg, seed=0)[0]
    return {str(rank): ParallelTransformerLayer(ref, rank, world_size).shards() for rank in range(world_size)}
