"""Lesson 6: BERT's inputs, on the model in use (layout and widgets only; core.bert computes)."""

import streamlit as st

from core.widgets import SHOW_TOKENS
from ui import figures, lesson, widgets
from ui.bert import current_bundle, display_name, head_text, model_in_use, param_count
from ui.i18n import t

page = lesson.LessonPage("bert-inputs")


def _text(key: str, label_key: str, default_key: str) -> str | None:
    return widgets.text_box(t(label_key), key, t(default_key))


def _capped(truncated: bool, total) -> None:
    lesson.tokens_capped(truncated, total, SHOW_TOKENS)


@page.widget("intro")
def intro():
    model_in_use(with_heads=False)


@page.widget("wordpiece")
def wordpiece():
    text = _text("bert-inputs.wp_text", "bert_inputs.wp_label", "bert_inputs.wp_default")
    if text is not None:
        widgets.draw("tokenizer", "bert-inputs.wordpiece", text=text, details=True)


@page.widget("special-tokens")
def special_tokens():
    from core.bert import encode_pair
    from core.figures.bert import input_rows_figure

    bundle = current_bundle(show_notice=False)
    a = _text("bert-inputs.pair_a", "bert_inputs.a_label", "bert_inputs.a_default")
    b = _text("bert-inputs.pair_b", "bert_inputs.b_label", "bert_inputs.b_default")
    if a is None:
        return
    enc = encode_pair(bundle, a, b, max_length=SHOW_TOKENS)
    _capped(enc.truncated, enc.n_total)
    rows = {
        t("bert_inputs.row_id"): enc.input_ids,
        t("bert_inputs.row_segment"): enc.token_type_ids,
        t("bert_inputs.row_position"): enc.position_ids,
        t("bert_inputs.row_mask"): enc.attention_mask,
    }
    fig = input_rows_figure(
        enc.tokens, rows, colour_row=t("bert_inputs.row_segment"), labels={"title": t("bert_inputs.pair_title")}
    )
    figures.show(fig, key="bert-inputs.pair", data=enc.table, filename="bert-input-pair")


@page.widget("padding")
def padding():
    from core.bert import pad_batch
    from core.figures.bert import batch_figure

    bundle = current_bundle(show_notice=False)
    a = _text("bert-inputs.batch_a", "bert_inputs.batch_a_label", "bert_inputs.batch_a_default")
    b = _text("bert-inputs.batch_b", "bert_inputs.batch_b_label", "bert_inputs.batch_b_default")
    if a is None or b is None:
        return
    batch = pad_batch(bundle, [a, b], max_length=SHOW_TOKENS)
    if batch.truncated:
        lesson.notice("tokens_capped", limit=SHOW_TOKENS, total=t("bert_inputs.more"))
    fig = batch_figure(
        batch.tokens,
        batch.attention_mask,
        labels={
            "title": t("bert_inputs.batch_title"),
            "row": t("bert_inputs.row_sentence"),
            "mask": t("bert_inputs.row_mask"),
        },
    )
    figures.show(fig, key="bert-inputs.batch", data=batch.table, filename="padded-batch")
    st.caption(t("bert_inputs.batch_caption", a=batch.lengths[0], b=batch.lengths[1], width=len(batch.input_ids[0])))


@page.widget("embeddings")
def embeddings():
    a = _text("bert-inputs.emb_a", "bert_inputs.a_label", "bert_inputs.emb_a_default")
    b = _text("bert-inputs.emb_b", "bert_inputs.b_label", "bert_inputs.emb_b_default")
    if a is not None:
        widgets.draw("embedding-sum", "bert-inputs.norms", text=a, text_b=b, per_token=True)


@page.widget("parameters")
def parameters():
    from core.bert import BERT_BASE, BERT_LARGE
    from core.bert.params import config_of, loaded_total
    from core.figures.bert import anatomy_figure, layer_parts_figure

    bundle = current_bundle(show_notice=False)
    name = display_name(bundle)
    name = f"{name} *" if name in ("BERT-base", "BERT-large") else name  # the loaded one keeps its own bar
    shapes = {name: config_of(bundle), "BERT-base": BERT_BASE, "BERT-large": BERT_LARGE}
    counts = {name: param_count(**shape) for name, shape in shapes.items()}
    blocks = {
        name: {
            t("bert_inputs.block_embeddings"): sum(c.embeddings.values()),
            t("bert_inputs.block_encoder"): c.all_layers,
            t("bert_inputs.block_pooler"): c.pooler,
            t("bert_inputs.block_mlm"): c.mlm_head,
            t("bert_inputs.block_nsp"): c.nsp_head,
        }
        for name, c in counts.items()
    }
    fig = anatomy_figure(blocks, labels={"title": t("bert_inputs.anatomy_title"), "x": t("bert_inputs.parameters")})
    figures.show(
        fig,
        key="bert-inputs.anatomy",
        filename="bert-parameters",
        data=[{"model": n, **r} for n, c in counts.items() for r in c.rows()],
    )
    cols = st.columns(3)
    for col, (name, c) in zip(cols, counts.items()):
        col.metric(name, f"{c.bert_model_total:,}", help=t("bert_inputs.total_help", pre=f"{c.pretraining_total:,}"))
    st.caption(t("bert_inputs.loaded_check", n=f"{loaded_total(bundle):,}", heads=head_text(bundle.heads)))
    base = counts["BERT-base"]
    layer = {t(f"bert_inputs.part_{k}"): v for k, v in base.layer.items()}
    fig = layer_parts_figure(layer, labels={"title": t("bert_inputs.layer_title", total=f"{base.layer_total:,}")})
    figures.show(
        fig,
        key="bert-inputs.layer",
        data=[{"part": k, "parameters": v} for k, v in base.layer.items()],
        filename="bert-base-layer",
    )
    with lesson.advanced():
        st.caption(t("bert_inputs.cli_caption"))
        st.code(
            "python -m core.bert count --hidden 1024 --layers 24 --heads 16 --intermediate 4096 --json", language="bash"
        )


page.render()
