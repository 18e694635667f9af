"""Live widgets that lesson Markdown can embed with a ```widget NAME``` block.

Each widget is one function registered under the name listed in core/widgets.py (which also lists
its arguments, so that ``python -m core.lessons check`` validates blocks without the app). To add
a widget: add its WidgetSpec to core.widgets.WIDGETS, then write

    @register("my-widget")
    def my_widget(args: dict, key: str) -> None:
        ...  # streamlit calls; args are already typed and defaulted

in this file. ``key`` is unique per block and page: prefix every widget key with it.
"""
from __future__ import annotations

from typing import Callable

from core.widgets import Block, validate
from ui import quiz
from ui.i18n import t

Renderer = Callable[[dict, str], None]
RENDERERS: dict[str, Renderer] = {}


def register(name: str) -> Callable[[Renderer], Renderer]:
    def add(fn: Renderer) -> Renderer:
        RENDERERS[name] = fn
        return fn

    return add


def render_block(block: Block, lesson_id: str, where: str) -> None:
    """Draw one block. A block with problems becomes an error card naming file and line."""
    from ui.lesson import error_card  # ui.lesson imports this module

    args, problems = validate(block)
    if problems:
        error_card(t("app.block_error"), [f"{where}:{line}: {reason}" for line, reason in problems],
                   t("app.lesson_error_hint"))
        return
    if block.kind == "quiz":
        quiz.quiz(lesson_id, block, args)
    elif block.kind == "predict":
        quiz.predict(lesson_id, block, args)
    else:
        renderer = RENDERERS.get(block.name)
        if renderer is None:
            error_card(t("app.block_error"), [f"{where}:{block.line}: widget {block.name!r} has no renderer"])
            return
        renderer(args, f"{lesson_id}.{block.key}")


# -- the widgets ------------------------------------------------------------------------------
# Each widget starts from the author's arguments and lets the student change the text. Widgets
# show at most SHOW_TOKENS tokens, like the lesson pages.
SHOW_TOKENS = 64


def _text(args: dict, key: str, name: str = "text") -> str | None:
    """The widget's text box, prefilled by the author; None (with a notice) when empty."""
    from ui import lesson

    return lesson.text_box(t("widgets.text"), key=f"{key}.{name}", value=args[name])


def _capped(truncated: bool, total: int) -> None:
    from ui import lesson

    lesson.tokens_capped(truncated, total, SHOW_TOKENS)


@register("tokenizer")
def tokenizer(args: dict, key: str) -> None:
    from core.bert import tokenize
    from core.figures.bert import wordpiece_figure
    from ui import figures
    from ui.bert import current_bundle

    text = _text(args, key)
    if text is None:
        return
    view = tokenize(current_bundle(show_notice=False), text, max_tokens=SHOW_TOKENS)
    _capped(view.truncated, view.n_total)
    fig = wordpiece_figure(view.tokens, view.ids, view.word_index, view.continuation,
                           title=t("bert_inputs.wp_title"), id_label=t("bert_inputs.row_id"),
                           piece_label=t("bert_inputs.row_piece"))
    figures.show(fig, key=f"{key}.fig", data=view.table(), filename="wordpiece")


@register("embedding-sum")
def embedding_sum(args: dict, key: str) -> None:
    from core.bert import embedding_parts
    from core.figures.bert import norms_figure
    from ui import figures
    from ui.bert import current_bundle

    text = _text(args, key)
    if text is None:
        return
    parts = embedding_parts(current_bundle(show_notice=False), text, max_length=SHOW_TOKENS)
    _capped(parts.encoded.truncated, parts.encoded.n_total)
    names = {"token": t("bert_inputs.part_token"), "segment": t("bert_inputs.part_segment"),
             "position": t("bert_inputs.part_position"), "summed": t("bert_inputs.part_sum"),
             "normed": t("bert_inputs.part_ln")}
    fig = norms_figure(parts.tokens, {names[k]: parts.norms[k] for k in names},
                       title=t("bert_inputs.norms_title"), y_title=t("bert_inputs.norm"))
    figures.show(fig, key=f"{key}.fig", data=parts.table(), filename="embedding-norms")


@register("mask-simulator")
def mask_simulator(args: dict, key: str) -> None:
    import streamlit as st

    from core.bert import simulate_masking
    from core.figures.bert import masking_figure
    from ui import figures
    from ui.bert import current_bundle

    text = _text(args, key)
    if text is None:
        return
    seed = st.number_input(t("widgets.seed"), min_value=0, max_value=10_000, value=args["seed"],
                           key=f"{key}.seed")
    r = simulate_masking(current_bundle(show_notice=False), text, seed=int(seed), max_length=SHOW_TOKENS)
    actions = {a: t(f"bert_outputs.action_{a.replace(' ', '_')}")
               for a in ("special", "not chosen", "mask", "random", "keep")}
    fig = masking_figure(r.original, r.tokens, r.actions, title=t("bert_outputs.mlm_title"),
                         action_names=actions, row_names=(t("bert_outputs.row_original"),
                                                          t("bert_outputs.row_input")))
    figures.show(fig, key=f"{key}.fig", data=r.table(), filename="mlm-masking")


def _megatron_labels(*keys: str) -> dict:
    return {k: t(f"megatron.fig_{k}") for k in keys}


