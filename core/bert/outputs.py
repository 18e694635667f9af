"""Lesson 7: what comes out of BERT (Devlin et al. 2018, §3 and Figure 1/2).

- T_i: the last hidden state of every token (H numbers each);
- C: the vector at [CLS], and the pooler's tanh(W C + b) that the NSP/classification heads read;
- the hidden state after every layer (embedding output = layer 0), to follow one token upward;
- sentence vectors and their cosine similarity. The embedded all-MiniLM-L6-v2 was trained for this
  with mean pooling over real tokens, then L2 normalisation (its 1_Pooling/config.json says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .inputs import Encoded, encode_pair
from .loader import BertBundle


@dataclass
class HiddenStates:
    encoded: Encoded
    layers: np.ndarray  # (L+1, T, H): layer 0 = embedding output, L = last hidden state
    pooled: np.ndarray | None  # (H,) pooler output tanh(W h_[CLS] + b), None when the checkpoint has no pooler

    @property
    def tokens(self) -> list[str]:
        return self.encoded.tokens

    @property
    def last(self) -> np.ndarray:
        return self.layers[-1]  # (T, H)


@torch.no_grad()
def hidden_states(
    bundle: BertBundle, text_a: str, text_b: str | None = None, max_length: int | None = None
) -> HiddenStates:
    enc = encode_pair(bundle, text_a, text_b, max_length)
    dev = bundle.device
    out = bundle.encoder(
        input_ids=torch.tensor([enc.input_ids], device=dev),
        token_type_ids=torch.tensor([enc.token_type_ids], device=dev),
        attention_mask=torch.tensor([enc.attention_mask], device=dev),
        output_hidden_states=True,
    )
    layers = torch.stack(out.hidden_states)[:, 0]  # (L+1, T, H)
    pooled = out.pooler_output[0] if getattr(out, "pooler_output", None) is not None else None  # (H,)
    return HiddenStates(
        encoded=enc,
        layers=layers.float().cpu().numpy(),
        pooled=None if pooled is None else pooled.float().cpu().numpy(),
    )


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64) + 1e-12))


def layer_trajectory(states: HiddenStates, index: int) -> list[dict]:
    """How token `index`'s vector changes layer by layer: its norm, the size of each layer's update,
    its cosine to the previous layer and to the embedding it started from."""
    x = states.layers[:, index]  # (L+1, H)
    rows = []
    for layer in range(x.shape[0]):
        prev = x[layer - 1] if layer else x[0]
        rows.append(
            {
                "layer": layer,
                "norm": float(np.linalg.norm(x[layer])),
                "change": float(np.linalg.norm(x[layer] - prev)) if layer else 0.0,
                "cos_prev": _cos(x[layer], prev),
                "cos_embedding": _cos(x[layer], x[0]),
            }
        )
    return rows


# Sentence vectors read at most this many tokens of a text, [CLS] and [SEP] included; longer text
# is cut, and the page says so.
SENTENCE_MAX_TOKENS = 128


def token_lengths(bundle: BertBundle, texts: list[str]) -> list[int]:
    """How many tokens each text has before any truncation, [CLS] and [SEP] included: compare with
    SENTENCE_MAX_TOKENS to tell a student that a sentence vector read only the start of a text."""
    if not texts:
        return []
    enc = bundle.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
    return [len(ids) for ids in enc["input_ids"]]


@torch.no_grad()
def sentence_embeddings(
    bundle: BertBundle, texts: list[str], max_length: int = SENTENCE_MAX_TOKENS, batch_size: int = 32
) -> np.ndarray:
    """(N, H) unit vectors: mean of the last hidden states over real tokens (mask = 1), then L2-normalised."""
    tok = bundle.tokenizer
    max_length = min(max_length, int(getattr(bundle, "max_tokens", max_length)))  # the model's position table
    chunks = []
    for start in range(0, len(texts), batch_size):
        enc = tok(
            list(texts[start : start + batch_size]),
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors="pt",
        ).to(bundle.device)
        h = bundle.encoder(**enc).last_hidden_state  # (B, T, H)
        m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)  # (B, T, 1)
        mean = (h * m).sum(1) / m.sum(1).clamp(min=1)  # (B, H)
        chunks.append(torch.nn.functional.normalize(mean, dim=-1).float().cpu())
    if not chunks:
        return np.zeros((0, bundle.hidden_size), dtype=np.float32)
    return torch.cat(chunks).numpy()


def similarity(bundle: BertBundle, texts: list[str], max_length: int = SENTENCE_MAX_TOKENS) -> np.ndarray:
    """(N, N) cosine similarity of sentence vectors (dot products of unit vectors)."""
    e = sentence_embeddings(bundle, texts, max_length).astype(np.float64)  # (N, H)
    return e @ e.T
