"""Import torch in the background once the first page is on screen, and learn the device.

The home page must not wait for torch (≈1-2 s on 2 cores); the lessons that need it should not
wait either. A daemon thread does the import after the first render, once per process.
"""

from __future__ import annotations

import os
import threading

_lock = threading.Lock()
_started = False
_info: dict = {}


def _work() -> None:
    import gc

    from core.device import describe

    _info.update(describe())
    # torch's and transformers' import-time objects live as long as the process: keep the
    # collector from walking them again on every collection
    gc.freeze()


def start() -> None:
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
