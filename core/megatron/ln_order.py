"""Layer-norm placement: BERT's original post-LN layer against Megatron-BERT's pre-LN layer.

Shoeybi et al. 2019 (arXiv 1909.08053), section 5.3 and Figure 7: "rearranging the order of the
layer normalization and the residual connections ... is critical to enable the scaling of the
BERT-style models beyond BERT-Large". Post-LN (Figure 7a, the original BERT):
    x = LN(x + Attn(x));  x = LN(x + MLP(x))
Pre-LN (Figure 7b, Megatron-BERT): the residual path stays an identity; the layer norm moves to
the input of each sub-layer, with one more at the end:
    x = x + Attn(LN(x));  x = x + MLP(LN(x));  ...;  LN(x)

train_compare() trains both orders, same seed, same data, same learning rate with no warm-up, on a
small masked-token task (the encoder must fill each masked position with the token it held), so a
student can watch the difference happen on a CPU in well under a minute.
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d: int, heads: int, pre_ln: bool):
        super().__init__()
        self.pre_ln = pre_ln
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x):  # (b, s, d)
        if self.pre_ln:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.ln2(x + self.mlp(x))


class Encoder(nn.Module):
    def __init__(self, vocab: int, seq: int, d: int, heads: int, layers: int, pre_ln: bool):
        super().__init__()
        self.tok = nn.Embedding(vocab + 1, d)  # +1: the [MASK] id
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, pre_ln) for _ in range(layers))
        self.final_ln = nn.LayerNorm(d) if pre_ln else nn.Identity()
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):  # (b, s)
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))  # (b, s, d)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.final_ln(x))  # (b, s, vocab)


def _batch(gen, batch: int, seq: int, vocab: int, mask_id: int):
    # Each sequence is a random window of a cyclic pattern, so masked tokens can be inferred
    # from their neighbours: the encoder has to use attention to fill the gaps.
    start = torch.randint(0, vocab, (batch, 1), generator=gen)
    step = torch.randint(1, 4, (batch, 1), generator=gen)
    target = (start + step * torch.arange(seq)) % vocab  # (b, s)
    masked = torch.rand(batch, seq, generator=gen) < 0.3  # (b, s)
    ids = target.masked_fill(masked, mask_id)
    return ids, target, masked


def train_compare(
    layers: int = 12,
    steps: int = 150,
    lr: float = 1e-3,
    d: int = 64,
    heads: int = 4,
    seq: int = 16,
    vocab: int = 24,
    batch: int = 32,
    seed: int = 0,
    progress=None,
) -> dict:
    """Train post-LN and pre-LN side by side; return both loss curves (masked-token cross entropy)."""
    if not (1 <= layers <= 48 and 1 <= steps <= 2000):
        raise ValueError("layers must be in 1..48 and steps in 1..2000")
    threads = torch.get_num_threads()
    # One thread: on a shared 2-core machine a second OpenMP thread mostly spins and waits.
    torch.set_num_threads(1)
    started = time.perf_counter()
    curves, final = {}, {}
    try:
        for order in ("post_ln", "pre_ln"):
            torch.manual_seed(seed)
            model = Encoder(vocab, seq, d, heads, layers, pre_ln=order == "pre_ln")
            opt = torch.optim.Adam(model.parameters(), lr=lr)
            gen = torch.Generator().manual_seed(seed + 1)  # same batches for both orders
            losses = []
            for step in range(steps):
                ids, target, masked = _batch(gen, batch, seq, vocab, vocab)
                logits = model(ids)  # (b, s, vocab)
                loss = F.cross_entropy(logits[masked], target[masked])
                opt.zero_grad()
                loss.backward()
                opt.step()
                value = float(loss.detach())
                losses.append(value if math.isfinite(value) else None)
                if progress:
                    progress((step + 1 + (steps if order == "pre_ln" else 0)) / (2 * steps))
            curves[order] = losses
            tail = [v for v in losses[-10:] if v is not None]
            final[order] = sum(tail) / len(tail) if tail else None
    finally:
        torch.set_num_threads(threads)
    return {
        "source": "Shoeybi et al. 2019, section 5.3 and Figure 7",
        "config": {
            "layers": layers,
            "steps": steps,
            "lr": lr,
            "d": d,
            "heads": heads,
            "seq": seq,
            "vocab": vocab,
            "batch": batch,
            "seed": seed,
        },
        "curves": curves,
        "final_loss": final,
        "chance_loss": math.log(vocab),
        "seconds": time.perf_counter() - started,
    }
