"""Lesson 6: what goes into BERT (Devlin et al. 2018, arXiv 1810.04805, §3 "Input/Output Representations").

- WordPiece pieces with ids (a word the vocabulary lacks is split into a head and ## pieces);
- [CLS] first, [SEP] after each sentence, segment (token type) ids 0/1, position ids 0..T-1;
- attention mask and [PAD] for a batch of sentences of different lengths;
- the input representation: token + segment + position embedding, then LayerNorm (Figure 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .loader import BertBundle

MAX_POSITIONS = 512  # BERT's learned position table (max_position_embeddings); the model's own value wins


def _tokenizer(obj):
    return obj.tokenizer if isinstance(obj, BertBundle) else obj


def max_positions(bundle: BertBundle) -> int:
    return int(getattr(bundle.config, "max_position_embeddings", MAX_POSITIONS))


def is_cjk(ch: str) -> bool:
    """The CJK blocks BERT's basic tokenizer surrounds with spaces (one token per character)."""
    cp = ord(ch)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


@dataclass
class TokenView:
    """WordPiece pieces of one text, without special tokens."""

    text: str
    tokens: list[str]
    ids: list[int]
    word_index: list[int]  # which whitespace/punctuation word each piece came from
    words: list[str]  # the original characters of that word
    continuation: list[bool]  # a "##" piece: glued to the piece before it
    unknown: list[bool]  # [UNK]: not even the characters are in the vocabulary
    cjk: list[bool]  # a CJK character, split off on its own
    n_total: int  # pieces before the cap
    truncated: bool

    def table(self) -> list[dict]:
        return [
            {
                "position": i,
                "token": tok,
                "id": tid,
                "word": self.words[i],
                "piece": "##" if cont else ("[UNK]" if unk else "start"),
                "cjk": c,
            }
            for i, (tok, tid, cont, unk, c) in enumerate(
                zip(self.tokens, self.ids, self.continuation, self.unknown, self.cjk)
            )
        ]

    @property
    def split_words(self) -> list[tuple[str, list[str]]]:
        """Words that became more than one piece, with their pieces (why: not in the vocabulary)."""
        out: dict[int, list[str]] = {}
        for w, tok in zip(self.word_index, self.tokens):
            out.setdefault(w, []).append(tok)
        first = {w: self.words[i] for i, w in reversed(list(enumerate(self.word_index)))}
        return [(first[w], pieces) for w, pieces in out.items() if len(pieces) > 1]


def tokenize(bundle_or_tokenizer, text: str, max_tokens: int = 128) -> TokenView:
    """WordPiece pieces of `text` with ids, word membership and kind; capped at `max_tokens`."""
    tok = _tokenizer(bundle_or_tokenizer)
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    ids = list(enc["input_ids"])
    offsets = list(enc["offset_mapping"])
    word_ids = enc.word_ids()
    n_total = len(ids)
    ids, offsets, word_ids = ids[:max_tokens], offsets[:max_tokens], word_ids[:max_tokens]
    tokens = tok.convert_ids_to_tokens(ids)
    span: dict[int, list[int]] = {}
    for (s, e), w in zip(offsets, word_ids):
        lo_hi = span.setdefault(w, [s, e])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], s), max(lo_hi[1], e)
    words = [text[span[w][0] : span[w][1]] for w in word_ids]
    unk = tok.unk_token
    return TokenView(
        text=text,
        tokens=tokens,
        ids=ids,
        word_index=[int(w) for w in word_ids],
        words=words,
        continuation=[t.startswith("##") for t in tokens],
        unknown=[t == unk for t in tokens],
        cjk=[len(text[s:e]) == 1 and is_cjk(text[s:e]) for s, e in offsets],
        n_total=n_total,
        truncated=n_total > max_tokens,
    )


@dataclass
class Encoded:
    """One model input: [CLS] A [SEP] (B [SEP]) with its three id rows."""

    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]  # segment: 0 for [CLS] A [SEP], 1 for B [SEP]
    position_ids: list[int]  # 0..T-1: BERT learns one vector per position
    attention_mask: list[int]
    n_total: int  # length before truncation
    truncated: bool

    def table(self) -> list[dict]:
        return [
            {"position": p, "token": t, "id": i, "segment": s, "mask": m}
            for t, i, s, p, m in zip(
                self.tokens, self.input_ids, self.token_type_ids, self.position_ids, self.attention_mask
            )
        ]


def encode_pair(bundle: BertBundle, text_a: str, text_b: str | None = None, max_length: int | None = None) -> Encoded:
    """[CLS] A [SEP] B [SEP] with segment, position ids and mask, truncated to the position table."""
    tok = bundle.tokenizer
    limit = min(max_length or max_positions(bundle), max_positions(bundle))
    full = tok(text_a, text_b, add_special_tokens=True, truncation=False, verbose=False)
    enc = tok(
        text_a,
        text_b,
        add_special_tokens=True,
        truncation="longest_first",
        max_length=limit,
        return_token_type_ids=True,
        verbose=False,
    )
    ids = list(enc["input_ids"])
    return Encoded(
        tokens=tok.convert_ids_to_tokens(ids),
        input_ids=ids,
        token_type_ids=list(enc["token_type_ids"]),
        position_ids=list(range(len(ids))),
        attention_mask=list(enc["attention_mask"]),
        n_total=len(full["input_ids"]),
        truncated=len(full["input_ids"]) > limit,
    )


