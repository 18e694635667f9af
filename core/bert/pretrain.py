"""Pre-train a BERT from scratch with BERT's own recipe (Devlin et al. 2018, §3.1 and Appendix A).

- Masked LM: 15 % of the non-special tokens are chosen; of those 80 % -> [MASK], 10 % -> a random
  token, 10 % unchanged; cross-entropy on the chosen positions only.
- NSP: sentence A is a run of consecutive sentences of one document; 50 % of the time B is what follows
  A in the same document (IsNext, label 0), 50 % a run from another document of the same language
  (NotNext, label 1). Pairs longer than the budget are trimmed: A from its front, B from its end, so the
  A|B boundary the NSP head judges is always kept.

Speed (2 CPU cores): the MLM head runs only at the chosen positions (model.bert, gather, model.cls)
instead of at every position over the whole vocabulary, most steps use 64-token sequences, and the
last steps 128 so that every position embedding is trained (as BERT did with 128 then 512).

Everything random comes from per-run generators (numpy.random.Generator for the pairs, torch.Generator
for masking and initialisation): no torch.manual_seed, no set_num_threads, so that two runs in one
process (two students in lesson 7) give exactly what each gives alone.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import torch

from .pretraining import IGNORE_INDEX

IS_NEXT, NOT_NEXT = 0, 1  # the order of the released checkpoints' seq_relationship head


@dataclass
class Recipe:
    layers: int = 4
    hidden: int = 256
    heads: int = 4
    intermediate: int = 1024
    max_position: int = 128
    vocab_size: int = 12000
    steps: int = 1000
    batch_size: int = 128
    seq_len: int = 64  # most steps
    long_seq_len: int = 128  # the last `long_frac` of the steps
    long_frac: float = 0.1
    peak_lr: float = 1e-3
    warmup_frac: float = 0.06
    weight_decay: float = 0.01
    betas: tuple = (0.9, 0.98)
    grad_clip: float = 1.0
    mask_prob: float = 0.15
    mask_frac: float = 0.8
    random_frac: float = 0.1
    short_seq_prob: float = 0.1  # BERT: 10 % of pairs get a random shorter target length
    seed: int = 0
    bf16: bool = True  # bf16 autocast for the matmuls (2.6x faster on AVX512-BF16 CPUs here)
    langs: tuple = ("zh", "en")

    def to_dict(self) -> dict:
        return asdict(self)

    def shape(self, vocab: int) -> dict:
        """The model's shape in count()'s names, for a tokenizer of ``vocab`` entries."""
        return {"vocab": vocab, **{k: getattr(self, k) for k in _SHAPE_FIELDS}, "type_vocab": 2}


_SHAPE_FIELDS = ("hidden", "layers", "heads", "intermediate", "max_position")
_NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


# ---------------------------------------------------------------- data


@dataclass
class EncodedDocs:
    """One language's documents as token-id arrays: docs[d][s] is sentence s of document d."""

    docs: list
    starts: np.ndarray = field(init=False)  # (doc, sentence) pairs that have a next sentence

    def __post_init__(self):
        self.docs = [d for d in self.docs if len(d) >= 2]
        pairs = [(i, s) for i, d in enumerate(self.docs) for s in range(len(d) - 1)]
        self.starts = np.array(pairs, dtype=np.int64).reshape(-1, 2)

    def tokens(self) -> int:
        return int(sum(len(s) for d in self.docs for s in d))


def encode_docs(tokenizer, docs: list[list[str]]) -> EncodedDocs:
    flat = [s for d in docs for s in d]
    ids = tokenizer(flat, add_special_tokens=False, verbose=False)["input_ids"] if flat else []
    out, k = [], 0
    for d in docs:
        out.append([np.asarray(x, dtype=np.int32) for x in ids[k : k + len(d)] if len(x)])
        k += len(d)
    return EncodedDocs(out)


def _take(doc, s, target):
    """Sentences s, s+1, ... of doc until `target` tokens; returns (ids, next sentence index)."""
    parts, n = [], 0
    while s < len(doc) and n < target:
        parts.append(doc[s])
        n += len(doc[s])
        s += 1
    return (np.concatenate(parts) if parts else np.zeros(0, np.int32)), s


