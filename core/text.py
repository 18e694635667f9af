"""Cleaning of user text before it reaches a tokenizer or a figure.

Returns notice *codes* rather than sentences so that the UI can say them in either language.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

# Zero-width and bidi-control characters: invisible, yet they become tokens or reorder labels.
INVISIBLE = {
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",  # zero-width space/joiners, word joiner, BOM
    "\u200e",
    "\u200f",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",  # LRM, RLM, embeddings
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",  # isolates
}


@dataclass
class CleanText:
    text: str
    notices: list[str] = field(default_factory=list)  # codes: "empty", "truncated", "invisible_removed", ...
    original_length: int = 0


def clean(text: str | None, max_chars: int = 2000) -> CleanText:
    """Strip control and invisible characters, normalise to NFC, cap the length.

    Notice codes: ``empty`` (nothing left), ``invisible_removed``, ``control_removed``,
    ``truncated`` (longer than ``max_chars``).
    """
    raw = text or ""
    notices: list[str] = []
    s = unicodedata.normalize("NFC", raw)
    kept = []
    dropped_invisible = dropped_control = False
    for ch in s:
        if ch in INVISIBLE:
            dropped_invisible = True
            continue
        if unicodedata.category(ch) == "Cc" and ch not in "\n\t":
            dropped_control = True
            continue
        kept.append(" " if ch in "\n\t" else ch)
    s = " ".join("".join(kept).split())
    if dropped_invisible:
        notices.append("invisible_removed")
    if dropped_control:
        notices.append("control_removed")
    if len(s) > max_chars:
        s = s[:max_chars].rstrip()
        notices.append("truncated")
    if not s:
        notices.append("empty")
    return CleanText(text=s, notices=notices, original_length=len(raw))
