"""Warm the server in the background: torch, the default BERT and the lessons' first sentences.

The home page must not wait for torch (≈1-2 s on 2 cores), and the first students of a fresh server
must not wait for the model either: thirty of them opening lesson 4 at once on a cold server is the
first minute of every class. `ui.serve` starts one daemon thread before the server listens (and the
shell starts it on a first render, for servers started otherwise); it imports torch, loads the
default bundle into `ui.bert`'s shared cache and computes lessons 4–5's first preset in both
languages into `core.attention`'s shared cache, so the first page of each student is a cache hit.
"""

from __future__ import annotations

import os
import threading
import time

from streamlit.logger import get_logger

_lock = threading.Lock()
_started = False
_info: dict = {}
log = get_logger(__name__)  # streamlit's handler and level (logger.level in .streamlit/config.toml)


def _work() -> None:
    import gc

    from core.device import describe

    _info.update(describe())
    try:
        _warm_model()
    except Exception:  # noqa: BLE001 - a failed warm-up only means the first student waits
        log.exception("warm-up of the default model failed; pages load it on first use")
    # torch's and transformers' import-time objects, and the model, live as long as the process:
    # keep the collector from walking them again on every collection
    gc.freeze()


def _warm_model() -> None:
    from core.attention import explain_head, summarize
    from core.lessons import LANGS
    from ui.attention import PRESETS, default_layer_head
    from ui.bert import get_bundle
    from ui.i18n import strings

    t0 = time.perf_counter()
    bundle = get_bundle("")
    layer, head = default_layer_head(bundle)
    for lang in LANGS:
        text = strings(lang)[f"self_attention.presets.{PRESETS[0]}"]
        explain_head(bundle, text, layer, head)  # lesson 4's glass box (and the encoding under it)
        summarize(bundle, text, None)  # lesson 5's head summaries
    _info["model_warm_s"] = round(time.perf_counter() - t0, 2)
    log.info("default model warm in %.1f s", _info["model_warm_s"])


def start() -> None:
    """Start the warm-up once per process (ATTENTION_LAB_NO_WARMUP=1 turns it off)."""
    global _started
    if os.environ.get("ATTENTION_LAB_NO_WARMUP") == "1":
        return
    with _lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_work, name="attention-lab-warmup", daemon=True).start()


def device_info() -> dict | None:
    if _info:
        return dict(_info)
    from core.device import describe

    return describe(probe=False)  # None while torch is not imported yet
