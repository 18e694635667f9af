"""The BERT model shared by lessons 4–7: cached loading, the sidebar picker, and its notices.

One model per source per process (st.cache_resource, shared read-only by every session); which
source a session uses lives in st.session_state["bert.source"] ("" = the embedded default).
Nothing here imports torch at import time: the sidebar calls model_picker() on every page,
including the home page, and only a BERT page (or a click on "Load") pays for torch.
"""
from __future__ import annotations

import streamlit as st

from ui.i18n import t

SOURCE_KEY = "bert.source"          # the source in use for this session
LOADED_KEY = "bert.loaded"          # what the last BERT page actually got: name, heads, notice code
INPUT_KEY = "bert.source_input"     # the sidebar's text box


@st.cache_resource(show_spinner=False, max_entries=1)
def _default_bundle():
    from core.bert import load

    return load("")


@st.cache_resource(show_spinner=False, max_entries=3)
def _bundle_for(source: str):
    from core.bert import load

    return load(source, fallback=_default_bundle())


def get_bundle(source: str | None = ""):
    """The bundle for `source` ("" or None = the embedded default), loaded once per process."""
    source = (source or "").strip()
    if not source:
        return _default_bundle()
    return _bundle_for(source)


def current_source() -> str:
    return st.session_state.get(SOURCE_KEY, "")


def _remember(bundle) -> None:
    st.session_state[LOADED_KEY] = {"name": bundle.name, "heads": sorted(bundle.heads),
                                    "code": bundle.notice_code, "source": bundle.source,
                                    "layers": bundle.num_layers, "heads_n": bundle.num_heads,
                                    "hidden": bundle.hidden_size}


def current_bundle(show_notice: bool = True):
    """The bundle this session chose; shows a translated notice when it fell back to the default."""
    with st.spinner(t("bert.loading")):
        bundle = get_bundle(current_source())
    _remember(bundle)
    if show_notice and bundle.notice_code:
        show_fallback(bundle)
    return bundle


def show_fallback(bundle) -> None:
    """Why the asked-for model is not the one in use. The asked-for text is user input: plain text only."""
    code = bundle.notice_code
    message = t(f"bert.notice.{code}") if t(f"bert.notice.{code}") != f"bert.notice.{code}" \
        else t("bert.notice.load_failed")
    st.warning(message, icon=":material/swap_horiz:")
    st.text(bundle.notice or "")


def display_name(bundle_or_name) -> str:
    """The model's name for the screen: the embedded default's name is translated."""
    from core.bert.loader import EMBEDDED_NAME

    name = getattr(bundle_or_name, "name", bundle_or_name)
    return t("bert.default_name") if name == EMBEDDED_NAME else name


def head_text(heads) -> str:
    heads = set(heads)
    if not heads:
        return t("bert.heads_none")
    return ", ".join(t(f"bert.head_{h}") for h in ("mlm", "nsp") if h in heads)


def _load_clicked() -> None:
    st.session_state[SOURCE_KEY] = st.session_state.get(INPUT_KEY, "").strip()[:300]


def _reset_clicked() -> None:
    st.session_state[SOURCE_KEY] = ""
    st.session_state[INPUT_KEY] = ""


def model_picker() -> None:
    """Sidebar block: the BERT model in use and a box to choose another (folder or Hugging Face id).

    Call it inside `with st.sidebar:`. It never imports torch: the model loads on a BERT page.
    """
    with st.expander(t("bert.picker_title"), expanded=False):
        loaded = st.session_state.get(LOADED_KEY)
        if loaded and loaded.get("source", "") == current_source():
            st.caption(t("bert.in_use"))
            st.text(display_name(loaded["name"]))
            st.caption(t("bert.shape", layers=loaded["layers"], heads=loaded["heads_n"], hidden=loaded["hidden"]))
            st.caption(t("bert.heads_label") + ": " + head_text(loaded["heads"]))
            if loaded.get("code"):
                st.caption(t("bert.fell_back"))
        else:
            st.caption(t("bert.in_use"))
            st.text(current_source() or t("bert.default_name"))
            st.caption(t("bert.loads_later"))
        st.text_input(t("bert.source_label"), key=INPUT_KEY, placeholder=t("bert.source_placeholder"),
                      help=t("bert.source_help"), max_chars=300)
        left, right = st.columns(2)
        left.button(t("bert.load"), key="bert.load_button", on_click=_load_clicked, type="primary")
        right.button(t("bert.reset"), key="bert.reset_button", on_click=_reset_clicked,
                     disabled=not current_source())


@st.cache_data(show_spinner=False, max_entries=16)
def param_count(vocab: int, hidden: int, layers: int, heads: int, intermediate: int, max_position: int,
                type_vocab: int):
    """core.bert.count for one shape, cached (it builds a model on the meta device: ~0.5 s)."""
    from core.bert import count

    return count(vocab=vocab, hidden=hidden, layers=layers, heads=heads, intermediate=intermediate,
                 max_position=max_position, type_vocab=type_vocab)


@st.cache_resource(show_spinner=False, max_entries=2)
def sentiment(source: str):
    """(scorer, held-out result) for the model of `source`: the head is fitted once per process."""
    from core.bert import SentimentScorer, sentiment_factor

    scorer = SentimentScorer(get_bundle(source))
    return scorer, sentiment_factor(scorer)


def model_in_use(with_heads: bool = False):
    """The model a BERT lesson is about to use, named with its shape (and heads); returns it."""
    bundle = current_bundle()
    line = f"{display_name(bundle)}  ·  {t('bert.shape', layers=bundle.num_layers, heads=bundle.num_heads, hidden=bundle.hidden_size)}"
    if with_heads:
        line += f"  ·  {t('bert.heads_label')}: {head_text(bundle.heads)}"
    st.caption(t("bert.in_use"))
    st.text(line)
    return bundle
