"""One forward pass of a real encoder, kept for every view of a page rerun."""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch

from core.text import clean
from core.widgets import MAX_CHARS

# Token caps (docs/ARCHITECTURE.md, "Bad input"): a heatmap past 128 rows is unreadable and heavy to
# send; bertviz draws one SVG line per (layer, head, query, key), so it is capped lower, at 64.
MAX_TOKENS = 128
MAX_TOKENS_BERTVIZ = 64


@dataclass
class Encoding:
    """What one forward pass of the encoder gives the attention views."""

    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]
    sentence_b_start: int | None  # first position of sentence B, None for one sentence
    attentions: np.ndarray  # (L, H, T, T) float32, the model's own output_attentions
    hidden_states: list[torch.Tensor]  # L+1 tensors (T, d_model); [l] is the input of layer l
    notices: list[str]  # notice codes: empty, truncated, invisible_removed, tokens_capped, ...
    n_tokens_full: int  # tokens before the cap
    max_tokens: int
    forward_seconds: float
    text: str = ""  # the cleaned text that was encoded
    text_b: str | None = None
    special: dict[str, list[int]] = field(default_factory=dict)  # "cls"/"sep" -> positions
    # results computed from this encoding (one head explained, a layer's W^O, summaries...), shared
    # by every session that shows the same text on the same model; freed with the encoding
    derived: "OrderedDict[tuple, object]" = field(default_factory=OrderedDict, repr=False, compare=False)
    # bytes of the derived results, kept up to date as they come and go (eviction reads it on every
    # new encoding; walking every result of every encoding then cost ~1 ms a call)
    derived_bytes: int = field(default=0, repr=False, compare=False)

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def num_layers(self) -> int:
        return int(self.attentions.shape[0])

    @property
    def num_heads(self) -> int:
        return int(self.attentions.shape[1])

    @property
    def empty(self) -> bool:
        return "empty" in self.notices

    @cached_property
    def own_bytes(self) -> int:
        """The attention tensor and the hidden states (set once: eviction reads every encoding's size
        on every new result, and walking seven tensors each time cost ~1 ms a call at 80 encodings)."""
        return int(self.attentions.nbytes) + sum(int(h.numel() * h.element_size()) for h in self.hidden_states)

    @property
    def nbytes(self) -> int:
        """Memory held: the attention tensor, the hidden states and every derived result."""
        return self.own_bytes + self.derived_bytes

    def memo(self, key: tuple, make):
        """``make()`` once per key for this encoding (the last MAX_DERIVED kept): a rerun that only
        moves a picker, and every other session on the same text, reuse what was computed."""

        def lookup():
            if key in self.derived:
                self.derived.move_to_end(key)
                return self.derived[key]
            return None

        def store(value):
            self.derived[key] = value
            self.derived.move_to_end(key)
            self.derived_bytes += _nbytes(value)
            while len(self.derived) > MAX_DERIVED:
                self.derived_bytes -= _nbytes(self.derived.popitem(last=False)[1])
            _evict()

        return _single_flight((id(self), key), lookup, make, store)


