"""The live widgets: each one function, drawn by a lesson page's section and by a Markdown block.

A widget is registered twice under the name listed in core/widgets.py (which also lists its
arguments and their ranges, so that ``python -m core.lessons check`` validates blocks without the
app):

- ``@widget(name)``: the one function that computes and draws it from chosen inputs:
  ``fn(key, **inputs)``. A page section calls it as ``widgets.draw(name, key, **inputs)``; ``key``
  is the figure's key, and any control the widget draws is keyed ``f"{key}.<part>"``.
- ``@block(name)``: what a ```` ```widget NAME ```` block adds in front of it: the controls a student
  uses on a Markdown page (a text box prefilled by the author, ...), then ``draw``. ``args`` are the
  author's arguments, typed and defaulted from the spec.

So a page and a Markdown block never disagree about a widget: they differ only in where the
inputs come from.
"""

from __future__ import annotations

from typing import Callable

from core.widgets import MAX_CHARS, RANKS, SEED, SHOW_TOKENS, Block, validate
from ui import quiz
from ui.i18n import t, t_keys

Renderer = Callable[[dict, str], None]
RENDERERS: dict[str, Renderer] = {}  # Markdown blocks: controls, then draw()
WIDGETS: dict[str, Callable] = {}  # the widgets themselves


def widget(name: str) -> Callable[[Callable], Callable]:
    def add(fn: Callable) -> Callable:
        WIDGETS[name] = fn
        return fn

    return add


def block(name: str) -> Callable[[Renderer], Renderer]:
    def add(fn: Renderer) -> Renderer:
        RENDERERS[name] = fn
        return fn

    return add


def draw(name: str, key: str, **inputs):
    """Draw the widget ``name`` from chosen inputs; what it returns (if anything) for the caller."""
    return WIDGETS[name](key, **inputs)


def render_block(block_: Block, lesson_id: str, where: str) -> None:
    """Draw one block. A block with problems becomes an error card naming file and line."""
    from ui.lesson import error_card  # ui.lesson imports this module

    args, problems = validate(block_)
    if problems:
        error_card(
            t("app.block_error"), [f"{where}:{line}: {reason}" for line, reason in problems], t("app.lesson_error_hint")
        )
        return
    if block_.kind == "quiz":
        quiz.quiz(lesson_id, block_, args)
    elif block_.kind == "predict":
        quiz.predict(lesson_id, block_, args)
    else:
        renderer = RENDERERS.get(block_.name)
        if renderer is None:
            error_card(t("app.block_error"), [f"{where}:{block_.line}: widget {block_.name!r} has no renderer"])
            return
        renderer(args, f"{lesson_id}.{block_.key}")


def text_box(label: str, key: str, value: str) -> str | None:
    """A cleaned text box (see ui.lesson.text_box) capped at the app's MAX_CHARS."""
    from ui import lesson

    return lesson.text_box(label, key=key, value=value, max_chars=MAX_CHARS)


def seed_input(label: str, key: str, value: int, container=None) -> int:
    """A random seed in the one range the lesson check also accepts (core.widgets.SEED)."""
    import streamlit as st

    return int(
        (container or st).number_input(
            label, min_value=SEED.minimum, max_value=SEED.maximum, value=value, step=1, key=key
        )
    )


def _bundle():
    from ui.bert import current_bundle

    return current_bundle(show_notice=False)


def _capped(truncated: bool, total) -> None:
    from ui import lesson

    lesson.tokens_capped(truncated, total, SHOW_TOKENS)


# -- BERT's inputs (lesson 6) ------------------------------------------------------------------


@widget("tokenizer")
def tokenizer(key: str, *, text: str, details: bool = False):
    """WordPiece tokens and ids; with ``details``, counts above and the split words below."""
    import streamlit as st

    from core.bert import tokenize
    from core.figures.bert import wordpiece_figure
    from ui import figures, lesson

    view = tokenize(_bundle(), text, max_tokens=SHOW_TOKENS)
    _capped(view.truncated, view.n_total)
    if not view.tokens:
        lesson.notice("empty")
        return None
    if details:
        cols = st.columns(4)
        cols[0].metric(t("bert_inputs.m_chars"), len(text))
        cols[1].metric(t("bert_inputs.m_pieces"), view.n_total)
        cols[2].metric(t("bert_inputs.m_unknown"), sum(view.unknown))
        cols[3].metric(t("bert_inputs.m_cjk"), sum(view.cjk))
    fig = wordpiece_figure(
        view.tokens,
        view.ids,
        view.word_index,
        view.continuation,
        labels={"title": t("bert_inputs.wp_title"), "id": t("bert_inputs.row_id"), "piece": t("bert_inputs.row_piece")},
    )
    figures.show(fig, key=key, data=view.table, filename="wordpiece")
    if details and view.split_words:
        st.caption(t("bert_inputs.wp_split_caption"))
        from ui import lesson

        lesson.table(
            [{t("bert_inputs.col_word"): w, t("bert_inputs.col_pieces"): "  ".join(p)} for w, p in view.split_words],
            hide_index=True,
            width="stretch",
        )
    return view