def make_pair(enc: EncodedDocs, rng: np.random.Generator, budget: int, short_seq_prob: float = 0.1):
    """One NSP example: (ids_a, ids_b, label) with len(a) + len(b) <= budget."""
    target = budget if rng.random() >= short_seq_prob else int(rng.integers(4, budget + 1))
    d, s = enc.starts[rng.integers(len(enc.starts))]
    doc = enc.docs[d]
    a_target = int(rng.integers(max(1, target // 4), max(2, 3 * target // 4) + 1))
    # A: consecutive sentences, always leaving at least one after it for IsNext
    a, nxt = _take(doc[:-1], s, a_target)
    if rng.random() < 0.5:
        b, _ = _take(doc, nxt, max(1, target - len(a)))  # B is never empty: at least one sentence
        label = IS_NEXT
    else:
        other = d
        while other == d and len(enc.docs) > 1:
            other = int(rng.integers(len(enc.docs)))
        odoc = enc.docs[other]
        b, _ = _take(odoc, int(rng.integers(len(odoc))), max(1, target - len(a)))
        label = NOT_NEXT
    while len(a) + len(b) > budget:  # trim the longer: A from its front, B from its end
        if len(a) > len(b) or (len(a) == len(b) and len(b) == 1):
            a = a[1:]
        else:
            b = b[:-1]
    return a, b, label


def collate(pairs, cls_id: int, sep_id: int, pad_id: int):
    """[CLS] A [SEP] B [SEP], padded; returns input_ids, token_type_ids, attention_mask (B, T), labels (B,)."""
    T = max(len(a) + len(b) + 3 for a, b, _ in pairs)
    n = len(pairs)
    ids = np.full((n, T), pad_id, dtype=np.int64)
    types = np.zeros((n, T), dtype=np.int64)
    att = np.zeros((n, T), dtype=np.int64)
    for i, (a, b, _) in enumerate(pairs):
        la, lb = len(a), len(b)
        ids[i, 0] = cls_id
        ids[i, 1 : 1 + la] = a
        ids[i, 1 + la] = sep_id
        ids[i, 2 + la : 2 + la + lb] = b
        ids[i, 2 + la + lb] = sep_id
        types[i, 2 + la : 3 + la + lb] = 1
        att[i, : 3 + la + lb] = 1
    nsp = torch.tensor([p[2] for p in pairs], dtype=torch.long)
    return torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(att), nsp


class Masker:
    """Devlin et al. 2018, §3.1: choose `prob` of the non-special tokens; 80 % [MASK], 10 % random, 10 % kept."""

    def __init__(self, tokenizer, prob=0.15, mask_frac=0.8, random_frac=0.1):
        self.special = torch.tensor(sorted(set(int(i) for i in tokenizer.all_special_ids)), dtype=torch.long)
        special = set(self.special.tolist())
        self.pool = torch.tensor([i for i in range(len(tokenizer)) if i not in special], dtype=torch.long)
        self.mask_id = int(tokenizer.mask_token_id)
        self.prob, self.mask_frac, self.random_frac = prob, mask_frac, random_frac

    def __call__(self, ids: torch.Tensor, gen: torch.Generator):
        can = ~torch.isin(ids, self.special)  # (B, T)
        chosen = (torch.rand(ids.shape, generator=gen) < self.prob) & can
        u = torch.rand(ids.shape, generator=gen)
        to_mask = chosen & (u < self.mask_frac)
        to_random = chosen & (u >= self.mask_frac) & (u < self.mask_frac + self.random_frac)
        rnd = self.pool[torch.randint(len(self.pool), ids.shape, generator=gen)]
        masked = ids.clone()
        masked[to_mask] = self.mask_id
        masked[to_random] = rnd[to_random]
        labels = torch.full_like(ids, IGNORE_INDEX)
        labels[chosen] = ids[chosen]
        return masked, labels


# ---------------------------------------------------------------- model


def build_model(recipe: Recipe, tokenizer, gen: torch.Generator):
    """BertForPreTraining with no dropout, initialised N(0, 0.02) from `gen` (not the global RNG)."""
    from transformers import BertForPreTraining

    from .params import hf_config

    cfg = hf_config(
        **recipe.shape(len(tokenizer)), **_NO_DROPOUT, initializer_range=0.02, pad_token_id=tokenizer.pad_token_id
    )
    model = BertForPreTraining(cfg)
    init_weights(model, gen)  # overwrite the default init, which drew from the global RNG
    model.tie_weights()
    return model


@torch.no_grad()
def init_weights(model, gen: torch.Generator, std: float = 0.02):
    """BERT's initialisation (truncated-normal-like N(0, 0.02) weights, zero biases, unit LayerNorm)."""
    for name, p in model.named_parameters():
        if name.endswith("LayerNorm.weight"):
            p.fill_(1.0)
        elif name.endswith("bias") or name.endswith("LayerNorm.bias"):
            p.zero_()
        else:
            p.normal_(0.0, std, generator=gen)
    # Position embeddings start as Vaswani et al.'s sinusoids (2017, §3.5), scaled to the same size as the
    # N(0, 0.02) token embeddings: dot products between positions then depend on their offset from the
    # first step, which shortens the "unigram plateau" where [MASK] is predicted without its context.
    # They stay learnable, as in BERT.
    pe = model.bert.embeddings.position_embeddings.weight  # (P, H)
    P, H = pe.shape
    pos = torch.arange(P, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, H, 2, dtype=torch.float32) * (-math.log(10000.0) / H))
    pe[:, 0::2] = torch.sin(pos * div) * std * math.sqrt(2)
    pe[:, 1::2] = torch.cos(pos * div) * std * math.sqrt(2)


def losses(model, input_ids, token_type_ids, attention_mask, labels, nsp_labels):
    """MLM + NSP cross-entropy, the MLM head run only at the chosen positions."""
    seq, pooled = model.bert(
        input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask, return_dict=False
    )[:2]  # (B, T, H), (B, H)
    chosen = labels != IGNORE_INDEX  # (B, T)
    mlm_logits = model.cls.predictions(seq[chosen])  # (N, V)
    nsp_logits = model.cls.seq_relationship(pooled)  # (B, 2)
    mlm = torch.nn.functional.cross_entropy(mlm_logits.float(), labels[chosen])
    nsp = torch.nn.functional.cross_entropy(nsp_logits.float(), nsp_labels)
    return mlm, nsp, mlm_logits, nsp_logits


def lr_at(step: int, recipe: Recipe) -> float:
    """Linear warm-up to the peak, then linear decay to 0 (BERT's schedule)."""
    warm = max(1, int(recipe.warmup_frac * recipe.steps))
    if step < warm:
        return recipe.peak_lr * (step + 1) / warm
    return recipe.peak_lr * max(0.0, (recipe.steps - step) / max(1, recipe.steps - warm))


def make_optimizer(model, recipe: Recipe):
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if n.endswith("bias") or "LayerNorm" in n else decay).append(p)
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=recipe.peak_lr,
        betas=recipe.betas,
        eps=1e-6,
    )


