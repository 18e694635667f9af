"""Lesson 7: BERT's two pre-training tasks (Devlin et al. 2018, §3.1 and Appendix A.1).

Task #1, masked LM: "we mask 15% of all WordPiece tokens in each sequence at random ... If the i-th
token is chosen, we replace it with (1) the [MASK] token 80% of the time (2) a random token 10% of
the time (3) the unchanged i-th token 10% of the time", and predict the original with cross-entropy.
Task #2, next sentence prediction: "50% of the time B is the actual next sentence that follows A
(labeled as IsNext), and 50% of the time it is a random sentence from the corpus (NotNext)".
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from .inputs import encode_pair
from .loader import BertBundle

IGNORE_INDEX = -100  # torch.nn.CrossEntropyLoss's default ignore_index: no loss where not chosen


def _special_ids(tokenizer) -> set[int]:
    return set(int(i) for i in tokenizer.all_special_ids)


def mask_tokens(
    input_ids, tokenizer, seed: int, prob: float = 0.15, mask_frac: float = 0.8, random_frac: float = 0.1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Devlin et al. 2018, §3.1: choose `prob` of the non-special tokens; of those, 80 % -> [MASK],
    10 % -> a random token, 10 % unchanged. Returns (masked_input_ids, labels), labels = the original
    id where chosen and -100 elsewhere. Special tokens ([CLS], [SEP], [PAD], ...) are never chosen.
    Random replacements are drawn uniformly from the non-special vocabulary."""
    if not 0.0 <= prob <= 1.0 or mask_frac < 0 or random_frac < 0 or mask_frac + random_frac > 1:
        raise ValueError("probabilities must lie in [0, 1] and mask_frac + random_frac <= 1")
    ids = torch.as_tensor(input_ids, dtype=torch.long)  # (B, T) or (T,)
    gen = torch.Generator().manual_seed(int(seed))
    special = torch.tensor(sorted(_special_ids(tokenizer)), dtype=torch.long)
    can_choose = ~torch.isin(ids, special)  # (B, T)
    chosen = (torch.rand(ids.shape, generator=gen) < prob) & can_choose
    u = torch.rand(ids.shape, generator=gen)  # one draw splits chosen into 80/10/10
    to_mask = chosen & (u < mask_frac)
    to_random = chosen & (u >= mask_frac) & (u < mask_frac + random_frac)
    special_set = set(special.tolist())
    pool = torch.tensor([i for i in range(len(tokenizer)) if i not in special_set], dtype=torch.long)
    random_ids = pool[torch.randint(len(pool), ids.shape, generator=gen)]
    masked = ids.clone()
    masked[to_mask] = int(tokenizer.mask_token_id)
    masked[to_random] = random_ids[to_random]
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[chosen] = ids[chosen]
    return masked, labels


@dataclass
class MaskResult:
    tokens: list[str]  # the input as the model sees it after masking
    original: list[str]
    actions: list[str]  # "special", "not chosen", "mask", "random", "keep"
    labels: list[int]  # -100 where not chosen
    counts: dict[str, int]
    truncated: bool

    def table(self) -> list[dict]:
        return [
            {"position": i, "original": o, "input": t, "action": a, "label": lab}
            for i, (o, t, a, lab) in enumerate(zip(self.original, self.tokens, self.actions, self.labels))
        ]


def simulate_masking(
    bundle_or_tokenizer, text: str, seed: int, prob: float = 0.15, max_length: int = 128
) -> MaskResult:
    """Run mask_tokens on one sentence and say, token by token, what happened."""
    tok = getattr(bundle_or_tokenizer, "tokenizer", bundle_or_tokenizer)
    full = tok(text, truncation=False, verbose=False)["input_ids"]
    ids = tok(text, truncation=True, max_length=max_length, verbose=False)["input_ids"]
    masked, labels = mask_tokens(torch.tensor([ids]), tok, seed=seed, prob=prob)
    masked, labels = masked[0].tolist(), labels[0].tolist()
    special = _special_ids(tok)
    actions = []
    for orig, new, lab in zip(ids, masked, labels):
        if orig in special:
            actions.append("special")
        elif lab == IGNORE_INDEX:
            actions.append("not chosen")
        elif new == tok.mask_token_id:
            actions.append("mask")
        elif new != orig:
            actions.append("random")
        else:
            actions.append("keep")
    counts = {a: actions.count(a) for a in ("special", "not chosen", "mask", "random", "keep")}
    return MaskResult(
        tokens=tok.convert_ids_to_tokens(masked),
        original=tok.convert_ids_to_tokens(ids),
        actions=actions,
        labels=labels,
        counts=counts,
        truncated=len(full) > max_length,
    )


def _autocast(bundle):
    """bf16 autocast on CUDA (the heads' softmax is taken in float32 below); nothing on the CPU."""
    return torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=bundle.device.type == "cuda")


class HeadMissing(Exception):
    """The loaded checkpoint has no such head; `head` is "mlm" or "nsp"."""

    def __init__(self, head: str, model_name: str):
        super().__init__(f"{model_name} has no {head.upper()} head")
        self.head = head


