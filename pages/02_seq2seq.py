"""Lesson 2: the seq2seq bottleneck. Widgets only; the numbers come from core.seq2seq."""

import streamlit as st

from core.figures import seq2seq as figs
from ui import figures, lesson
from ui.i18n import t
from ui.seq2seq import checked_input, get_model, get_task, live_report, live_training, manifest_entries, show_live_loss
from ui.shell import recorded_device

page = lesson.LessonPage("seq2seq")
LONG = "thequickbrownfoxjumpsoverthelazydogagain"  # 40 letters: the slider shows its prefixes


def _names() -> dict[str, str]:
    return {"none": t("seq2seq.model_none"), "bahdanau": t("seq2seq.model_bahdanau")}


def _show_output(label: str, view, key: str) -> None:
    """One model's answer: the text, then green/red per position (hover shows what it wrote)."""
    st.markdown(f"**{label}**")
    st.code(view.output or "∅", language=None)
    if view.target is not None:
        figures.show(figs.position_marks(view.target, view.output, view.position_correct), key=key)
        right = sum(bool(m) for m in view.position_correct)
        st.caption(t("seq2seq.positions_right", right=right, total=len(view.target)))


@page.widget("encoder-decoder")
def encoder_decoder():
    from core.seq2seq.explain import bottleneck

    text = checked_input(
        "copy",
        t("seq2seq.input_label"),
        "seq2seq.input",
        "attention",
        get_task("copy").examples,
        help=t("seq2seq.input_help"),
    )
    if text is None:
        return
    view = bottleneck(get_model("copy-none"), get_task("copy"), text)
    figures.show(
        figs.c_strip(view.c, labels={"title": t("seq2seq.c_title", size=len(view.c), length=len(text))}),
        key="seq2seq.c",
        data=[{"dim": i, "c": v} for i, v in enumerate(view.c)],
        filename="c",
    )
    st.caption(t("seq2seq.c_caption", size=len(view.c)))
    _show_output(t("seq2seq.model_none"), view, "seq2seq.marks.input")


@page.inputs("fixed-length")
def curve_task(inp, show: bool) -> dict:
    """copy, or reverse when its checkpoints are committed too (one choice for both sections)."""
    tasks = [name for name in ("copy", "reverse") if manifest_entries(name)]
    if len(tasks) < 2:
        return {"task": tasks[0]}
    if not show:
        task = st.session_state.get("seq2seq.curve_task", tasks[0])
        return {"task": task if task in tasks else tasks[0]}
    labels = {name: t(f"seq2seq.task_{name}") for name in tasks}
    return {
        "task": st.radio(
            t("seq2seq.task_label"), tasks, format_func=labels.get, horizontal=True, key="seq2seq.curve_task"
        )
    }


def _manifest_figure(entries, figure, field: str, words: str, key: str, filename: str) -> None:
    """A figure of the committed models' manifest field (one row per model and bucket), titled by
    the seq2seq.{words}_title / _x / _y strings."""
    figures.show(
        figure(entries, names=_names(), labels={part: t(f"seq2seq.{words}_{part}") for part in ("title", "x", "y")}),
        key=key,
        data=[{"model": e["attention"], **row} for e in entries for row in e[field]],
        filename=filename,
    )


@page.widget("fixed-length")
def accuracy_curve(inp):
    entries = manifest_entries(inp.task)
    _manifest_figure(entries, figs.accuracy_vs_length, "by_length", "curve", "seq2seq.curve", "accuracy-vs-length")
    for e in entries:
        st.caption(
            t(
                "seq2seq.manifest_caption",
                model=_names()[e["attention"]],
                n=e["heldout_n"],
                acc=f"{e['heldout_exact_match']:.1%}",
                seconds=e["train_seconds"],
                steps=e["steps"],
                device=recorded_device(e["device"]),
                seed=e["seed"],
            )
        )


@page.widget("forgetting")
def position_curve(inp):
    entries = manifest_entries(inp.task)
    _manifest_figure(entries, figs.per_position, "per_position", "position", "seq2seq.positions", "per-position")
    st.caption(t("seq2seq.position_caption"))
    names = _names()
    for tab, e in zip(st.tabs([names[e["attention"]] for e in entries]), entries):
        with tab:
            data = [
                {"lengths": r["lengths"], "position": i + 1, "n": n, "accuracy": a}
                for r in e["per_position_by_length"]
                for i, (n, a) in enumerate(zip(r["n"], r["accuracy"]))
            ]
            figures.show(
                figs.position_by_length(
                    e,
                    labels={
                        "title": t("seq2seq.grid_title", model=names[e["attention"]]),
                        "x": t("seq2seq.position_x"),
                        "y": t("seq2seq.curve_x"),
                        "value": t("seq2seq.position_y"),
                    },
                ),
                key=f"seq2seq.grid.{e['attention']}",
                data=data,
                filename=f"position-by-length-{e['attention']}",
            )


@page.widget("try-it")
def grow_input():
    from core.seq2seq.explain import bottleneck, bottleneck_start

    if "seq2seq.length" not in st.session_state:  # start where the bottleneck shows, on these models
        st.session_state["seq2seq.length"] = bottleneck_start(
            get_model("copy-none"), get_model("copy-bahdanau"), get_task("copy"), LONG, default=12
        )
    n = st.slider(t("seq2seq.length_slider"), 1, len(LONG), key="seq2seq.length")
    text = LONG[:n]
    st.code(text, language=None)
    left, right = st.columns(2)
    with left:
        _show_output(
            t("seq2seq.model_none"), bottleneck(get_model("copy-none"), get_task("copy"), text), "seq2seq.marks.none"
        )
    with right:
        _show_output(
            t("seq2seq.model_bahdanau"),
            bottleneck(get_model("copy-bahdanau"), get_task("copy"), text),
            "seq2seq.marks.bahdanau",
        )


@page.widget("train")
def train_live():
    from core.seq2seq.train import live_config

    with lesson.advanced():
        steps = st.number_input(t("seq2seq.live_steps"), 5, 2000, 600, step=50, key="seq2seq.live.steps")
        names = _names()
        attention = st.radio(
            t("seq2seq.live_attention"),
            ["none", "bahdanau"],
            format_func=names.get,
            key="seq2seq.live.attention",
            horizontal=True,
        )
    st.caption(t("seq2seq.live_caption"))
    config = live_config("seq2seq", int(steps))
    result = live_training("seq2seq.live", "copy", attention, config)
    if result is None:
        return
    report = live_report("seq2seq.live", result)
    show_live_loss("seq2seq.live", result, t("seq2seq.live_loss_title"))
    names = {report["attention"]: t("seq2seq.live_model", model=_names()[report["attention"]])}
    figures.show(
        figs.accuracy_vs_length(
            [report],
            names=names,
            labels={"title": t("seq2seq.live_curve_title"), "x": t("seq2seq.curve_x"), "y": t("seq2seq.curve_y")},
        ),
        key="seq2seq.live.curve",
        data=report["by_length"],
        filename="live-accuracy-vs-length",
    )
    st.caption(t("seq2seq.live_eval_caption", n=report["n"], acc=f"{report['exact_match']:.1%}"))


page.render()
