"""Streamlit side of lessons 2-3: cached loaders, input checking with notices, live training.

Models are shared read-only between sessions (st.cache_resource); a model a student trains live
lives in that student's session_state only.
"""

from __future__ import annotations

import streamlit as st

from core.figures import seq2seq as figs
from ui import admission, figures
from ui.i18n import t

CHECKPOINTS = {
    "copy-none": "copy-none.safetensors",
    "copy-bahdanau": "copy-bahdanau.safetensors",
    "date-bahdanau": "date-bahdanau.safetensors",
}


@st.cache_resource(show_spinner=False)
def _load_model(name: str):
    from core.seq2seq.train import CHECKPOINT_DIR, load_checkpoint

    return load_checkpoint(CHECKPOINT_DIR / CHECKPOINTS[name])


def get_model(name: str):
    """A committed checkpoint, loaded once per server process. A missing or damaged one ends the
    page's run with an error card saying how to retrain it (and is not cached: a repaired file
    loads on the next run)."""
    from core.seq2seq.errors import CheckpointError

    try:
        return _load_model(name)
    except CheckpointError as exc:
        from ui.errors import stop_with

        stop_with(exc)


@st.cache_data(show_spinner=False, max_entries=256)
def date_trace(text: str):
    """One decode of the committed date model (Bahdanau), cached per input and shared by sessions."""
    from core.seq2seq.explain import trace

    return trace(get_model("date-bahdanau"), get_task("date"), text)


def get_task(name: str):
    from core.seq2seq.tasks import get_task as _get

    return _get(name)


@st.cache_data(show_spinner=False)
def _manifest() -> dict:
    from core.seq2seq.train import read_manifest

    return read_manifest()


def manifest() -> dict:
    """The checkpoints' manifest; a missing, empty or damaged one ends the page's run with an error
    card (and is not cached)."""
    from core.seq2seq.errors import CheckpointError

    try:
        return _manifest()
    except CheckpointError as exc:
        from ui.errors import stop_with

        stop_with(exc)


# the tasks whose checkpoints the lessons need (the others are optional extras)
REQUIRED_TASKS = frozenset(name.split("-")[0] for name in CHECKPOINTS)


def manifest_entries(task: str) -> list[dict]:
    """The task's checkpoints, the model without attention first (it is the lesson's subject).
    A lesson's task with no entry ends the page's run with an error card."""
    entries = sorted(
        (e for e in manifest()["checkpoints"] if e.get("task") == task), key=lambda e: e.get("attention") != "none"
    )
    if not entries and task in REQUIRED_TASKS:
        from core.seq2seq.errors import CheckpointError, retrain_command
        from ui.errors import stop_with

        stop_with(
            CheckpointError(
                "checkpoint_missing", file=f"{task}-*.safetensors", command=retrain_command(task, "bahdanau")
            )
        )
    return entries


def checked_input(
    task_name: str, label: str, key: str, default: str, examples: tuple[str, ...] | None = None, help: str | None = None
):
    """A text box (with example picks) whose text is checked against the task's vocabulary.

    Returns the cleaned text when a model can read it, else None after a clear notice. User text
    is only ever shown with st.code (never as Markdown or HTML)."""
    from core.seq2seq.explain import check_input

    task = get_task(task_name)
    if examples:

        def _pick():
            st.session_state[key] = st.session_state[f"{key}.example"]

        st.selectbox(
            t("seq2seq.examples"),
            examples,
            key=f"{key}.example",
            on_change=_pick,
            index=None,
            placeholder=t("seq2seq.examples_placeholder"),
        )
    if key not in st.session_state:
        st.session_state[key] = default
    text = st.text_input(label, key=key, help=help)
    chk = check_input(task, text)
    for code in chk.notices:
        st.info(t(f"notice.{code}"), icon=":material/info:")
    if chk.ok:
        return chk.text
    if chk.problem == "empty":
        st.info(t("seq2seq.bad_empty"), icon=":material/info:")
    elif chk.problem == "too_long":
        st.warning(t("seq2seq.bad_too_long", length=chk.length, max_len=chk.max_len), icon=":material/warning:")
    else:
        st.warning(t("seq2seq.bad_chars", count=len(chk.unknown)), icon=":material/warning:")
        st.code(" ".join(repr(c) for c in chk.unknown[:20]), language=None)
        st.caption(t("seq2seq.allowed_chars"))
        st.code(task.src_vocab.symbols.replace(" ", "␣"), language=None)
    return None