def text_block(name: str) -> Renderer:
    """The block of a widget whose only input is a text box: the box, then the widget ``name``."""

    def render(args: dict, key: str) -> None:
        text = text_box(t("widgets.text"), f"{key}.text", args["text"])
        if text is not None:
            draw(name, f"{key}.fig", text=text)

    return block(name)(render)


text_block("tokenizer")


def _part_names() -> dict[str, str]:
    return t_keys("bert_inputs.part_", "token", "segment", "position", summed="sum", normed="ln")


@widget("embedding-sum")
def embedding_sum(key: str, *, text: str, text_b: str | None = None, per_token: bool = False):
    """The norms of token + segment + position embeddings and their LayerNorm'd sum, per token;
    with ``per_token``, first one picked token's vectors as strips and its LayerNorm numbers."""
    import streamlit as st

    from core.bert import embedding_parts
    from core.figures.bert import embedding_strips, norms_figure
    from ui import figures, lesson

    parts = embedding_parts(_bundle(), text, text_b, max_length=SHOW_TOKENS)
    _capped(parts.encoded.truncated, parts.encoded.n_total)
    names = _part_names()
    if per_token:
        options = list(range(len(parts.tokens)))
        labels = [f"{j}: {tok}" for j, tok in enumerate(parts.tokens)]  # formatted now, in this run's language
        i = st.selectbox(
            t("bert_inputs.pick_token"),
            options,
            index=1 if len(options) > 1 else 0,
            key=lesson.follow_inputs(f"{key}.token", parts.tokens),
            format_func=labels.__getitem__,
        )
        i = min(int(i or 0), len(options) - 1)
        rows = {names[k]: getattr(parts, k)[i] for k in names}
        norms = {names[k]: float(parts.norms[k][i]) for k in names}
        fig = embedding_strips(
            rows,
            norms,
            labels={
                "title": t("bert_inputs.strips_title", token=parts.tokens[i], i=i),
                "dim": t("bert_inputs.dim"),
                "norm": t("bert_inputs.norm"),
                "scale_note": t("bert_inputs.strip_scale"),
            },
        )
        figures.show(
            fig,
            key=f"{key}.strips",
            filename="embedding-strips",
            data=[
                {"dimension": d, **{k: float(getattr(parts, k)[i][d]) for k in names}}
                for d in range(parts.token.shape[1])
            ],
        )
        c = st.columns(3)
        c[0].metric(t("bert_inputs.m_mean"), f"{parts.ln_mean[i]:.4f}")
        c[1].metric(t("bert_inputs.m_std"), f"{parts.ln_std[i]:.4f}")
        c[2].metric(t("bert_inputs.m_ln_norm"), f"{parts.norms['normed'][i]:.4f}")
    fig = norms_figure(
        parts.tokens,
        {names[k]: parts.norms[k] for k in names},
        labels={"title": t("bert_inputs.norms_title"), "y": t("bert_inputs.norm")},
    )
    figures.show(fig, key=key, data=parts.table, filename="embedding-norms")
    return parts


text_block("embedding-sum")


# -- BERT's pre-training (lesson 7) ------------------------------------------------------------


def _action_names() -> dict[str, str]:
    return {
        a: t(f"bert_outputs.action_{a.replace(' ', '_')}") for a in ("special", "not chosen", "mask", "random", "keep")
    }


