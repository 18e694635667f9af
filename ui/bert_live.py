"""Lesson 7's live steps: "watch BERT learn" (a tiny BERT pre-trained from scratch while the student
watches) and the per-language sentiment scorer.

Watch BERT learn: one background thread per session (core.bert.live.pretrain_live; every random number
comes from the run's own generators, so two sessions training at once do not disturb each other).
The thread never touches Streamlit: it writes into a LiveRun under a lock, and the page polls it with
st.fragment(run_every=...), so the script never blocks for the minute the training takes. The run
lives in st.session_state, so another session never sees it; Stop sets the run's threading.Event.
"""

from __future__ import annotations

import logging
import threading
import time

import streamlit as st

from ui import lesson
from ui.i18n import t

log = logging.getLogger(__name__)

RUN_KEY = "bert-outputs.live_run"  # this session's LiveRun
STEPS_KEY = "bert-outputs.live_steps"  # the student's choice of steps (advanced)
POLL_S = 0.7  # how often the fragment redraws a running run
BUDGET_S = 50.0  # training stops after this many seconds, whatever the load: with
# the three cloze snapshots a run ends within a minute
PHASES = ("start", "middle", "end")


class LiveRun:
    """One pre-training run in a background thread; read it with snapshot()."""

    def __init__(self, steps: int, seed: int = 0, time_budget_s: float | None = BUDGET_S):
        self.steps, self.seed, self.budget = int(steps), int(seed), time_budget_s
        self.cancel = threading.Event()
        self._lock = threading.Lock()
        self._step = 0
        self._progress = 0.0
        self._mlm: list[float] = []
        self._nsp: list[float] = []
        self._cloze: dict[str, dict] = {}
        self._done = False
        self._cancelled = False
        self._error: str | None = None
        self._seconds: float | None = None
        self._t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, name="bert-live", daemon=True)

    def start(self) -> "LiveRun":
        self.thread.start()
        return self

    def _on_step(self, info: dict) -> None:
        with self._lock:
            self._step = int(info["step"])
            self._progress = float(info["progress"])
            if info.get("mlm_loss") is not None and info["step"] > len(self._mlm):
                self._mlm.append(float(info["mlm_loss"]))
                self._nsp.append(float(info["nsp_loss"]))
            if "cloze" in info:
                cl = dict(info["cloze"])
                self._cloze[cl.pop("phase")] = cl

    def _run(self) -> None:
        from core.bert.live import pretrain_live

        try:
            res = pretrain_live(
                steps=self.steps, on_step=self._on_step, cancel=self.cancel, seed=self.seed, time_budget_s=self.budget
            )
            with self._lock:
                self._cancelled = bool(res["cancelled"])
                self._seconds = float(res["seconds"])
        except Exception as exc:  # noqa: BLE001 - shown to the student as a failed run, logged in full
            log.exception("live pre-training failed")
            with self._lock:
                self._error = type(exc).__name__
        finally:
            with self._lock:
                self._done = True

    def snapshot(self) -> dict:
        with self._lock:
            return {
                "step": self._step,
                "steps": self.steps,
                "progress": self._progress,
                "budget": self.budget,
                "mlm": list(self._mlm),
                "nsp": list(self._nsp),
                "cloze": dict(self._cloze),
                "done": self._done,
                "cancelled": self._cancelled,
                "stopping": self.cancel.is_set() and not self._done,
                "error": self._error,
                "seconds": self._seconds if self._seconds is not None else time.monotonic() - self._t0,
            }


def running(run: LiveRun | None) -> bool:
    return run is not None and not run.snapshot()["done"]


def _start() -> None:
    from core.bert.live import LIVE

    old = st.session_state.get(RUN_KEY)
    if running(old):
        return
    steps = int(st.session_state.get(STEPS_KEY, LIVE.steps))
    st.session_state[RUN_KEY] = LiveRun(steps).start()


def _stop() -> None:
    run = st.session_state.get(RUN_KEY)
    if run is not None:
        run.cancel.set()


@st.cache_data(show_spinner=False, max_entries=2)
def comparison(manifest_path: str | None) -> dict:
    """The live preset and the shipped model side by side, every number read from the presets, the
    live corpus and the shipped manifest.json (none typed)."""
    import json
    from pathlib import Path

    from core.bert import count
    from core.bert.live import LIVE, _prepared

    tok, enc = _prepared()
    live_params = count(**LIVE.shape(len(tok)))
    live = {
        "layers": LIVE.layers,
        "hidden": LIVE.hidden,
        "heads": LIVE.heads,
        "vocab": len(tok),
        "parameters": live_params.pretraining_total,
        "tokens": enc.tokens(),
        "steps": LIVE.steps,
        "batch": LIVE.batch_size,
        "seconds": None,
    }
    shipped = None
    if manifest_path and Path(manifest_path).is_file():
        m = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
        r = m.get("recipe", {})
        tokens = sum((m.get("corpus", {}).get("train_tokens") or {}).values()) or None
        shipped = {
            "layers": r.get("layers"),
            "hidden": r.get("hidden"),
            "heads": r.get("heads"),
            "vocab": r.get("vocab_size"),
            "parameters": m.get("parameters"),
            "tokens": tokens,
            "steps": m.get("steps", r.get("steps")),
            "batch": r.get("batch_size"),
            "seconds": m.get("train_seconds"),
        }
    return {"live": live, "shipped": shipped}


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.0f}"
    return f"{v:,}"