def _run_keys(key: str) -> tuple[str, str, str]:
    """The session_state keys of a live run: running, its result, cancelled."""
    return f"{key}.running", f"{key}.result", f"{key}.cancelled"


def _train_buttons(key: str) -> None:
    """Train and Cancel, and what became of the last run when it did not finish."""
    ss = st.session_state
    run_key, result_key, cancel_key = _run_keys(key)

    def _start():
        ss[run_key], ss[cancel_key] = True, False
        ss.pop(result_key, None)

    def _cancel():
        ss[run_key], ss[cancel_key] = False, True

    cols = st.columns([1, 1, 3])
    cols[0].button(
        t("seq2seq.train_button"),
        key=f"{key}.start",
        on_click=_start,
        type="primary",
        icon=":material/model_training:",
        disabled=bool(ss.get(run_key)),
    )
    cols[1].button(
        t("seq2seq.cancel_button"),
        key=f"{key}.cancel",
        on_click=_cancel,
        icon=":material/stop:",
        disabled=not ss.get(run_key),
    )
    if ss.get(cancel_key):
        st.info(t("seq2seq.train_cancelled"), icon=":material/info:")
    elif ss.pop(f"{key}.interrupted", False):
        st.info(t("errors.train_interrupted"), icon=":material/info:")


def _train_now(key: str, task_name: str, attention: str, config, draw_progress) -> None:
    """Train with the progress bar, keep the finished result, then rerun the script."""
    from core.seq2seq.train import train

    ss = st.session_state
    run_key, result_key, cancel_key = _run_keys(key)
    bar = st.progress(0.0, text=t("seq2seq.train_starting"))
    area = st.empty()

    def on_progress(p):
        acc = "–" if p.valid_acc is None else f"{p.valid_acc:.1%}"
        bar.progress(
            min(1.0, p.step / p.total_steps),
            text=t(
                "seq2seq.train_progress",
                step=p.step,
                total=p.total_steps,
                loss=f"{p.loss:.4f}",
                acc=acc,
                seconds=f"{p.seconds:.0f}",
            ),
        )
        if draw_progress is not None:
            with area.container():
                draw_progress(p)
        return None if ss.get(run_key) else False

    finished = False
    try:
        with admission.released():  # seconds of training must not hold up the class's reruns
            result = train(task_name, attention, config, on_progress=on_progress)
        finished = True
    finally:
        # a run stopped from outside (another widget changed, the session closed, an error)
        # must not leave the flag set: the next run would restart training on its own
        ss[run_key] = False
        if not finished and not ss.get(cancel_key):
            ss[f"{key}.interrupted"] = True
    if not result.cancelled:
        ss[result_key] = result
    st.rerun()  # redraw the buttons (Train enabled again) and the finished run's views


def live_training(key: str, task_name: str, attention: str, config, draw_progress=None):
    """Train live with a progress bar, the running loss and a cancel button.

    Clicking cancel starts a new run of the script, which stops this one at its next UI update
    (Streamlit stops a running script when a widget changes); the flags in session_state tell
    the new run what happened. Returns the finished TrainResult, or None while none exists.
    ``draw_progress(progress, area)`` may draw extra live views (the alignment sharpening).
    """
    ss = st.session_state
    run_key, result_key, _ = _run_keys(key)
    _train_buttons(key)
    if ss.get(run_key):
        _train_now(key, task_name, attention, config, draw_progress)
    done = ss.get(result_key)
    if done is not None:
        st.progress(
            1.0,
            text=t("seq2seq.train_done", steps=done.steps, seconds=f"{done.seconds:.1f}", acc=f"{done.valid_acc:.1%}"),
        )
    return ss.get(result_key)


def live_report(key: str, result, n: int = 200) -> dict:
    """Held-out accuracy by length of a live-trained model, measured once per finished run."""
    from core.seq2seq.evaluate import evaluate_model

    ss, report_key = st.session_state, f"{key}.report"
    if report_key not in ss or ss[report_key][0] is not result:
        task = get_task(result.task)
        ss[report_key] = (result, evaluate_model(result.model, task, task.heldout(n)))
    return ss[report_key][1]


def show_live_loss(key: str, result, title: str) -> None:
    """The loss curve of a finished live run (lessons 2 and 3), its numbers downloadable."""
    figures.show(
        figs.loss_curve(result.losses, labels={"title": title, "x": t("seq2seq.step"), "y": t("seq2seq.loss")}),
        key=f"{key}.loss",
        data=[{"step": s, "loss": v} for s, v in result.losses],
        filename="live-loss",
    )
