"""RNN encoder-decoder with and without Bahdanau attention.

Two models, one encoder family:

* ``attention="none"``: the encoder-decoder of Cho et al. 2014 / Sutskever et al. 2014 as the
  lecture describes it. A GRU reads the input and its last state is the one fixed-length vector
  c; the decoder sees nothing but c (Bahdanau et al. 2014, eqs. (1)-(3)).
* ``attention="bahdanau"``: RNNsearch (Bahdanau, Cho & Bengio 2014, arXiv 1409.0473). A
  bidirectional GRU writes one annotation h_j = [→h_j ; ←h_j] per input (§3.2) and every
  decoder step builds its own context c_i from all of them (§3.1, eqs. (4)-(6); the alignment
  model a(·) of Appendix A.1.2).

Notation: B batch, T source length, U target steps, E embedding size, H encoder size per
direction, D annotation size (H or 2H), S decoder state size, A alignment (attention) size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .tasks import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Seq2SeqConfig:
    task: str
    attention: str = "bahdanau"  # "none" | "bahdanau"
    bidirectional: bool | None = None  # default: True with attention (RNNsearch), False without
    src_vocab: int = 0
    tgt_vocab: int = 0
    max_src_len: int = 40
    max_tgt_len: int = 40
    emb_dim: int = 32
    enc_hidden: int = 64  # per direction; a unidirectional encoder gets 2x so c is as wide as h_j
    dec_hidden: int = 128
    attn_dim: int = 64

    def __post_init__(self):
        if self.attention not in ("none", "bahdanau"):
            raise ValueError(f"attention must be 'none' or 'bahdanau', not {self.attention!r}")
        if self.bidirectional is None:
            self.bidirectional = self.attention == "bahdanau"

    @property
    def annotation_dim(self) -> int:
        return 2 * self.enc_hidden

    def to_dict(self) -> dict:
        return asdict(self)


class BahdanauAttention(nn.Module):
    """Additive attention with the paper's names (Bahdanau et al. 2014, Appendix A.1.2).

    e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j)      alignment model a(s_{i-1}, h_j), eq. (6)
    α_ij = exp(e_ij) / Σ_k exp(e_ik)             over the real (unmasked) inputs, eq. (6)
    c_i  = Σ_j α_ij h_j                          the context vector, eq. (5)
    """

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int):
        super().__init__()
        # nn.Linear's biases on W_a and U_a add a learnt offset inside tanh (the paper leaves
        # biases out of its equations); v_a gets none: a bias there would shift every e_ij of a
        # step by the same amount, which the softmax cancels
        self.W_a = nn.Linear(query_dim, attn_dim)
        self.U_a = nn.Linear(key_dim, attn_dim)
        self.v_a = nn.Linear(attn_dim, 1, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """U_a h_j does not depend on i, so the decoder computes it once per input (App. A.1.2)."""
        return self.U_a(keys)  # (B, T, A)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
        return_energies: bool = False,
    ):
        """query (B, Dq) = s_{i-1}; keys (B, T, Dk) = h_1..h_T; mask (B, T) bool, True = real input.

        Returns (context (B, Dk), weights (B, T)), and the energies e_ij (B, T) when asked.
        """
        if projected_keys is None:
            projected_keys = self.project_keys(keys)  # (B, T, A)
        hidden = torch.tanh(self.W_a(query).unsqueeze(1) + projected_keys)  # (B, T, A)
        energies = self.v_a(hidden).squeeze(-1)  # (B, T)  e_ij, eq. (6)
        # padding is not part of the input: it gets weight exactly 0
        weights = torch.softmax(energies.masked_fill(~mask, float("-inf")), dim=-1)  # (B, T)  α_ij
        context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)  # (B, Dk)  c_i, eq. (5)
        if return_energies:
            return context, weights, energies
        return context, weights


@dataclass
class EncoderOutput:
    annotations: torch.Tensor  # (B, T, D): h_j = [→h_j ; ←h_j] (bi) or h_j (uni)
    c: torch.Tensor  # (B, D): the fixed-length vector (uni: h_T; bi: [→h_T ; ←h_1])
    init_from: torch.Tensor  # (B, D or H): what s_0 is computed from
    mask: torch.Tensor  # (B, T) bool


class Encoder(nn.Module):
    """A GRU over the source: h_t = f(x_t, h_{t-1}) (eq. (1)), in one or both directions."""

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.bidirectional = bool(cfg.bidirectional)
        hidden = cfg.enc_hidden if self.bidirectional else 2 * cfg.enc_hidden
        self.embed = nn.Embedding(cfg.src_vocab, cfg.emb_dim, padding_idx=PAD_ID)
        self.rnn = nn.GRU(cfg.emb_dim, hidden, batch_first=True, bidirectional=self.bidirectional)

    def forward(self, src: torch.Tensor, src_len: torch.Tensor) -> EncoderOutput:
        T = src.size(1)
        x = self.embed(src)  # (B, T, E)
        # packing lets the backward GRU start at each input's real last character, not at padding
        packed = pack_padded_sequence(x, src_len.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.rnn(packed)  # h_n (dirs, B, H)
        annotations, _ = pad_packed_sequence(out, batch_first=True, total_length=T)  # (B, T, D)
        mask = torch.arange(T, device=src.device)[None, :] < src_len[:, None]  # (B, T)
        if self.bidirectional:
            c = torch.cat([h_n[0], h_n[1]], dim=-1)  # (B, 2H)  [→h_T ; ←h_1]
            init_from = h_n[1]  # (B, H)   ←h_1, App. A.2.2
        else:
            c = h_n[0]  # (B, D)   c = h_T
            init_from = c
        return EncoderOutput(annotations, c, init_from, mask)


class PlainDecoder(nn.Module):
    """The decoder that sees only c: s_i = f(s_{i-1}, y_{i-1}, c), p(y_i) = g(y_{i-1}, s_i, c)
    (eqs. (2)-(3), as in Cho et al. 2014 where c enters every step)."""

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        D = cfg.annotation_dim
        self.embed = nn.Embedding(cfg.tgt_vocab, cfg.emb_dim, padding_idx=PAD_ID)
        self.W_s = nn.Linear(D, cfg.dec_hidden)
        self.rnn = nn.GRU(cfg.emb_dim + D, cfg.dec_hidden, batch_first=True)
        self.out = nn.Linear(cfg.dec_hidden + D + cfg.emb_dim, cfg.tgt_vocab)

    def forward(self, enc: EncoderOutput, tgt_in: torch.Tensor):
        """Teacher forcing: all steps at once, since c does not change. Returns logits (B, U, V)."""
        y = self.embed(tgt_in)  # (B, U, E)
        c = enc.c.unsqueeze(1).expand(-1, y.size(1), -1)  # (B, U, D)
        s0 = torch.tanh(self.W_s(enc.c)).unsqueeze(0)  # (1, B, S)
        s, _ = self.rnn(torch.cat([y, c], dim=-1), s0)  # (B, U, S)
        return self.out(torch.cat([s, c, y], dim=-1)), None  # (B, U, V)

    def init_state(self, enc: EncoderOutput) -> torch.Tensor:
        return torch.tanh(self.W_s(enc.c))  # (B, S)

    def step(self, enc: EncoderOutput, y_prev: torch.Tensor, s_prev: torch.Tensor, cache=None):
        y = self.embed(y_prev)  # (B, E)
        _, s = self.rnn(torch.cat([y, enc.c], -1).unsqueeze(1), s_prev.unsqueeze(0))
        s = s.squeeze(0)  # (B, S)
        logits = self.out(torch.cat([s, enc.c, y], dim=-1))  # (B, V)
        return logits, s, {"context": enc.c}


class AttentionDecoder(nn.Module):
    """RNNsearch's decoder (§3.1): for each step i, c_i from the alignment model, then
    s_i = f(s_{i-1}, y_{i-1}, c_i) (eq. (4)) and p(y_i | y_<i, x) = g(y_{i-1}, s_i, c_i) (eq. (4))."""

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        D = cfg.annotation_dim
        init_dim = cfg.enc_hidden if cfg.bidirectional else D
        self.embed = nn.Embedding(cfg.tgt_vocab, cfg.emb_dim, padding_idx=PAD_ID)
        self.W_s = nn.Linear(init_dim, cfg.dec_hidden)  # s_0 = tanh(W_s ←h_1), App. A.2.2
        self.attention = BahdanauAttention(cfg.dec_hidden, D, cfg.attn_dim)
        self.cell = nn.GRUCell(cfg.emb_dim + D, cfg.dec_hidden)
        # g is one linear layer over [s_i ; c_i ; E y_{i-1}] (the paper adds a maxout layer)
        self.out = nn.Linear(cfg.dec_hidden + D + cfg.emb_dim, cfg.tgt_vocab)

    def init_state(self, enc: EncoderOutput) -> torch.Tensor:
        return torch.tanh(self.W_s(enc.init_from))  # (B, S)

    def _advance(self, enc: EncoderOutput, y: torch.Tensor, s_prev: torch.Tensor, keys: torch.Tensor):
        """One step from the embedded previous output y (B, E): α_i and c_i, then s_i."""
        context, weights, energies = self.attention(
            s_prev, enc.annotations, enc.mask, projected_keys=keys, return_energies=True
        )  # (B, D), (B, T), (B, T)
        s = self.cell(torch.cat([y, context], dim=-1), s_prev)  # (B, S)  s_i = f(s_{i-1}, y_{i-1}, c_i)
        return s, context, weights, energies

    def step(self, enc: EncoderOutput, y_prev: torch.Tensor, s_prev: torch.Tensor, cache=None):
        keys = cache if cache is not None else self.attention.project_keys(enc.annotations)
        y = self.embed(y_prev)  # (B, E)
        s, context, weights, energies = self._advance(enc, y, s_prev, keys)
        logits = self.out(torch.cat([s, context, y], dim=-1))  # (B, V)  g(y_{i-1}, s_i, c_i)
        return logits, s, {"context": context, "weights": weights, "energies": energies}

    def forward(self, enc: EncoderOutput, tgt_in: torch.Tensor):
        """Teacher forcing. Returns logits (B, U, V) and the weights α (B, U, T)."""
        keys = self.attention.project_keys(enc.annotations)  # (B, T, A)
        ys = self.embed(tgt_in)  # (B, U, E)
        s = self.init_state(enc)  # (B, S)
        states, contexts, alphas = [], [], []
        for i in range(tgt_in.size(1)):
            s, context, weights, _ = self._advance(enc, ys[:, i], s, keys)
            states.append(s)
            contexts.append(context)
            alphas.append(weights)
        # the output layer does not feed back, so it runs once over all steps
        feats = torch.cat([torch.stack(states, 1), torch.stack(contexts, 1), ys], dim=-1)  # (B, U, S+D+E)
        return self.out(feats), torch.stack(alphas, 1)  # (B, U, V), (B, U, T)


class Seq2Seq(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = AttentionDecoder(cfg) if cfg.attention == "bahdanau" else PlainDecoder(cfg)

    def forward(self, src, src_len, tgt_in):
        """Teacher-forced logits (B, U, V) and attention weights (B, U, T) or None."""
        return self.decoder(self.encoder(src, src_len), tgt_in)

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, src_len: torch.Tensor, max_len: int | None = None, trace: bool = False):
        """Greedy decoding of a batch. Returns ids (B, U) (after </s>: padding) and, with
        ``trace``, per-step tensors: states s_i, contexts c_i, weights α_i, energies e_i, probs."""
        max_len = max_len or self.cfg.max_tgt_len + 1
        enc = self.encoder(src, src_len)
        cache = (
            self.decoder.attention.project_keys(enc.annotations) if isinstance(self.decoder, AttentionDecoder) else None
        )
        s = self.decoder.init_state(enc)  # (B, S)
        y = torch.full((src.size(0),), BOS_ID, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        ids, steps = [], []
        for _ in range(max_len):
            logits, s_new, extra = self.decoder.step(enc, y, s, cache)
            y = logits.argmax(-1)  # (B,)
            y = y.masked_fill(done, PAD_ID)
            ids.append(y)
            if trace:
                steps.append({"s_prev": s, "s": s_new, "probs": torch.softmax(logits, -1), **extra})
            s = s_new
            done = done | (y == EOS_ID)
            if bool(done.all()):
                break
        out = torch.stack(ids, 1)  # (B, U)
        if trace:
            return out, enc, steps
        return out


def init_parameters(model: nn.Module, generator: torch.Generator) -> nn.Module:
    """Draw every parameter again from `generator`, with PyTorch's own default initialisations, in
    the order the modules were built. Seeded this way a run never reads torch's global generator,
    which other sessions' training in the same server process also draws from; and a generator
    seeded with s gives the same numbers as torch.manual_seed(s) before building the model."""
    import math

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):
                nn.init.kaiming_uniform_(module.weight, a=math.sqrt(5), generator=generator)
                if module.bias is not None:
                    bound = 1 / math.sqrt(module.in_features) if module.in_features > 0 else 0
                    nn.init.uniform_(module.bias, -bound, bound, generator=generator)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, generator=generator)
                if module.padding_idx is not None:
                    module.weight[module.padding_idx].fill_(0)
            elif isinstance(module, (nn.GRU, nn.GRUCell)):
                stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
                for weight in module.parameters():
                    nn.init.uniform_(weight, -stdv, stdv, generator=generator)
            elif any(True for _ in module.parameters(recurse=False)):
                raise TypeError(f"init_parameters does not know {type(module).__name__}")
    return model


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def masked_cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean token cross-entropy over non-padding targets. logits (B, U, V), target (B, U)."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=PAD_ID)
