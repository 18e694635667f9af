"""Lesson 3: Bahdanau attention over a bidirectional GRU, step by step. Widgets only."""

import streamlit as st

from core.figures import seq2seq as figs
from ui import figures, lesson, widgets
from ui.i18n import t
from ui.seq2seq import checked_input, date_trace, get_task, live_training, manifest_entries, show_live_loss
from ui.shell import recorded_device

page = lesson.LessonPage("bahdanau")
KEY = "bahdanau.input"


def _step_labels(tr) -> list[str]:
    """Labels built during the run (a format_func must not call t() later, outside the run)."""
    return [t("bahdanau.step_option", i=i + 1, out=o.replace(" ", "␣")) for i, o in enumerate(tr.outputs)]


@page.inputs("bigru")
def date_input(inp, show: bool) -> dict:
    """The date every figure of this lesson decodes: its trace, or None when the model cannot read it."""
    from core.seq2seq.explain import check_input

    task = get_task("date")
    if show:
        text = checked_input(
            "date", t("bahdanau.input_label"), KEY, task.examples[0], task.examples, help=t("bahdanau.input_help")
        )
    else:
        chk = check_input(task, st.session_state.get(KEY, task.examples[0]))
        text = chk.text if chk.ok else None
    return {"trace": None if text is None else date_trace(text)}


def _step_key(tr) -> str:
    """The step picker's key: a new picker (at step 1) when the input, hence the steps, change."""
    return lesson.follow_inputs("bahdanau.step", tr.source, tr.outputs)


@page.inputs("scores")
def decoder_step(inp, show: bool) -> dict:
    """The decoder step i the scores show and the alignment highlights."""
    tr = inp.trace
    if tr is None:
        return {"step": None}
    key = _step_key(tr)
    if not show:
        step = st.session_state.get(key, 0)
        return {"step": min(step, len(tr.outputs) - 1) if isinstance(step, int) else 0}
    labels = _step_labels(tr)
    i = st.select_slider(
        t("bahdanau.step_slider"), options=list(range(len(tr.outputs))), format_func=labels.__getitem__, key=key
    )
    return {"step": min(i, len(tr.outputs) - 1)}


@page.widget("bigru")
def bigru(inp):
    tr = inp.trace
    if tr is None:
        return
    st.markdown(f"**{t('bahdanau.model_output')}**")
    st.code(tr.output_text or "∅", language=None)
    if tr.target is None:
        st.info(t("bahdanau.not_a_date"), icon=":material/info:")
    elif tr.target != tr.output_text:
        st.caption(t("bahdanau.expected", target=tr.target))
    entry = manifest_entries("date")[0]
    st.caption(
        t(
            "bahdanau.model_caption",
            acc=f"{entry['heldout_exact_match']:.1%}",
            n=entry["heldout_n"],
            steps=entry["steps"],
            seconds=entry["train_seconds"],
            device=recorded_device(entry["device"]),
            seed=entry["seed"],
        )
    )
    H = len(tr.forward[0])
    fig = figs.annotations(
        tr.forward,
        tr.backward,
        tr.source,
        labels={
            "title": t("bahdanau.bigru_title", H=H, D=2 * H),
            "x": t("bahdanau.bigru_x"),
            "y": t("bahdanau.bigru_y"),
        },
    )
    rows = [
        {"j": j + 1, "x_j": c, **{f"fwd_{d}": v for d, v in enumerate(f)}, **{f"bwd_{d}": v for d, v in enumerate(b)}}
        for j, (c, f, b) in enumerate(zip(tr.source, tr.forward, tr.backward))
    ]
    figures.show(fig, key="bahdanau.bigru", data=rows, filename="annotations")
    st.caption(t("bahdanau.bigru_caption"))


@page.widget("scores")
def scores(inp):
    tr, i = inp.trace, inp.step
    if tr is None:
        st.info(t("bahdanau.need_input"), icon=":material/info:")
        return
    prev = tr.outputs[i - 1] if i else "<s>"
    st.caption(t("bahdanau.step_caption", i=i + 1, p=i, prev=prev))
    figures.show(
        figs.decoder_step(
            tr.energies[i],
            tr.weights[i],
            tr.source,
            labels={
                "title": t("bahdanau.step_title", i=i + 1),
                "energy": t("bahdanau.e_title", i=i + 1, p=i),
                "weight": t("bahdanau.a_title", i=i + 1),
            },
        ),
        key="bahdanau.step_fig",
        filename=f"step-{i + 1}",
        data=[
            {"j": j + 1, "x_j": c, "e_ij": e, "alpha_ij": a}
            for j, (c, e, a) in enumerate(zip(tr.source, tr.energies[i], tr.weights[i]))
        ],
    )
    figures.show(
        figs.c_strip(
            tr.contexts[i],
            labels={"title": t("bahdanau.context_title", i=i + 1, D=len(tr.contexts[i])), "value": f"c_{i + 1}"},
        ),
        key="bahdanau.context",
        data=[{"dim": d, "c_i": v} for d, v in enumerate(tr.contexts[i])],
        filename=f"context-{i + 1}",
    )
    st.markdown(f"**{t('bahdanau.output_title', i=i + 1)}**")
    st.code(f"y_{i + 1} = {tr.outputs[i]}", language=None)
    prob = t("bahdanau.probability")
    lesson.table(
        [{t("bahdanau.candidate"): tok, prob: round(p, 4)} for tok, p in tr.top[i]],
        hide_index=True,
        column_config={prob: st.column_config.NumberColumn(format="%.4f")},
    )


