"""Widgets shared by lessons 4 and 5: the sentence box with presets, layer/head/token pickers,
notices, and the translated labels the figure builders take. No tensor math here.
"""

from __future__ import annotations

import streamlit as st

from core.widgets import MAX_CHARS
from ui import figures, lesson
from ui.bert import current_bundle, safe_name
from ui.i18n import t, t_keys

PRESETS = ("p1", "p2", "p3", "p4", "p5", "p6")  # each language lists its own sentences first
CUSTOM = "custom"
# The first picture: layer 3, head 1 (clamped into range on a smaller model); what that head does on
# the model in use is for the student to see, not for this code to assume.
DEFAULT_LAYER, DEFAULT_HEAD = 3, 1
DEFAULT_QUERIES = ("it", "它")  # the query starts on the pronoun of the classic pair, in either language


def deferred_downloads(key: str, make_frame, filename: str) -> None:
    """CSV/JSON buttons whose data is built only when clicked (every weight of every head)."""
    figures.download_buttons(key, make_frame, filename)


def preset_text(key: str) -> str:
    return t(f"self_attention.presets.{key}")


def _apply_preset(prefix: str) -> None:
    choice = st.session_state.get(f"{prefix}.preset")
    if choice and choice != CUSTOM:
        st.session_state[f"{prefix}.text"] = preset_text(choice)


def sentence(prefix: str, *, label: str | None = None, show: bool = True) -> str:
    """A preset picker and a text box; returns the raw text (core cleans and caps it). With
    ``show=False`` nothing is drawn: the session's text, or the first preset."""
    text_key = f"{prefix}.text"
    if not show:
        return st.session_state.get(text_key, preset_text(PRESETS[0]))
    if text_key not in st.session_state:
        st.session_state[text_key] = preset_text(PRESETS[0])
    # labels are formatted now, in this run's language: a format_func may be called later, outside it
    names = {k: preset_text(k) for k in PRESETS} | {CUSTOM: t("self_attention.preset_custom")}
    st.selectbox(
        t("self_attention.preset_label"),
        list(PRESETS) + [CUSTOM],
        key=f"{prefix}.preset",
        format_func=names.__getitem__,
        on_change=_apply_preset,
        args=(prefix,),
    )
    return st.text_area(label or t("self_attention.input_label"), key=text_key, height=80)


def sentence_b(prefix: str, *, show: bool = True) -> str | None:
    """The optional sentence B (lesson 5): None unless the pair toggle is on."""
    key = f"{prefix}.text_b"
    if not show:
        return (
            st.session_state.get(key, t("multi_head.text_b_default"))
            if st.session_state.get(f"{prefix}.pair")
            else None
        )
    if not st.toggle(t("multi_head.pair_toggle"), key=f"{prefix}.pair"):
        return None
    if key not in st.session_state:
        st.session_state[key] = t("multi_head.text_b_default")
    return st.text_area(t("multi_head.text_b_label"), key=key, height=68)


def default_layer_head(bundle) -> tuple[int, int]:
    """Where the pickers start: layer 3, head 1, or the model's last when it has fewer."""
    return min(DEFAULT_LAYER, bundle.num_layers - 1), min(DEFAULT_HEAD, bundle.num_heads - 1)


def layer_head(prefix: str, bundle, *, show: bool = True) -> tuple[int, int]:
    """Layer and head pickers side by side."""
    lk, hk = f"{prefix}.layer", f"{prefix}.head"
    layer0, head0 = default_layer_head(bundle)
    if lk not in st.session_state or st.session_state[lk] >= bundle.num_layers:
        st.session_state[lk] = layer0
    if hk not in st.session_state or st.session_state[hk] >= bundle.num_heads:
        st.session_state[hk] = head0
    if not show:
        return int(st.session_state[lk]), int(st.session_state[hk])
    left, right = st.columns(2)
    layer = left.selectbox(t("self_attention.layer"), list(range(bundle.num_layers)), key=lk)
    head = right.selectbox(t("self_attention.head"), list(range(bundle.num_heads)), key=hk)
    return int(layer), int(head)


def query_picker(prefix: str, tokens: list[str], *, show: bool = True) -> int:
    """The query token i; starts on the pronoun ("it", 「它」) when the sentence has one. Tokens are
    shown as plain text. The picker is rebuilt when the tokens change (a kept index would name a
    token of the old sentence)."""
    key = lesson.follow_inputs(f"{prefix}.query", tokens)
    n = len(tokens)
    if key not in st.session_state or not isinstance(st.session_state[key], int) or st.session_state[key] >= n:
        st.session_state[key] = next((i for i, tok in enumerate(tokens) if tok in DEFAULT_QUERIES), min(1, n - 1))
    if not show:
        return int(st.session_state[key])
    names = [t("self_attention.token_option", i=j, token=tok) for j, tok in enumerate(tokens)]
    i = st.selectbox(t("self_attention.query_token"), list(range(n)), key=key, format_func=names.__getitem__)
    return int(i)