def _nbytes(value, depth: int = 2) -> int:
    """Bytes of the arrays and tensors a result holds: its fields, lists and dicts, two levels down."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, torch.Tensor):
        return int(value.numel() * value.element_size())
    if depth <= 0:
        return 0
    if isinstance(value, dict):
        return sum(_nbytes(v, depth - 1) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v, depth - 1) for v in value)
    fields = getattr(value, "__dict__", None)
    return sum(_nbytes(v, depth - 1) for v in fields.values()) if fields else 0


# Every encoding is shared across sessions (same model, text, cap): a class that types the same
# preset runs the model once. The cache is bounded by bytes, not entries: at 128 tokens one
# all-MiniLM-L6-v2 encoding holds ~6 MB, at 20 tokens ~0.2 MB. ATTNLAB_ATTENTION_CACHE_MB sets it.
CACHE_BYTES = int(float(os.environ.get("ATTNLAB_ATTENTION_CACHE_MB", "128")) * 1024 * 1024)
MAX_DERIVED = 48  # derived results kept per encoding (one per layer/head/view actually looked at)
_CACHE: "OrderedDict[tuple, Encoding]" = OrderedDict()
_LOCK = threading.RLock()
_IN_FLIGHT: dict[tuple, threading.Event] = {}  # key -> set when the session computing it is done


def _single_flight(key: tuple, lookup, make, store):
    """``lookup()`` under the lock; on a miss, one thread runs ``make()`` and ``store``s it while every
    other thread asking for the same key waits for that result instead of computing it again (thirty
    students opening the same lesson at once cost one forward pass, not thirty)."""
    with _LOCK:
        hit = lookup()
        if hit is not None:
            return hit
        done = _IN_FLIGHT.get(key)
        if done is None:
            done = _IN_FLIGHT[key] = threading.Event()
            owner = True
        else:
            owner = False
    if not owner:
        done.wait()  # then it is a hit, or (the owner failed) one waiter becomes the next owner
        return _single_flight(key, lookup, make, store)
    try:
        value = make()
        with _LOCK:
            store(value)
        return value
    finally:
        with _LOCK:
            _IN_FLIGHT.pop(key, None)
        done.set()


def cached_encodings() -> list[Encoding]:
    """The encodings held now, least recently used first (for benchmarks and tests)."""
    with _LOCK:
        return list({id(e): e for e in reversed(_CACHE.values())}.values())[::-1]


def cache_bytes() -> int:
    """Bytes held by the shared cache (each encoding counted once, with its derived results)."""
    return sum(e.nbytes for e in cached_encodings())


def _evict() -> None:
    """Drop least recently used encodings until the cache fits CACHE_BYTES (the newest always stays)."""
    with _LOCK:
        sizes = {id(e): e.nbytes for e in _CACHE.values()}
        total = sum(sizes.values())
        while len(_CACHE) > 1 and total > CACHE_BYTES:
            _, old = _CACHE.popitem(last=False)
            if all(e is not old for e in _CACHE.values()):  # an alias under another cap keeps it alive
                total -= sizes.pop(id(old), 0)


def _clean(text: str | None, max_chars: int) -> tuple[str, list[str]]:
    c = clean(text, max_chars=max_chars)
    return c.text, list(c.notices)


def encode(
    bundle, text: str | None, text_b: str | None = None, *, max_tokens: int = MAX_TOKENS, max_chars: int = MAX_CHARS
) -> Encoding:
    """Clean, tokenize (capped at ``max_tokens`` wordpieces, [CLS] and [SEP] included) and run the
    encoder once with ``output_attentions`` and ``output_hidden_states``.

    The last few results are kept, so that every figure of a page rerun shares one forward pass.
    Empty text still encodes ([CLS] [SEP]); ``notices`` then holds ``empty`` for the page to say so.
    """
    a, notices = _clean(text, max_chars)
    b = None
    if text_b is not None and str(text_b).strip():
        b, notices_b = _clean(text_b, max_chars)
        notices += [n for n in notices_b if n not in notices and n != "empty"]
        b = b or None
    model = bundle.encoder
    # a model with a shorter position table than the app's cap reads fewer tokens (BertBundle.max_tokens)
    max_tokens = min(int(max_tokens), int(getattr(bundle, "max_tokens", max_tokens)))
    key = (model, a, b, max_tokens, int(max_chars))

    def lookup():
        hit = _CACHE.get(key)
        if hit is None:
            # the same text under another cap that did not cut it has the very same tokens
            hit = next(
                (
                    e
                    for k, e in _CACHE.items()
                    if k[:3] == key[:3]
                    and k[4] == key[4]
                    and e.n_tokens_full <= max_tokens
                    and "tokens_capped" not in e.notices
                ),
                None,
            )
        if hit is not None:
            _CACHE[key] = hit
            _CACHE.move_to_end(key)
        return hit

    def store(enc):
        _CACHE[key] = enc
        _evict()

    return _single_flight(key, lookup, lambda: _encode_uncached(bundle, a, b, notices, max_tokens), store)


def _encode_uncached(bundle, a: str, b: str | None, notices: list[str], max_tokens: int) -> Encoding:
    tok = bundle.tokenizer
    if max_tokens < 3:
        raise ValueError("max_tokens must leave room for [CLS], one token and [SEP]")
    full = tok(a, b, add_special_tokens=True)
    n_full = len(full["input_ids"])
    if n_full > max_tokens:
        # longest_first trims the longer sentence of a pair first, so both keep some tokens.
        batch = tok(a, b, add_special_tokens=True, truncation="longest_first", max_length=max_tokens)
        notices = notices + ["tokens_capped"]
    else:
        batch = full
    ids = list(batch["input_ids"])
    types = list(batch.get("token_type_ids") or [0] * len(ids))
    tokens = tok.convert_ids_to_tokens(ids)
    device = getattr(bundle, "device", None) or next(bundle.encoder.parameters()).device
    input_ids = torch.tensor([ids], device=device)
    token_type_ids = torch.tensor([types], device=device)
    model = bundle.encoder
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = model(
            input_ids=input_ids,
            token_type_ids=token_type_ids,
            attention_mask=torch.ones_like(input_ids),
            output_attentions=True,
            output_hidden_states=True,
        )
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    if not out.attentions or out.attentions[0] is None:
        raise RuntimeError("the model returned no attentions: load it with attn_implementation='eager'")
    attn = torch.stack([a_[0] for a_ in out.attentions]).float().cpu().numpy()  # (L, H, T, T)
    hidden = [h[0].detach() for h in out.hidden_states]  # L+1 × (T, d_model)
    b_start = types.index(1) if b is not None and 1 in types else None
    special = {
        "cls": [i for i, t in enumerate(ids) if t == tok.cls_token_id],
        "sep": [i for i, t in enumerate(ids) if t == tok.sep_token_id],
    }
    return Encoding(
        tokens=tokens,
        input_ids=ids,
        token_type_ids=types,
        sentence_b_start=b_start,
        attentions=attn,
        hidden_states=hidden,
        notices=notices,
        n_tokens_full=n_full,
        max_tokens=max_tokens,
        forward_seconds=seconds,
        text=a,
        text_b=b,
        special=special,
    )


def clear_cache() -> None:
    """Forget every encoding and everything derived from them."""
    with _LOCK:
        _CACHE.clear()


def _layer(bundle, layer: int):
    layers = bundle.encoder.encoder.layer
    if not 0 <= layer < len(layers):
        raise IndexError(f"layer {layer} is not in 0..{len(layers) - 1}")
    return layers[layer]
