"""Lesson 8 helpers: run the torchrun demo from a button, and the layer-norm training comparison.

The demo is started with core.megatron.demo.run_demo, which launches torchrun as a subprocess (the
workers cannot be spawned from inside Streamlit). One demo runs at a time in this server: the
machine has few cores and the ranks of two demos would only slow each other down.
"""

from __future__ import annotations

import threading
import time

import streamlit as st

from ui import admission
from ui.i18n import t

DEMO_KEY = "megatron.demo_result"
LN_KEY = "megatron.ln_result"
DEMO_TIMEOUT_S = 90.0
HANG_TIMEOUT_S = 12.0


@st.cache_resource(show_spinner=False)
def _demo_lock() -> threading.Lock:
    return threading.Lock()


def run_demo(ranks: int, fault: str = "none", seed: int = 0) -> dict:
    """Run the demo and keep the result for this session. While another session's demo runs, say
    so and wait for it (up to DEMO_TIMEOUT_S). The result's wall_s is the time from the click to
    the result, the wait included; run_s is the demo alone and waited_s the wait. The seconds of
    waiting and of torchrun hold no compute slot (ui.admission)."""
    with admission.released():
        return _run_demo(ranks, fault, seed)


def _run_demo(ranks: int, fault: str, seed: int) -> dict:
    from core.megatron.demo import run_demo as launch
    from ui.errors import message

    clicked = time.perf_counter()
    lock = _demo_lock()
    note = None
    if not lock.acquire(blocking=False):
        note = st.empty()
        while True:
            waited = time.perf_counter() - clicked
            note.info(t("errors.demo_busy", waited=f"{waited:.0f}"), icon=":material/hourglass_top:")
            if lock.acquire(timeout=0.5):
                break
            if waited >= DEMO_TIMEOUT_S:
                note.empty()
                result = {
                    "ok": False,
                    "busy": True,
                    "code": "demo_busy_timeout",
                    "params": {"waited": f"{waited:.0f}"},
                    "waited_s": waited,
                    "wall_s": time.perf_counter() - clicked,
                }
                result["error"] = message(result["code"], **result["params"])
                st.session_state[DEMO_KEY] = result
                return result
    waited = time.perf_counter() - clicked
    try:
        with st.spinner(t("megatron.demo_running", n=ranks)):
            result = launch(
                ranks, timeout=HANG_TIMEOUT_S if fault == "hang" else DEMO_TIMEOUT_S, seed=seed, fault=fault
            )
    finally:
        lock.release()
    result = dict(result, run_s=result.get("wall_s"), waited_s=waited, wall_s=time.perf_counter() - clicked)
    if note is not None:
        note.info(t("errors.demo_waited", waited=f"{waited:.0f}"), icon=":material/hourglass_bottom:")
    if not result.get("ok"):
        # the page shows `error`: the translated what-happened-and-what-to-do, not the worker's words
        # (those stay in `detail`, for ui.errors.show_result's folded technical detail)
        result["error_en"] = result.get("error", "")
        result["error"] = message(result.get("code") or "unknown", **(result.get("params") or {}))
    st.session_state[DEMO_KEY] = result
    return result


def demo_result() -> dict | None:
    return st.session_state.get(DEMO_KEY)


def train_ln(layers: int, steps: int, lr: float) -> dict:
    with admission.released():  # seconds of training hold no compute slot
        return _train_ln(layers, steps, lr)


def _train_ln(layers: int, steps: int, lr: float) -> dict:
    from core.megatron.ln_order import train_compare

    bar = st.progress(0.0, text=t("megatron.ln_training"))
    shown = [0.0]

    def progress(fraction: float) -> None:
        if fraction - shown[0] >= 0.02 or fraction >= 1.0:  # ~50 updates, not one per step
            shown[0] = fraction
            bar.progress(min(1.0, fraction), text=t("megatron.ln_training"))

    result = train_compare(layers=layers, steps=steps, lr=lr, progress=progress)
    bar.empty()
    st.session_state[LN_KEY] = result
    return result


def ln_result() -> dict | None:
    return st.session_state.get(LN_KEY)
