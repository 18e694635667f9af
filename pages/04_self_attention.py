"""Lesson 4: self-attention, one head of a real BERT as a glass box (layout only; core computes)."""

import math

import streamlit as st

from ui import attention as ua
from ui import figures, lesson, widgets
from ui.bert import current_bundle
from ui.i18n import t

P = "self-attention"
page = lesson.LessonPage(P)
ua.model_intro(page)


@page.inputs("qkv")
def sentence_and_head(inp, show: bool) -> dict:
    """The sentence, layer, head and query token every figure of this lesson explains."""
    from core.attention import MAX_TOKENS, explain_head

    bundle = current_bundle(show_notice=False)
    text = ua.sentence(P, show=show)
    layer, head = ua.layer_head(P, bundle, show=show)
    expl = explain_head(bundle, text, layer, head)
    empty = (
        ua.show_notices(expl.notices, n_full=expl.n_tokens_full, cap=MAX_TOKENS) if show else "empty" in expl.notices
    )
    query = 0 if empty else ua.query_picker(P, expl.tokens, show=show)
    return {"bundle": bundle, "text": text, "expl": expl, "empty": empty, "query": query}


@page.inputs("scaled-dot-product")
def scaling_toggle(inp, show: bool) -> dict:
    """With or without 1/√d_k: the scores, the weighted sum and the heatmap follow this switch."""
    if not show:
        return {"scaled": bool(st.session_state.get(f"{P}.scaled", True))}
    scaled = st.toggle(
        t("self_attention.scale_toggle"), value=True, key=f"{P}.scaled", help=t("self_attention.scale_toggle_help")
    )
    return {"scaled": bool(scaled)}


@page.widget("qkv")
def qkv(inp):
    from core.figures.attention import qk_vectors

    if inp.empty:
        return
    expl, i = inp.expl, inp.query
    layer, head = expl.layer, expl.head
    st.caption(t("self_attention.vectors_caption", d_k=expl.d_k))
    fig = qk_vectors(expl, i, labels=ua.glass_labels())

    def rows():  # built only when a download is clicked
        out = [
            {
                "vector": "q",
                "position": i,
                "token": expl.tokens[i],
                **{f"d{d}": float(expl.q[i, d]) for d in range(expl.d_k)},
            }
        ]
        return out + [
            {"vector": "k", "position": j, "token": tok, **{f"d{d}": float(expl.k[j, d]) for d in range(expl.d_k)}}
            for j, tok in enumerate(expl.tokens)
        ]

    figures.show(fig, key=f"{P}.vectors", data=rows, filename=f"q-k-layer{layer}-head{head}")


@page.widget("scaled-dot-product")
def scaled_dot_product(inp):
    from core.figures.attention import score_steps

    if inp.empty:
        return
    expl, i, scaled = inp.expl, inp.query, inp.scaled
    if not scaled:
        st.warning(t("self_attention.no_scaling_note"), icon=":material/science:")
    st.caption(t("self_attention.steps_caption", sqrt=math.sqrt(expl.d_k)))
    fig = score_steps(expl, i, scaled=scaled, labels=ua.glass_labels())
    figures.show(fig, key=f"{P}.steps", data=lambda: expl.query_table(i), filename=f"scores-query{i}")
    w_s, w_u = expl.weights[i], expl.weights_unscaled[i]
    cols = st.columns(3)
    # each metric as shown, and (when scaled) its unscaled value beside it
    for col, label, shown, unscaled in (
        (cols[0], t("self_attention.m_max_weight"), (w_s if scaled else w_u).max(), w_u.max()),
        (cols[1], t("self_attention.m_entropy"), expl.row_entropy(i, scaled=scaled), expl.row_entropy(i, scaled=False)),
    ):
        delta = f"{unscaled:.3f} {t('self_attention.m_unscaled_delta')}" if scaled else None
        col.metric(label, f"{shown:.3f}", delta=delta, delta_color="off", delta_arrow="off")
    sat = expl.saturation()
    cols[2].metric(t("self_attention.m_std"), f"{sat['score_std_scaled'] if scaled else sat['score_std_raw']:.3f}")


@page.widget("scaled-dot-product")
def scaling():
    """Why √d_k: random vectors, not the sentence, so a change of sentence does not redraw it."""
    from core.attention import scaling_study
    from core.figures.attention import scaling_figure

    st.subheader(t("self_attention.scaling_title"), anchor=False)
    study = scaling_study()
    st.caption(t("self_attention.scaling_caption", trials=study.trials, n=study.n_keys))
    figures.show(
        scaling_figure(study, labels=ua.scaling_labels()), key=f"{P}.scaling", data=study.rows, filename="scaling-study"
    )


@page.widget("weighted-sum")
def weighted_sum_section(inp):
    from core.figures.attention import weighted_sum

    if inp.empty:
        return
    expl, i, scaled = inp.expl, inp.query, inp.scaled
    st.caption(t("self_attention.weighted_caption", d_k=expl.d_k))
    fig = weighted_sum(expl, i, scaled=scaled, labels=ua.glass_labels())
    out = expl.output[i] if scaled else (expl.weights_unscaled[i] @ expl.v)
    figures.show(
        fig,
        key=f"{P}.weighted",
        filename=f"weighted-sum-query{i}",
        data=lambda: [{"dimension": d, "output": float(out[d])} for d in range(expl.d_k)],
    )
    st.caption(t("self_attention.check_caption", diff=expl.max_abs_diff))


@page.widget("heatmap")
def heatmap_section(inp):
    if inp.empty:
        return
    from core.attention import head_census

    st.caption(t("self_attention.heatmap_caption"))
    widgets.draw("attention-heatmap", f"{P}.heatmap", expl=inp.expl, query=inp.query, scaled=inp.scaled)
    _, _, census = head_census(inp.bundle, inp.text)
    ua.head_census(census)


page.render()