@page.widget("predict")
def predict(inp):
    from core.seq2seq.explain import predictable_steps, verdict

    tr = inp.trace
    if tr is None:
        st.info(t("bahdanau.need_input"), icon=":material/info:")
        return
    ss = st.session_state
    labels = _step_labels(tr)
    steps = predictable_steps(tr.outputs)  # only the digits: a separator comes from no single input
    if not steps:
        st.info(t("teach.predict_no_digit"), icon=":material/info:")
        return
    i = st.selectbox(
        t("bahdanau.predict_step"),
        steps,
        format_func=labels.__getitem__,
        key=lesson.follow_inputs("bahdanau.predict.step", tr.source, tr.outputs),
    )
    st.code(f"x = {''.join(tr.source)}\ny = {''.join(tr.outputs[:i])} ▢", language=None)
    guess = st.radio(
        t("bahdanau.predict_question", i=i + 1, out=tr.outputs[i]),
        list(range(len(tr.source))),
        format_func=lambda j: f"{j + 1}: " + tr.source[j].replace(" ", "␣"),
        horizontal=True,
        key=lesson.follow_inputs("bahdanau.predict.guess", tr.source, i),
        index=None,
    )
    reveal_key = lesson.follow_inputs("bahdanau.predict.revealed", tr.source, i)
    if not ss.get(reveal_key):
        # Before the first reveal: a guess, then the button. After it, every change of the guess
        # shows its verdict at once.
        if st.button(
            t("bahdanau.predict_button"),
            key="bahdanau.predict.reveal",
            disabled=guess is None,
            icon=":material/visibility:",
        ):
            ss[reveal_key] = True
        else:
            return
    if guess is not None:
        weights = tr.weights[i]
        best = max(range(len(weights)), key=weights.__getitem__)
        words = dict(j=best + 1, x=tr.source[best], a=f"{weights[best]:.2f}", g=guess + 1, ga=f"{weights[guess]:.2f}")
        said = verdict(weights, guess)
        if said == "right":
            st.success(t("bahdanau.predict_right", **words))
        elif said == "close":
            st.warning(t("teach.predict_close", **words))
        else:
            st.error(t("teach.predict_wrong", **words))
    figures.show(
        figs.decoder_step(
            tr.energies[i],
            tr.weights[i],
            tr.source,
            labels={"energy": t("bahdanau.e_title", i=i + 1, p=i), "weight": t("bahdanau.a_title", i=i + 1)},
        ),
        key="bahdanau.predict.fig",
    )


@page.widget("alignment")
def alignment(inp):
    if inp.trace is None:
        st.info(t("bahdanau.need_input"), icon=":material/info:")
        return
    widgets.draw("bahdanau-alignment", "bahdanau.alignment", trace=inp.trace, step=inp.step)


@page.widget("train")
def train_live():
    from core.seq2seq.train import live_config

    probe = checked_input("date", t("bahdanau.probe_label"), "bahdanau.probe", "2026年12月2日")
    with lesson.advanced():
        steps = st.number_input(t("bahdanau.live_steps"), 5, 2000, 500, step=50, key="bahdanau.live.steps")
    if probe is None:
        return
    st.caption(t("bahdanau.live_caption"))
    config = live_config("bahdanau", int(steps), probe)

    def draw(p):
        if p.alignment:
            figures.show(
                figs.alignment(
                    p.alignment,
                    list(p.probe),
                    p.probe_output,
                    labels={"title": t("bahdanau.live_align_title", step=p.step)},
                ),
                key=f"bahdanau.live.align.{p.step}",
            )

    result = live_training("bahdanau.live", "date", "bahdanau", config, draw_progress=draw)
    if result is None or not result.snapshots:
        return
    by_step = {p.step: p for p in result.snapshots}
    step = result.snapshots[-1].step
    if len(by_step) > 1:
        step = st.select_slider(
            t("bahdanau.snapshot_slider"), options=list(by_step), value=step, key="bahdanau.live.snapshot"
        )
    snap = by_step[step]
    figures.show(
        figs.alignment(
            snap.alignment,
            list(snap.probe),
            snap.probe_output,
            labels={"title": t("bahdanau.live_align_title", step=snap.step)},
        ),
        key="bahdanau.live.replay",
        filename=f"alignment-step-{snap.step}",
    )
    show_live_loss("bahdanau.live", result, t("bahdanau.live_loss_title"))


page.render()