@widget("mask-simulator")
def mask_simulator(key: str, *, text: str, seed: int, prob: float = 0.15, stats: bool = False):
    """BERT's 15 % / 80-10-10 masking of a text; with ``stats``, the counts and 1,000-run rates."""
    import streamlit as st

    from core.bert import masking_rates, simulate_masking
    from core.figures.bert import masking_figure
    from ui import figures

    bundle = _bundle()
    r = simulate_masking(bundle, text, seed=int(seed), prob=float(prob), max_length=SHOW_TOKENS)
    _capped(r.truncated, t("bert_outputs.more"))
    actions = _action_names()
    fig = masking_figure(
        r.original,
        r.tokens,
        r.actions,
        action_names=actions,
        labels={
            "title": t("bert_outputs.mlm_title"),
            "original": t("bert_outputs.row_original"),
            "input": t("bert_outputs.row_input"),
        },
    )
    figures.show(fig, key=key, data=r.table, filename="mlm-masking")
    if stats:
        cols = st.columns(4)
        for col, a in zip(cols, ("mask", "random", "keep", "not chosen")):
            col.metric(actions[a], r.counts[a])
        rates = masking_rates(bundle, text, runs=1000, seed=int(seed), prob=float(prob), max_length=SHOW_TOKENS)
        st.caption(
            t(
                "bert_outputs.rates",
                runs=rates["runs"],
                chosen=f"{rates['chosen_rate']:.1%}",
                mask=f"{rates['mask_rate']:.1%}",
                random=f"{rates['random_rate']:.1%}",
                keep=f"{rates['keep_rate']:.1%}",
                prob=f"{prob:.0%}",
            )
        )
    return r


@block("mask-simulator")
def _mask_simulator_block(args: dict, key: str) -> None:
    text = text_box(t("widgets.text"), f"{key}.text", args["text"])
    if text is None:
        return
    seed = seed_input(t("widgets.seed"), f"{key}.seed", args["seed"])
    draw("mask-simulator", f"{key}.fig", text=text, seed=seed)


# -- Megatron (lesson 8) -----------------------------------------------------------------------


def megatron_labels(*keys: str, **slots: str) -> dict:
    """Figure labels of lesson 8, translated (megatron.fig_<key>; slot=key for a label whose
    string has another name, as x="share")."""
    return t_keys("megatron.fig_", *keys, **slots)


@widget("parallel-split")
def parallel_split(key: str, *, shards: dict):
    """Which rows and columns of each weight every tensor-parallel rank holds."""
    from core.figures import megatron as mfig
    from ui import figures

    figures.show(
        mfig.shard_map(shards, labels=megatron_labels("rank", "rows", "cols", "local")),
        key=key,
        filename="tensor-parallel-shards",
        data=[
            {"rank": int(rank), **{k: s[k] for k in ("name", "global_shape", "local_shape", "split_dim", "ranges")}}
            for rank, ss in shards.items()
            for s in ss
        ],
    )


@block("parallel-split")
def _parallel_split_block(args: dict, key: str) -> None:
    import streamlit as st

    from core.megatron.layers import shard_layout

    ranks = st.segmented_control(t("widgets.ranks"), list(RANKS.choices), default=args["ranks"], key=f"{key}.ranks")
    draw("parallel-split", f"{key}.fig", shards=shard_layout(int(ranks or args["ranks"])))