def lr_at_progress(progress: float, recipe: Recipe) -> float:
    """The same warm-up and linear decay, on the fraction of the time budget used instead of steps."""
    if progress < recipe.warmup_frac:
        return recipe.peak_lr * max(progress, 1e-3) / recipe.warmup_frac
    return recipe.peak_lr * max(0.0, (1 - progress) / (1 - recipe.warmup_frac))


def batch_for(step, recipe, data: dict, rng, tokenizer, progress: float | None = None):
    if progress is None:
        long = step >= int(recipe.steps * (1 - recipe.long_frac))
    else:  # a 128-token step costs about twice a 64-token one: the last 10 % of steps ~ the last 18 % of time
        long = recipe.long_frac > 0 and progress >= 1 - 1.8 * recipe.long_frac
    budget = (recipe.long_seq_len if long else recipe.seq_len) - 3
    langs = [l for l in recipe.langs if l in data]
    pairs = [
        make_pair(data[langs[i % len(langs)]], rng, budget, recipe.short_seq_prob) for i in range(recipe.batch_size)
    ]
    return collate(pairs, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)


def train(
    recipe: Recipe,
    tokenizer,
    data: dict,
    on_step: Callable | None = None,
    cancel: threading.Event | None = None,
    model=None,
    log_every: int = 0,
    log=print,
    time_budget_s: float | None = None,
):
    """Train; `on_step(step, mlm_loss, nsp_loss, model)` after every step. Returns (model, history).
    With `time_budget_s`, the schedule runs on the clock (fraction of the budget used) and training stops
    when the budget is spent, whatever else shares the CPU; `recipe.steps` is then only an upper bound."""
    gen = torch.Generator().manual_seed(recipe.seed)
    rng = np.random.default_rng(recipe.seed)
    if model is None:
        model = build_model(recipe, tokenizer, gen)
    model.train()
    opt = make_optimizer(model, recipe)
    masker = Masker(tokenizer, recipe.mask_prob, recipe.mask_frac, recipe.random_frac)
    hist = {"mlm_loss": [], "nsp_loss": [], "cancelled": False}
    t0 = time.perf_counter()
    step = 0
    while step < recipe.steps:
        progress = None
        if time_budget_s:  # the schedule follows the clock: warm-up, decay and the 128-token phase by time
            progress = (time.perf_counter() - t0) / time_budget_s
            if progress >= 1.0:
                break
        if cancel is not None and cancel.is_set():
            hist["cancelled"] = True
            break
        ids, types, att, nsp = batch_for(step, recipe, data, rng, tokenizer, progress)
        masked, labels = masker(ids, gen)
        lr = lr_at(step, recipe) if progress is None else lr_at_progress(progress, recipe)
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=recipe.bf16):
            mlm, nspl, _, _ = losses(model, masked, types, att, labels, nsp)
        loss = mlm + nspl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        opt.step()
        mlm, nspl = float(mlm.detach()), float(nspl.detach())
        hist["mlm_loss"].append(mlm)
        hist["nsp_loss"].append(nspl)
        if on_step is not None:
            on_step(step, mlm, nspl, model)
        if log_every and (step + 1) % log_every == 0:
            k = log_every
            log(
                f"step {step + 1}/{recipe.steps} mlm {sum(hist['mlm_loss'][-k:]) / k:.3f} "
                f"nsp {sum(hist['nsp_loss'][-k:]) / k:.3f} lr {lr:.2e} "
                f"{(time.perf_counter() - t0) / (step + 1):.3f} s/step",
                flush=True,
            )
        step += 1
    hist["seconds"] = time.perf_counter() - t0
    hist["steps"] = len(hist["mlm_loss"])
    hist["recipe"] = recipe.to_dict()
    model.eval()
    return model, hist


