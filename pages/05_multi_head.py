"""Lesson 5: multi-head attention on a real BERT: every head, what heads do, bertviz, Concat · W^O.

Layout only; core.attention and core.bertviz_views compute.
"""

import streamlit as st

from ui import attention as ua
from ui import figures, lesson, tables, widgets
from ui.bert import current_bundle
from ui.i18n import t

P = "multi-head"
page = lesson.LessonPage(P)
ua.model_intro(page)
VIEWS = ("head", "model", "neuron")


@page.inputs("many-heads")
def sentences_and_head(inp, show: bool) -> dict:
    """Sentence A, optional sentence B, layer and head: every figure of this lesson follows them."""
    from core.attention import MAX_TOKENS, encode

    bundle = current_bundle(show_notice=False)
    text = ua.sentence(P, show=show)
    text_b = ua.sentence_b(P, show=show)
    layer, head = ua.layer_head(P, bundle, show=show)
    enc = encode(bundle, text, text_b)
    empty = ua.show_notices(enc.notices, n_full=enc.n_tokens_full, cap=MAX_TOKENS) if show else "empty" in enc.notices
    return {"bundle": bundle, "text": text, "text_b": text_b, "layer": layer, "head": head, "enc": enc, "empty": empty}


@page.widget("many-heads")
def many_heads(inp):
    from core.attention import explain_head

    if inp.empty:
        return
    widgets.draw("head-grid", f"{P}.grid", enc=inp.enc, selected=(inp.layer, inp.head))
    expl = explain_head(inp.bundle, inp.text, inp.layer, inp.head, inp.text_b)
    widgets.draw(
        "attention-heatmap",
        f"{P}.enlarged",
        expl=expl,
        title=t("multi_head.enlarged_title", layer=inp.layer, head=inp.head),
    )


@page.widget("specialise")
def specialise(inp):
    from core.attention import FALLBACK_TAG, TAG_RULES, census_from, summarize
    from core.figures.attention import tag_grid

    bundle, text, text_b, layer, head = inp.bundle, inp.text, inp.text_b, inp.layer, inp.head
    enc, summ = summarize(bundle, text, text_b)
    if "empty" in enc.notices:
        return
    names = ua.tag_names()
    st.caption(t("multi_head.tags_caption"))
    fig = tag_grid(summ, tag_names=names, selected=(layer, head), labels=ua.grid_labels())
    figures.show(fig, key=f"{P}.tags", data=summ.rows, filename="head-summaries")
    st.markdown("**" + t("multi_head.rules_title") + "**")
    lines = [
        t(
            "multi_head.rule_line",
            n=n,
            tag=names[r.tag],
            metric=t(f"multi_head.metrics.{r.metric}"),
            threshold=f"{r.threshold:g}",
        )
        for n, r in enumerate(TAG_RULES, 1)
    ]
    lines.append(t("multi_head.rule_last", n=len(TAG_RULES) + 1, tag=names[FALLBACK_TAG]))
    st.markdown("  \n".join(lines))  # our own strings only: no user text in Markdown
    st.caption(t("multi_head.rules_note", tokens=summ.n_tokens))
    ua.head_census(census_from(summ))
    with lesson.advanced():
        st.caption(t("multi_head.summary_caption"))
        tables.show(summ.rows(), values={"tag": names})
    _rollout(bundle, text, text_b)


@st.fragment
def _rollout(bundle, text, text_b):
    """Attention rollout; its slider reruns only this fragment, from the shared encoding."""
    from core.attention import rollout, rollout_table
    from core.figures.attention import rollout_figure

    enc, roll = rollout(bundle, text, text_b)
    upto = st.slider(t("multi_head.rollout_layer"), 0, enc.num_layers - 1, enc.num_layers - 1, key=f"{P}.rollout_layer")
    st.caption(t("multi_head.rollout_caption"))
    fig = rollout_figure(
        enc,
        roll,
        upto,
        labels={
            "title": t("multi_head.rollout_title", layer=upto),
            "x": t("multi_head.rollout_x"),
            "y": t("multi_head.rollout_y"),
        },
    )
    figures.show(fig, key=f"{P}.rollout", filename=f"rollout-layer{upto}", data=lambda: rollout_table(enc, roll, upto))


@page.widget("bertviz")
def bertviz(inp):
    if inp.empty:
        return
    _bertviz(inp.bundle, inp.text, inp.text_b, inp.layer, inp.head)


@st.fragment
def _bertviz(bundle, text, text_b, layer, head):
    """Drawn on request (up to 2 MB of HTML per view); its own controls rerun only this section."""
    from core.attention import MAX_TOKENS_BERTVIZ
    from core.bertviz_views import build

    if not st.toggle(t("multi_head.bertviz_show"), key=f"{P}.bertviz_on", help=t("multi_head.bertviz_show_help")):
        return
    names = {k: t(f"multi_head.view_{k}") for k in VIEWS}
    kind = st.segmented_control(
        t("multi_head.view_label"),
        VIEWS,
        default="head",
        key=f"{P}.view",
        format_func=names.__getitem__,
        help=t("multi_head.view_help"),
    )
    kind = kind or "head"
    view = build(bundle, text, kind, text_b, layer=layer, head=head, labels=ua.bertviz_labels())
    if "empty" in view.notices:
        return
    # cleaning notices were shown in the first section; here only what this view cut
    ua.show_notices(
        [c for c in view.notices if c in ("tokens_capped", "bertviz_bytes_capped", "bertviz_over_budget")],
        n_full=view.n_tokens_full,
        cap=MAX_TOKENS_BERTVIZ,
    )
    if not view.supported:
        st.info(t(f"multi_head.{view.reason_code}"), icon=":material/block:")
        st.caption(view.reason or "")
        return
    if kind == "neuron":
        st.caption(t("multi_head.neuron_hint"))
    st.iframe(view.html, height="content")
    st.caption(
        t(
            "multi_head.bytes_caption",
            kb=round(view.n_bytes / 1000),
            tokens=view.n_tokens,
            layers=bundle.num_layers,
            heads=bundle.num_heads,
        )
    )


@page.widget("concat")
def concat(inp):
    from core.attention import concat_projection
    from core.figures.attention import projection_figure, projection_shapes

    bundle, text, text_b, layer = inp.bundle, inp.text, inp.text_b, inp.layer
    proj = concat_projection(bundle, text, layer, text_b)
    if "empty" in proj.notices:
        return
    st.caption(t("multi_head.shapes_caption"))
    shape_rows = [
        {
            t("multi_head.shape_step"): r["step"],
            t("multi_head.shape_rows"): r["rows"],
            t("multi_head.shape_cols"): r["cols"],
        }
        for r in proj.shapes()
    ]
    figures.show(
        projection_shapes(proj, labels=ua.projection_labels()),
        key=f"{P}.shapes",
        filename=f"shapes-layer{layer}",
        data=shape_rows,
    )
    st.caption(t("multi_head.concat_caption"))
    fig = projection_figure(proj, labels=ua.projection_labels())
    figures.show(fig, key=f"{P}.concat", filename=f"concat-wo-layer{layer}")
    ua.deferred_downloads(f"{P}.concat", proj.table, f"concat-wo-layer{layer}")
    st.caption(t("multi_head.concat_check", diff=proj.max_abs_diff))


page.render()