def show_notices(codes, *, n_full: int | None = None, cap: int | None = None, max_chars: int = MAX_CHARS) -> bool:
    """Translated notices for cleaned or capped input. Returns True when the text is empty."""
    for code in codes:
        if code == "tokens_capped":
            lesson.notice(code, limit=cap, total=n_full)
        elif code in ("bertviz_bytes_capped", "bertviz_over_budget"):
            st.warning(t(f"multi_head.{code}"), icon=":material/info:")
        else:
            lesson.notice(code, limit=max_chars)
    return "empty" in codes


def model_intro(page) -> None:
    """Lessons 4 and 5's "intro" step: which model every figure below comes from (shape and d_k)."""
    page.widget("intro")(lambda: model_caption(current_bundle()))


def model_caption(bundle) -> None:
    st.caption(
        t(
            "self_attention.model_caption",
            name=safe_name(bundle),
            layers=bundle.num_layers,
            heads=bundle.num_heads,
            hidden=bundle.hidden_size,
            d_k=bundle.hidden_size // bundle.num_heads,
        )
    )


def head_census(census) -> None:
    """How many heads of the model on screen do what, on this sentence, beside what Clark et al. 2019
    report for BERT-base (core.attention.census counts; our own strings only, no user text)."""
    from core.attention import CENSUS_KINDS, PAPER_COUNTS, PAPER_HEADS, PAPER_LAYERS
    from core.attention.census import BROAD_THRESHOLD

    def ours(kind: str) -> str:
        layers = census.layers(kind)
        if not layers:
            return t("multi_head.census_ours", n=0, total=census.total)
        return t(
            "multi_head.census_ours_layers", n=len(layers), total=census.total, layers=", ".join(str(x) for x in layers)
        )

    def paper(kind: str) -> str:
        if PAPER_COUNTS[kind] is None:
            return t(f"multi_head.census_paper.{kind}")
        return t(
            "multi_head.census_paper_count",
            n=PAPER_COUNTS[kind],
            total=PAPER_HEADS,
            layers=", ".join(str(x) for x in PAPER_LAYERS[kind]),
        )

    cols = [t("multi_head.census_col_kind"), t("multi_head.census_col_model"), t("multi_head.census_col_paper")]
    rows = [
        dict(zip(cols, (t(f"multi_head.census_kind.{k}", broad=BROAD_THRESHOLD), ours(k), paper(k))))
        for k in CENSUS_KINDS + ("broad",)
    ]
    st.markdown("**" + t("multi_head.census_title") + "**")
    st.markdown(lesson.markdown_table(rows))
    sep_layers = " · ".join(f"{layer}: {share:.2f}" for layer, share in enumerate(census.sep_share_by_layer))
    st.caption(
        t(
            "multi_head.census_caption",
            tokens=census.n_tokens,
            threshold=census.threshold,
            broad=BROAD_THRESHOLD,
            sep_layers=sep_layers,
        )
    )


def glass_labels() -> dict[str, str]:
    keys = ("q", "k", "v", "dot", "scaled", "unscaled", "softmax", "output", "dim", "key")
    return {k: t(f"self_attention.lbl_{k}") for k in keys}


def scaling_labels() -> dict[str, str]:
    return {
        "x": "d_k",
        "y": t("self_attention.scaling_y"),
        "with": t("self_attention.scaling_with"),
        "without": t("self_attention.scaling_without"),
        "std": t("self_attention.scaling_std"),
    }


def grid_labels() -> dict[str, str]:
    return {k: t(f"multi_head.grid_{k}") for k in ("layer", "head", "query", "key")}


def tag_names() -> dict[str, str]:
    from core.attention import FALLBACK_TAG, TAG_RULES

    return {tag: t(f"multi_head.tags.{tag}") for tag in [r.tag for r in TAG_RULES] + [FALLBACK_TAG]}


def bertviz_labels() -> dict[str, str]:
    return {
        k: t(f"multi_head.bv.{k}")
        for k in ("layer", "head", "attention", "all", "aa", "bb", "ab", "ba", "heads", "layers", "softmax", "no_token")
    }


def projection_labels() -> dict[str, str]:
    return t_keys("multi_head.lbl_", "concat", "proj", "token", "dim") | {"head": t("multi_head.head")}