# ---------------------------------------------------------------- held-out metrics


def heldout_batches(tokenizer, enc: EncodedDocs, n_pairs: int, seq_len: int, seed: int, batch_size: int = 64):
    """A fixed set of held-out pairs and maskings (same seed -> same tokens chosen)."""
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    masker = Masker(tokenizer)
    pairs = [make_pair(enc, rng, seq_len - 3, 0.0) for _ in range(n_pairs)]
    out = []
    for i in range(0, n_pairs, batch_size):
        ids, types, att, nsp = collate(
            pairs[i : i + batch_size], tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
        )
        masked, labels = masker(ids, gen)
        out.append((masked, types, att, labels, nsp))
    return out


@torch.no_grad()
def evaluate(model, batches) -> dict:
    """MLM top-1 / top-5 over every chosen position, NSP accuracy, mean losses."""
    model.eval()
    n = top1 = top5 = nsp_ok = n_pairs = 0
    mlm_sum = nsp_sum = 0.0
    dev = next(model.parameters()).device
    for batch in batches:
        masked, types, att, labels, nsp = (t.to(dev) for t in batch)
        mlm, nspl, logits, nsp_logits = losses(model, masked, types, att, labels, nsp)
        gold = labels[labels != IGNORE_INDEX]
        top = logits.topk(5, dim=-1).indices  # (N, 5)
        top1 += int((top[:, 0] == gold).sum())
        top5 += int((top == gold[:, None]).any(-1).sum())
        n += len(gold)
        nsp_ok += int((nsp_logits.argmax(-1) == nsp).sum())
        n_pairs += len(nsp)
        mlm_sum += float(mlm) * len(gold)
        nsp_sum += float(nspl) * len(nsp)
    return {
        "mlm_top1": top1 / max(1, n),
        "mlm_top5": top5 / max(1, n),
        "nsp_accuracy": nsp_ok / max(1, n_pairs),
        "mlm_loss": mlm_sum / max(1, n),
        "nsp_loss": nsp_sum / max(1, n_pairs),
        "masked_tokens": n,
        "pairs": n_pairs,
    }
