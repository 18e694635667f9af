"""The server's own forward passes, one JSON line each: what the budget's ratio divides by
(docs/ARCHITECTURE.md, Budgets: an edit ≤ 3 × the model's forward pass, same run).

``ATTENTION_LAB_FORWARD_LOG=/tmp/forward.jsonl python -m ui.serve ...`` (bench_load starts its own
server with it when it times ``--ratio``) appends, for every sentence the server encodes (a cache
miss of core.attention.encode), ``{"tokens": n, "forward_s": s}``: ``s`` is
``Encoding.forward_seconds``, the model's forward pass timed inside that very script run (the reading
of bench/bench_attention.py). bench_load reads the lines an edit added and divides the edit's time by
its own forward pass ("same run").
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path


def start(path: str) -> None:
    """Log every uncached encoding's forward pass to ``path`` (in this process, from now on)."""
    from core.attention import encoding

    inner = encoding._encode_uncached
    if getattr(inner, "forward_log", None):
        return
    lock = threading.Lock()

    def logged(*args, **kwargs):
        enc = inner(*args, **kwargs)
        line = json.dumps({"tokens": len(enc.tokens), "forward_s": round(enc.forward_seconds, 6)})
        with lock, open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        return enc

    logged.forward_log = path
    encoding._encode_uncached = logged


class Reader:
    """The lines a server appended since the last :meth:`new` (or since this reader was made)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def new(self) -> list[dict]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next call
        self.offset += end
        return [json.loads(line) for line in data[:end].splitlines() if line.strip()]