@dataclass
class Batch:
    """Sentences of different lengths padded into one rectangle."""

    tokens: list[list[str]]
    input_ids: list[list[int]]
    attention_mask: list[list[int]]  # 1 = a real token, 0 = [PAD]: attention gives it weight 0
    lengths: list[int]  # real tokens in each row, [CLS] and [SEP] included
    truncated: bool

    def table(self) -> list[dict]:
        return [
            {"row": r, "position": p, "token": t, "id": i, "mask": m}
            for r, (toks, ids, mask) in enumerate(zip(self.tokens, self.input_ids, self.attention_mask))
            for p, (t, i, m) in enumerate(zip(toks, ids, mask))
        ]


def pad_batch(bundle: BertBundle, texts: list[str], max_length: int | None = None) -> Batch:
    tok = bundle.tokenizer
    limit = min(max_length or max_positions(bundle), max_positions(bundle))
    full = tok(list(texts), truncation=False, verbose=False)
    enc = tok(list(texts), padding="longest", truncation=True, max_length=limit, verbose=False)
    ids = [list(r) for r in enc["input_ids"]]
    mask = [list(r) for r in enc["attention_mask"]]
    return Batch(
        tokens=[tok.convert_ids_to_tokens(r) for r in ids],
        input_ids=ids,
        attention_mask=mask,
        lengths=[int(sum(m)) for m in mask],
        truncated=any(len(r) > limit for r in full["input_ids"]),
    )


@dataclass
class EmbeddingParts:
    """The three embeddings of every token, their sum and the LayerNorm'd sum: arrays (T, H)."""

    encoded: Encoded
    token: np.ndarray  # E_token[input_id]
    segment: np.ndarray  # E_segment[token_type_id]
    position: np.ndarray  # E_position[position_id]
    summed: np.ndarray  # token + segment + position
    normed: np.ndarray  # LayerNorm(summed): what the first encoder layer receives
    ln_mean: np.ndarray  # (T,) mean over the H features of `summed`
    ln_std: np.ndarray  # (T,) sqrt(var + eps)
    norms: dict[str, np.ndarray] = field(default_factory=dict)  # L2 norm per token of each part

    @property
    def tokens(self) -> list[str]:
        return self.encoded.tokens

    def table(self) -> list[dict]:
        return [
            {"position": i, "token": t, "segment": s, **{f"norm_{k}": float(v[i]) for k, v in self.norms.items()}}
            for i, (t, s) in enumerate(zip(self.tokens, self.encoded.token_type_ids))
        ]


@torch.no_grad()
def embedding_parts(
    bundle: BertBundle, text_a: str, text_b: str | None = None, max_length: int | None = None
) -> EmbeddingParts:
    """Devlin et al. 2018, §3 and Figure 2: input representation = token + segment + position embeddings,
    followed (in the released code) by LayerNorm and dropout (identity in eval mode)."""
    emb = bundle.encoder.embeddings
    if getattr(emb, "position_embedding_type", "absolute") != "absolute":
        raise ValueError("this checkpoint does not use absolute position embeddings")
    enc = encode_pair(bundle, text_a, text_b, max_length)
    dev = bundle.device
    ids = torch.tensor([enc.input_ids], device=dev)  # (1, T)
    seg = torch.tensor([enc.token_type_ids], device=dev)  # (1, T)
    pos = torch.tensor([enc.position_ids], device=dev)  # (1, T)
    e_tok = emb.word_embeddings(ids)[0]  # (T, H)
    e_seg = emb.token_type_embeddings(seg)[0]  # (T, H)
    e_pos = emb.position_embeddings(pos)[0]  # (T, H)
    summed = e_tok + e_seg + e_pos  # (T, H)
    normed = emb.LayerNorm(summed)  # (T, H) gamma*(x-mu)/sqrt(var+eps)+beta
    mu = summed.mean(-1)  # (T,)
    std = torch.sqrt(summed.var(-1, unbiased=False) + emb.LayerNorm.eps)  # (T,)
    arrays = {
        k: v.float().cpu().numpy()
        for k, v in {"token": e_tok, "segment": e_seg, "position": e_pos, "summed": summed, "normed": normed}.items()
    }
    return EmbeddingParts(
        encoded=enc,
        **arrays,
        ln_mean=mu.cpu().numpy(),
        ln_std=std.cpu().numpy(),
        norms={k: np.linalg.norm(v, axis=-1) for k, v in arrays.items()},
    )
