"""Lesson 6: BERT's inputs, on the model in use (layout and widgets only; core.bert computes)."""
import streamlit as st

from ui import figures, lesson
from ui.bert import current_bundle, model_in_use, display_name, head_text, param_count
from ui.i18n import t

page = lesson.LessonPage("bert-inputs")
MAX_CHARS = 2000   # characters kept from a text box
SHOW_TOKENS = 64   # tokens drawn in a figure (the model itself takes up to 512)


def _text(key: str, label_key: str, default_key: str) -> str | None:
    return lesson.text_box(t(label_key), key=key, value=t(default_key), max_chars=MAX_CHARS)


def _capped(truncated: bool, total) -> None:
    lesson.tokens_capped(truncated, total, SHOW_TOKENS)


@page.widget("intro")
def intro():
    model_in_use(with_heads=False)


@page.widget("wordpiece")
def wordpiece():
    from core.bert import tokenize
    from core.figures.bert import wordpiece_figure

    bundle = current_bundle(show_notice=False)
    text = _text("bert-inputs.wp_text", "bert_inputs.wp_label", "bert_inputs.wp_default")
    if text is None:
        return
    view = tokenize(bundle, text, max_tokens=SHOW_TOKENS)
    _capped(view.truncated, view.n_total)
    if not view.tokens:
        lesson.notice("empty")
        return
    cols = st.columns(4)
    cols[0].metric(t("bert_inputs.m_chars"), len(text))
    cols[1].metric(t("bert_inputs.m_pieces"), view.n_total)
    cols[2].metric(t("bert_inputs.m_unknown"), sum(view.unknown))
    cols[3].metric(t("bert_inputs.m_cjk"), sum(view.cjk))
    fig = wordpiece_figure(view.tokens, view.ids, view.word_index, view.continuation,
                           title=t("bert_inputs.wp_title"), id_label=t("bert_inputs.row_id"),
                           piece_label=t("bert_inputs.row_piece"))
    figures.show(fig, key="bert-inputs.wordpiece", data=view.table(), filename="wordpiece")
    split = view.split_words
    if split:
        st.caption(t("bert_inputs.wp_split_caption"))
        st.dataframe([{t("bert_inputs.col_word"): w, t("bert_inputs.col_pieces"): "  ".join(p)} for w, p in split],
                     hide_index=True, width="stretch")


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
    rows = {t("bert_inputs.row_id"): enc.input_ids, t("bert_inputs.row_segment"): enc.token_type_ids,
            t("bert_inputs.row_position"): enc.position_ids, t("bert_inputs.row_mask"): enc.attention_mask}
    fig = input_rows_figure(enc.tokens, rows, title=t("bert_inputs.pair_title"),
                            colour_row=t("bert_inputs.row_segment"))
    figures.show(fig, key="bert-inputs.pair", data=enc.table(), filename="bert-input-pair")


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
    fig = batch_figure(batch.tokens, batch.attention_mask, title=t("bert_inputs.batch_title"),
                       row_label=t("bert_inputs.row_sentence"), mask_label=t("bert_inputs.row_mask"))
    figures.show(fig, key="bert-inputs.batch", data=batch.table(), filename="padded-batch")
    st.caption(t("bert_inputs.batch_caption", a=batch.lengths[0], b=batch.lengths[1],
                 width=len(batch.input_ids[0])))


@page.widget("embeddings")
def embeddings():
    from core.bert import embedding_parts
    from core.figures.bert import embedding_strips, norms_figure

    bundle = current_bundle(show_notice=False)
    a = _text("bert-inputs.emb_a", "bert_inputs.a_label", "bert_inputs.emb_a_default")
    b = _text("bert-inputs.emb_b", "bert_inputs.b_label", "bert_inputs.emb_b_default")
    if a is None:
        return
    parts = embedding_parts(bundle, a, b, max_length=SHOW_TOKENS)
    _capped(parts.encoded.truncated, parts.encoded.n_total)
    names = {"token": t("bert_inputs.part_token"), "segment": t("bert_inputs.part_segment"),
             "position": t("bert_inputs.part_position"), "summed": t("bert_inputs.part_sum"),
             "normed": t("bert_inputs.part_ln")}
    options = list(range(len(parts.tokens)))
    default = 1 if len(options) > 1 else 0
    i = st.selectbox(t("bert_inputs.pick_token"), options, index=default, key="bert-inputs.emb_token",
                     format_func=lambda j: f"{j}: {parts.tokens[j]}")
    i = min(int(i or 0), len(options) - 1)
    rows = {names[k]: getattr(parts, k)[i] for k in names}
    norms = {names[k]: float(parts.norms[k][i]) for k in names}
    fig = embedding_strips(rows, norms, title=t("bert_inputs.strips_title", token=parts.tokens[i], i=i),
                           dim_label=t("bert_inputs.dim"), norm_label=t("bert_inputs.norm"),
                           scale_note=t("bert_inputs.strip_scale"))
    figures.show(fig, key="bert-inputs.strips", filename="embedding-strips",
                 data=[{"dimension": d, **{k: float(getattr(parts, k)[i][d]) for k in names}}
                       for d in range(parts.token.shape[1])])
    c = st.columns(3)
    c[0].metric(t("bert_inputs.m_mean"), f"{parts.ln_mean[i]:.4f}")
    c[1].metric(t("bert_inputs.m_std"), f"{parts.ln_std[i]:.4f}")
    c[2].metric(t("bert_inputs.m_ln_norm"), f"{parts.norms['normed'][i]:.4f}")
    fig = norms_figure(parts.tokens, {names[k]: parts.norms[k] for k in names}, title=t("bert_inputs.norms_title"),
                       y_title=t("bert_inputs.norm"))
    figures.show(fig, key="bert-inputs.norms", data=parts.table(), filename="embedding-norms")


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
    blocks = {name: {t("bert_inputs.block_embeddings"): sum(c.embeddings.values()),
                     t("bert_inputs.block_encoder"): c.all_layers, t("bert_inputs.block_pooler"): c.pooler,
                     t("bert_inputs.block_mlm"): c.mlm_head, t("bert_inputs.block_nsp"): c.nsp_head}
              for name, c in counts.items()}
    fig = anatomy_figure(blocks, title=t("bert_inputs.anatomy_title"), x_title=t("bert_inputs.parameters"))
    figures.show(fig, key="bert-inputs.anatomy", filename="bert-parameters",
                 data=[{"model": n, **r} for n, c in counts.items() for r in c.rows()])
    cols = st.columns(3)
    for col, (name, c) in zip(cols, counts.items()):
        col.metric(name, f"{c.bert_model_total:,}", help=t("bert_inputs.total_help", pre=f"{c.pretraining_total:,}"))
    st.caption(t("bert_inputs.loaded_check", n=f"{loaded_total(bundle):,}", heads=head_text(bundle.heads)))
    base = counts["BERT-base"]
    layer = {t(f"bert_inputs.part_{k}"): v for k, v in base.layer.items()}
    fig = layer_parts_figure(layer, title=t("bert_inputs.layer_title", total=f"{base.layer_total:,}"))
    figures.show(fig, key="bert-inputs.layer", data=[{"part": k, "parameters": v} for k, v in base.layer.items()],
                 filename="bert-base-layer")
    with lesson.advanced():
        st.caption(t("bert_inputs.cli_caption"))
        st.code("python -m core.bert count --hidden 1024 --layers 24 --heads 16 --intermediate 4096 --json",
                language="bash")


page.render()