@widget("pipeline-schedule")
def pipeline_schedule(key: str, *, schedule: str, stages: int, microbatches: int, chunks: int = 1):
    """A pipeline schedule's timeline, its measured bubble and the paper's formula for it."""
    import streamlit as st

    from core.figures import megatron as mfig
    from core.megatron.schedules import timeline
    from ui import figures

    kind, p, m = schedule, int(stages), int(microbatches)
    v = int(chunks) if kind == "interleaved" else 1
    if kind == "interleaved" and m % p:  # interleaving needs whole rounds of p micro-batches
        m = max(p, (m // p) * p)
        st.warning(t("megatron.m_rounded", m=m, p=p))
    tl = timeline(kind, p, m, v)
    labels = megatron_labels("device", "forward", "backward", "microbatch", "chunk", "stage", "time")
    labels["title"] = t("megatron.timeline_title", kind=t(f"megatron.sched_{kind}"), p=p, m=m, v=v)
    figures.show(
        mfig.pipeline_figure(tl, labels=labels), key=key, filename=f"pipeline-{kind}-p{p}-m{m}-v{v}", data=tl["ops"]
    )
    k = st.columns(3)
    k[0].metric(t("megatron.bubble_measured"), f"{tl['measured_bubble_fraction']:.4f}")
    from core.megatron.calculators import bubble

    k[1].metric(t("megatron.bubble_formula", f=bubble(p, m, v)["formula"]), f"{tl['formula_bubble_fraction']:.4f}")
    k[2].metric(t("megatron.idle_share"), f"{tl['idle_share_of_iteration']:.1%}")
    st.caption(t("megatron.pipeline_caption", peak=tl["peak_in_flight"]))
    return tl


@block("pipeline-schedule")
def _pipeline_schedule_block(args: dict, key: str) -> None:
    draw(
        "pipeline-schedule",
        f"{key}.fig",
        schedule=args["schedule"],
        stages=args["stages"],
        microbatches=args["microbatches"],
        chunks=args["chunks"],
    )


# -- Bahdanau (lesson 3) -----------------------------------------------------------------------


@widget("bahdanau-alignment")
def bahdanau_alignment(key: str, *, trace, step: int | None = None):
    """The committed date model's alignment α_ij for one decoded input; ``step`` framed."""
    import streamlit as st

    from core.figures import seq2seq as figs
    from ui import figures

    tr = trace
    fig = figs.alignment(
        tr.weights,
        tr.source,
        tr.outputs,
        step=step,
        labels={"title": t("bahdanau.align_title"), "x": t("bahdanau.align_x"), "y": t("bahdanau.align_y")},
    )
    rows = [
        {"i": i + 1, "y_i": y, "j": j + 1, "x_j": x, "alpha_ij": a}
        for i, (y, row) in enumerate(zip(tr.outputs, tr.weights))
        for j, (x, a) in enumerate(zip(tr.source, row))
    ]
    figures.show(fig, key=key, data=rows, filename="alignment")
    st.caption(t("bahdanau.align_caption"))


@block("bahdanau-alignment")
def _bahdanau_alignment_block(args: dict, key: str) -> None:
    from ui.seq2seq import checked_input, date_trace

    text = checked_input("date", t("widgets.date"), f"{key}.text", args["text"])
    if text is not None:
        draw("bahdanau-alignment", f"{key}.fig", trace=date_trace(text))


# -- self-attention and multi-head attention (lessons 4-5) -------------------------------------


@widget("attention-heatmap")
def attention_heatmap(key: str, *, expl, query: int | None = None, scaled: bool = True, title: str | None = None):
    """One head's weights for every query and key; ``query``'s row framed."""
    from core.figures.attention import head_heatmap
    from ui import figures

    fig = head_heatmap(
        expl,
        highlight_row=query,
        scaled=scaled,
        labels={
            "title": title or t("self_attention.heatmap_title", layer=expl.layer, head=expl.head),
            "x": t("self_attention.heatmap_x"),
            "y": t("self_attention.heatmap_y"),
        },
    )
    figures.show(fig, key=key, data=expl.matrix_wide, filename=f"attention-layer{expl.layer}-head{expl.head}")


def _sentence(args: dict, key: str) -> str | None:
    return text_box(t("widgets.text"), f"{key}.text", args["text"])


@block("attention-heatmap")
def _attention_heatmap_block(args: dict, key: str) -> None:
    import streamlit as st

    from core.attention import MAX_TOKENS, explain_head
    from ui import lesson

    text = _sentence(args, key)
    if text is None:
        return
    bundle = _bundle()
    left, right = st.columns(2)
    layer = left.number_input(
        t("widgets.layer"), 0, bundle.num_layers - 1, min(args["layer"], bundle.num_layers - 1), key=f"{key}.layer"
    )
    head = right.number_input(
        t("widgets.head"), 0, bundle.num_heads - 1, min(args["head"], bundle.num_heads - 1), key=f"{key}.head"
    )
    expl = explain_head(bundle, text, int(layer), int(head))
    lesson.tokens_capped(expl.n_tokens_full > MAX_TOKENS, expl.n_tokens_full, MAX_TOKENS)
    draw("attention-heatmap", f"{key}.fig", expl=expl)


@widget("head-grid")
def head_grid(key: str, *, enc, selected: tuple[int, int] | None = None):
    """Every layer × head as a small heatmap; ``selected`` framed. Downloads are built on click."""
    import streamlit as st

    from core.attention import weights_table
    from core.figures.attention import layer_head_grid
    from ui import figures

    st.caption(t("multi_head.grid_caption", layers=enc.num_layers, heads=enc.num_heads))
    from ui.attention import grid_labels

    figures.show(layer_head_grid(enc, selected=selected, labels=grid_labels()), key=key, filename="all-heads")
    figures.download_buttons(key, lambda: weights_table(enc), "all-heads")


@block("head-grid")
def _head_grid_block(args: dict, key: str) -> None:
    from core.attention import MAX_TOKENS, encode
    from ui import lesson

    text = _sentence(args, key)
    if text is None:
        return
    enc = encode(_bundle(), text)
    lesson.tokens_capped(enc.n_tokens_full > MAX_TOKENS, enc.n_tokens_full, MAX_TOKENS)
    draw("head-grid", f"{key}.fig", enc=enc)


@widget("worked-example")
def worked_example(key: str, *, example: str):
    from ui.worked import worked_example as show

    show({"example": example}, key)


@block("worked-example")
def _worked_example_block(args: dict, key: str) -> None:
    worked_example(key, example=args["example"])