def _comparison_table(seconds: float | None = None) -> None:
    """`seconds`: this session's last finished run, shown as the live column's training time."""
    from core.bert.loader import default_model_dir

    manifest = default_model_dir() / "manifest.json"
    c = comparison(str(manifest) if manifest.is_file() else None)
    live_col, shipped_col = t("bert_outputs.live_col_live"), t("bert_outputs.live_col_shipped")
    rows = []
    for key in ("layers", "hidden", "heads", "vocab", "parameters", "tokens", "steps", "batch", "seconds"):
        live = seconds if key == "seconds" and seconds is not None else c["live"][key]
        row = {t("bert_outputs.live_row"): t(f"bert_outputs.live_row_{key}"), live_col: _fmt(live)}
        if c["shipped"] is not None:
            row[shipped_col] = _fmt(c["shipped"][key])
        rows.append(row)
    lesson.table(rows, hide_index=True, width="stretch")
    if c["shipped"] is None:
        st.caption(t("bert_outputs.live_no_manifest"))
    else:
        ratio = (c["shipped"]["tokens"] or 0) / max(1, c["live"]["tokens"])
        st.caption(t("bert_outputs.live_ratio", ratio=f"{ratio:,.0f}"))


def _cloze_rows(cloze: dict, lang: str) -> list[dict]:
    """One row per cloze sentence, one column per phase reached: its top 3 fillers with probabilities."""
    from core.bert.live import CLOZE

    rows = []
    for i, sentence in enumerate(CLOZE[lang]):
        row = {t("bert_outputs.live_sentence"): sentence}
        for phase in PHASES:
            if phase in cloze and lang in cloze[phase]:
                cands = cloze[phase][lang][i]["candidates"][:3]
                row[t(f"bert_outputs.live_phase_{phase}")] = "  ·  ".join(
                    f"{c['token']} {c['prob']:.0%}" for c in cands
                )
        rows.append(row)
    return rows


def _draw(snap: dict, lang: str) -> None:
    import math

    done = snap["done"]
    if snap["error"]:
        st.error(t("bert_outputs.live_failed", error=snap["error"]))
    elif done and snap["cancelled"]:
        st.warning(t("bert_outputs.live_cancelled", step=snap["step"], steps=snap["steps"]))
    elif done:
        st.success(t("bert_outputs.live_done", steps=snap["step"], seconds=f"{snap['seconds']:.0f}"))
        if snap["step"] < snap["steps"]:
            st.caption(t("bert_outputs.live_budget_ended", budget=f"{snap['budget']:.0f}", steps=snap["steps"]))
    st.progress(
        min(1.0, snap["progress"]),
        text=t("bert_outputs.live_progress", step=snap["step"], steps=snap["steps"], seconds=f"{snap['seconds']:.0f}"),
    )
    if snap["mlm"]:
        import pandas as pd

        mlm, nsp = t("bert_outputs.live_mlm"), t("bert_outputs.live_nsp")
        df = pd.DataFrame(
            {mlm: snap["mlm"], nsp: snap["nsp"]},
            index=pd.RangeIndex(1, len(snap["mlm"]) + 1, name=t("bert_outputs.live_step")),
        )
        st.line_chart(df, x_label=t("bert_outputs.live_step"), y_label=t("bert_outputs.live_loss"), height=260)
        from core.bert.live import _prepared

        vocab = len(_prepared()[0])
        st.caption(
            t(
                "bert_outputs.live_loss_caption",
                mlm=f"{snap['mlm'][-1]:.2f}",
                nsp=f"{snap['nsp'][-1]:.2f}",
                uniform=f"{math.log(vocab):.2f}",
                vocab=f"{vocab:,}",
                coin=f"{math.log(2):.2f}",
            )
        )
    if snap["cloze"]:
        st.caption(t("bert_outputs.live_cloze_caption"))
        lesson.table(_cloze_rows(snap["cloze"], lang), hide_index=True, width="stretch")


def live_section(lang: str) -> None:
    """The "watch BERT learn" step: what differs from the shipped model, Start / Stop, and the run."""
    from core.bert.live import LIVE

    run = st.session_state.get(RUN_KEY)
    snap = run.snapshot() if run is not None else None
    _comparison_table(snap["seconds"] if snap and snap["done"] and not (snap["error"] or snap["cancelled"]) else None)
    with lesson.advanced():
        st.slider(
            t("bert_outputs.live_steps"),
            10,
            LIVE.steps,
            LIVE.steps,
            10,
            key=STEPS_KEY,
            help=t("bert_outputs.live_steps_help", steps=LIVE.steps, budget=f"{BUDGET_S:.0f}"),
        )
    active = snap is not None and not snap["done"]
    left, right = st.columns(2)
    left.button(
        t("bert_outputs.live_start"), key="bert-outputs.live_start", on_click=_start, type="primary", disabled=active
    )
    right.button(t("bert_outputs.live_stop"), key="bert-outputs.live_stop", on_click=_stop, disabled=not active)
    if run is None:
        st.info(t("bert_outputs.live_idle"))
        return

    @st.fragment(run_every=POLL_S if active else None)
    def _poll():
        snap = run.snapshot()
        if snap["stopping"]:
            st.caption(t("bert_outputs.live_stopping"))
        _draw(snap, lang)
        if active and snap["done"]:
            st.rerun()  # once: the buttons change and the polling stops

    _poll()