@dataclass
class FillMask:
    tokens: list[str]
    masks: list[dict]  # per [MASK]: position and top-k [{"token", "id", "probability"}]
    truncated: bool


@torch.no_grad()
def fill_mask(bundle: BertBundle, text: str, top_k: int = 5, max_length: int = 128) -> FillMask:
    """Top-k predictions at each [MASK] of `text` from the model's own MLM head (softmax over the vocabulary).
    `truncated` is True when `text` was cut to `max_length` tokens ([MASK]s past the cut get no row)."""
    if "mlm" not in bundle.heads:
        raise HeadMissing("mlm", bundle.name)
    enc = encode_pair(bundle, text, None, max_length)
    ids = torch.tensor([enc.input_ids], device=bundle.device)  # (1, T)
    with _autocast(bundle):
        out = bundle.model(
            input_ids=ids,
            token_type_ids=torch.tensor([enc.token_type_ids], device=bundle.device),
            attention_mask=torch.tensor([enc.attention_mask], device=bundle.device),
        )
    logits = out.logits if hasattr(out, "logits") else out.prediction_logits  # (1, T, V)
    probs = logits[0].float().softmax(-1)  # (T, V)
    mask_id = bundle.tokenizer.mask_token_id
    masks = []
    for pos, tid in enumerate(enc.input_ids):
        if tid != mask_id:
            continue
        p, idx = probs[pos].topk(top_k)
        masks.append(
            {
                "position": pos,
                "top": [
                    {"token": bundle.tokenizer.convert_ids_to_tokens(int(i)), "id": int(i), "probability": float(q)}
                    for q, i in zip(p.tolist(), idx.tolist())
                ],
            }
        )
    return FillMask(tokens=enc.tokens, masks=masks, truncated=enc.truncated)


@dataclass
class NextSentence:
    is_next: float  # P(IsNext | A, B) from the NSP head's softmax
    not_next: float
    tokens: list[str]
    truncated: bool


@torch.no_grad()
def next_sentence(bundle: BertBundle, text_a: str, text_b: str, max_length: int = 128) -> NextSentence:
    """The NSP head's IsNext / NotNext probabilities (index 0 = IsNext, as in the released checkpoints).
    `truncated` is True when the pair was cut to `max_length` tokens (the longer sentence loses its end)."""
    if "nsp" not in bundle.heads:
        raise HeadMissing("nsp", bundle.name)
    enc = encode_pair(bundle, text_a, text_b, max_length)
    dev = bundle.device
    with _autocast(bundle):
        out = bundle.model(
            input_ids=torch.tensor([enc.input_ids], device=dev),
            token_type_ids=torch.tensor([enc.token_type_ids], device=dev),
            attention_mask=torch.tensor([enc.attention_mask], device=dev),
        )
    logits = out.seq_relationship_logits if hasattr(out, "seq_relationship_logits") else out.logits  # (1, 2)
    p = logits[0].float().softmax(-1).tolist()
    return NextSentence(is_next=p[0], not_next=p[1], tokens=enc.tokens, truncated=enc.truncated)


def nsp_pairs(sentences: list[str], seed: int) -> list[dict]:
    """Build NSP training pairs from consecutive sentences: 50 % the true next one (IsNext), 50 % a
    random other sentence (NotNext). Devlin et al. 2018, §3.1 Task #2."""
    rng = random.Random(seed)
    pairs = []
    for i in range(len(sentences) - 1):
        if rng.random() < 0.5 or len(sentences) < 3:
            pairs.append({"a": sentences[i], "b": sentences[i + 1], "label": "IsNext"})
        else:
            others = [j for j in range(len(sentences)) if j not in (i, i + 1)]
            pairs.append({"a": sentences[i], "b": sentences[rng.choice(others)], "label": "NotNext"})
    return pairs


def masking_rates(
    bundle_or_tokenizer, text: str, runs: int = 500, seed: int = 0, prob: float = 0.15, max_length: int = 128
) -> dict:
    """Run the masking `runs` times on the same sentence (one batch, one seed) and report the observed
    rates: chosen / non-special tokens, and [MASK] / random / unchanged among the chosen."""
    tok = getattr(bundle_or_tokenizer, "tokenizer", bundle_or_tokenizer)
    ids = torch.tensor([tok(text, truncation=True, max_length=max_length, verbose=False)["input_ids"]] * runs)
    masked, labels = mask_tokens(ids, tok, seed=seed, prob=prob)
    chosen = labels != IGNORE_INDEX
    eligible = int((~torch.isin(ids, torch.tensor(sorted(_special_ids(tok))))).sum())
    k = int(chosen.sum())
    to_mask = int((masked[chosen] == tok.mask_token_id).sum())
    kept = int((masked[chosen] == ids[chosen]).sum())
    return {
        "runs": runs,
        "eligible": eligible,
        "chosen": k,
        "chosen_rate": k / eligible if eligible else 0.0,
        "mask_rate": to_mask / k if k else 0.0,
        "random_rate": (k - to_mask - kept) / k if k else 0.0,
        "keep_rate": kept / k if k else 0.0,
    }