@register("parallel-split")
def parallel_split(args: dict, key: str) -> None:
    import streamlit as st

    from core.figures import megatron as mfig
    from core.megatron.layers import shard_layout
    from ui import figures

    ranks = st.segmented_control(t("widgets.ranks"), ["1", "2", "4"], default=args["ranks"], key=f"{key}.ranks")
    shards = shard_layout(int(ranks or args["ranks"]))
    fig = mfig.shard_map(shards, labels=_megatron_labels("rank", "rows", "cols", "local"))
    figures.show(fig, key=f"{key}.fig", filename="tensor-parallel-shards",
                 data=[{"rank": int(r), "weight": s["name"], "local_shape": "x".join(map(str, s["local_shape"])),
                        "ranges": str(s["ranges"])} for r, ss in shards.items() for s in ss])


@register("pipeline-schedule")
def pipeline_schedule(args: dict, key: str) -> None:
    import streamlit as st

    from core.figures import megatron as mfig
    from core.megatron.schedules import timeline
    from ui import figures

    kind, p, m = args["schedule"], args["stages"], args["microbatches"]
    v = args["chunks"] if kind == "interleaved" else 1
    if kind == "interleaved" and m % p:  # interleaving needs whole rounds of p micro-batches
        m = max(p, (m // p) * p)
        st.warning(t("megatron.m_rounded", m=m, p=p))
    tl = timeline(kind, p, m, v)
    fig = mfig.pipeline_figure(tl, title=t("megatron.timeline_title", kind=t(f"megatron.sched_{kind}"), p=p, m=m, v=v),
                               labels=_megatron_labels("device", "forward", "backward", "microbatch", "chunk",
                                                       "stage", "time"))
    figures.show(fig, key=f"{key}.fig", filename=f"pipeline-{kind}-p{p}-m{m}-v{v}", data=tl["ops"])
    left, right = st.columns(2)
    left.metric(t("megatron.bubble_measured"), f"{tl['measured_bubble_fraction']:.4f}")
    right.metric(t("megatron.bubble_formula", f="(p−1)/m" if v == 1 else "(p−1)/(v·m)"),
                 f"{tl['formula_bubble_fraction']:.4f}")


@register("bahdanau-alignment")
def bahdanau_alignment(args: dict, key: str) -> None:
    from core.figures import seq2seq as figs
    from core.seq2seq.explain import alignment_of
    from ui import figures
    from ui.seq2seq import checked_input, get_model, get_task

    text = checked_input("date", t("widgets.date"), f"{key}.text", args["text"])
    if text is None:
        return
    outputs, weights = alignment_of(get_model("date-bahdanau"), get_task("date"), text)
    fig = figs.alignment(weights, list(text), outputs, title=t("bahdanau.align_title"), x_title=t("bahdanau.align_x"),
                          y_title=t("bahdanau.align_y"))
    figures.show(fig, key=f"{key}.fig", filename="alignment",
                 data=[{"output": o, **{f"{j}:{c}": w for j, (c, w) in enumerate(zip(text, row))}}
                       for o, row in zip(outputs, weights)])


def _bert_sentence(args: dict, key: str):
    """The bundle and the explained text, or None when there is nothing to show."""
    from ui.bert import current_bundle

    text = _text(args, key)
    return (current_bundle(show_notice=False), text) if text else (None, None)


@register("attention-heatmap")
def attention_heatmap(args: dict, key: str) -> None:
    import streamlit as st

    from core.attention import MAX_TOKENS, explain_head
    from core.figures.attention import head_heatmap
    from ui import figures

    bundle, text = _bert_sentence(args, key)
    if bundle is None:
        return
    left, right = st.columns(2)
    layer = left.number_input(t("widgets.layer"), 0, bundle.num_layers - 1,
                              min(args["layer"], bundle.num_layers - 1), key=f"{key}.layer")
    head = right.number_input(t("widgets.head"), 0, bundle.num_heads - 1,
                              min(args["head"], bundle.num_heads - 1), key=f"{key}.head")
    expl = explain_head(bundle, text, int(layer), int(head))
    if expl.n_tokens_full > MAX_TOKENS:
        from ui import lesson

        lesson.notice("tokens_capped", limit=MAX_TOKENS, total=expl.n_tokens_full)
    fig = head_heatmap(expl, title=t("self_attention.heatmap_title", layer=expl.layer, head=expl.head),
                       x_title=t("self_attention.heatmap_x"), y_title=t("self_attention.heatmap_y"))
    figures.show(fig, key=f"{key}.fig", data=expl.matrix_wide(), filename=f"attention-layer{layer}-head{head}")


@register("head-grid")
def head_grid(args: dict, key: str) -> None:
    from core.attention import MAX_TOKENS, encode
    from core.figures.attention import layer_head_grid
    from ui import figures

    bundle, text = _bert_sentence(args, key)
    if bundle is None:
        return
    enc = encode(bundle, text)
    if enc.n_tokens_full > MAX_TOKENS:
        from ui import lesson

        lesson.notice("tokens_capped", limit=MAX_TOKENS, total=enc.n_tokens_full)
    labels = {k: t(f"multi_head.grid_{k}") for k in ("layer", "head", "query", "key")}
    figures.show(layer_head_grid(enc, labels=labels), key=f"{key}.fig", filename="all-heads")
