"""The BERT model shared by lessons 4–7: cached loading, the sidebar picker, and its notices.

One model per source per process (st.cache_resource, shared read-only by every session); which
source a session uses lives in st.session_state["bert.source"] ("" = the embedded default).
Nothing here imports torch at import time: the sidebar calls model_picker() on every page,
including the home page, and only a BERT page (or a click on "Load") pays for torch.
"""

from __future__ import annotations

import streamlit as st

from ui.i18n import t

SOURCE_KEY = "bert.source"  # the source in use for this session
LOADED_KEY = "bert.loaded"  # what the last BERT page actually got: name, heads, notice code
INPUT_KEY = "bert.source_input"  # the sidebar's text box


@st.cache_resource(show_spinner=False, max_entries=1)
def _default_bundle():
    from core.bert.loader import load_default

    return load_default()


@st.cache_resource(show_spinner=False, max_entries=3)
def _bundle_at(folder: str, name: str, source: str):
    """A model from a resolved local folder. load_folder raises on failure, and Streamlit keeps no
    entry for a call that raised: a folder that appears or is fixed later loads on the next try."""
    from pathlib import Path

    from core.bert.loader import load_folder

    return load_folder(Path(folder), name, source)


def get_bundle(source: str | None = ""):
    """The bundle for `source` ("" or None = the default), loaded once per process.

    The network step (a Hugging Face id not in the cache) runs here, outside any cache lock and
    under the loader's deadline: a student choosing a black-holed id waits at most that long, and
    nobody else choosing it waits at all (they get the fallback at once)."""
    from core.bert.loader import resolve, with_notice

    source = (source or "").strip()
    if not source:
        return _default_bundle()
    try:
        folder, name = resolve(source)
        return _bundle_at(str(folder), name, source)
    except Exception as exc:  # noqa: BLE001 - SourceError or a broken file: the lesson gets the default
        return with_notice(_default_bundle(), source, exc)


def current_source() -> str:
    return st.session_state.get(SOURCE_KEY, "")


def _remember(bundle) -> None:
    st.session_state[LOADED_KEY] = {
        "name": bundle.name,
        "heads": sorted(bundle.heads),
        "code": bundle.notice_code,
        "source": bundle.source,
        "layers": bundle.num_layers,
        "heads_n": bundle.num_heads,
        "hidden": bundle.hidden_size,
    }


_READY: set[str] = set()  # sources this process has loaded (the spinner is for a load, not a lookup)


def current_bundle(show_notice: bool = True):
    """The bundle this session chose; shows a translated notice when it fell back to the default.

    The loading spinner shows only while a source loads for the first time: st.spinner starts a
    thread, which cost ~5 ms of every rerun of lessons 4-7 (measured with py-spy under load)."""
    source = current_source()
    if source in _READY:
        bundle = get_bundle(source)  # cached by st.cache_resource; a rare eviction reloads unannounced
    else:
        with st.spinner(t("bert.loading")):
            bundle = get_bundle(source)
        if not bundle.notice_code and len(_READY) < 64:  # a fallback tries its source again next time
            _READY.add(source)
    _remember(bundle)
    if show_notice and bundle.notice_code:
        show_fallback(bundle)
    return bundle


def show_fallback(bundle) -> None:
    """Why the asked-for model is not the one in use. The asked-for text is user input: plain text only."""
    code = bundle.notice_code
    message = (
        t(f"bert.notice.{code}") if t(f"bert.notice.{code}") != f"bert.notice.{code}" else t("bert.notice.load_failed")
    )
    st.warning(message, icon=":material/swap_horiz:")
    st.text(bundle.notice or "")


def display_name(bundle_or_name) -> str:
    """The model's name for the screen (plain text: show it with st.text, or through safe_name in
    Markdown); the embedded model's and the project's own model's names are translated."""
    from core.bert.loader import DEFAULT_MODEL_NAME, EMBEDDED_NAME

    name = str(getattr(bundle_or_name, "name", bundle_or_name))
    return {EMBEDDED_NAME: t("bert.default_name"), DEFAULT_MODEL_NAME: t("bert.lab_name")}.get(name, name)


def safe_name(bundle_or_name) -> str:
    """display_name escaped for Markdown strings (st.caption, st.markdown): a folder or hub name like
    `__x__` or `[a](b)` then shows as the text it is."""
    from ui.lesson import plain

    return plain(display_name(bundle_or_name))


def head_text(heads) -> str:
    heads = set(heads)
    if not heads:
        return t("bert.heads_none")
    return ", ".join(t(f"bert.head_{h}") for h in ("mlm", "nsp") if h in heads)


CHOICE_KEY = "bert.choice"  # the sidebar's list of the models on this machine (labels)
CHOICE_MAP_KEY = "bert.choice_map"  # label -> source, for the list's callback


def choices() -> list[str]:
    """Sources the picker lists: the default, the embedded MiniLM when it is not the default, and
    every model folder in the instructor's models directories (names only, never paths)."""
    from core.bert.loader import DEFAULT_MODEL_NAME, EMBEDDED_SOURCE, default_model_dir, local_models

    listed = [""]
    if (default_model_dir() / "config.json").is_file():
        listed.append(EMBEDDED_SOURCE)
    return listed + [n for n in local_models() if n not in (DEFAULT_MODEL_NAME, EMBEDDED_SOURCE)]


def choice_label(source: str) -> str:
    from core.bert.loader import DEFAULT_MODEL_NAME, EMBEDDED_SOURCE, default_model_dir

    if source == EMBEDDED_SOURCE:
        return t("bert.choice_embedded")
    if source == "":
        lab = (default_model_dir() / "config.json").is_file()
        return t("bert.choice_default", name=t("bert.lab_name") if lab else t("bert.choice_embedded"))
    return display_name(source) if source != DEFAULT_MODEL_NAME else t("bert.lab_name")


def _choice_changed() -> None:
    picked = st.session_state.get(CHOICE_KEY)
    st.session_state[SOURCE_KEY] = st.session_state.get(CHOICE_MAP_KEY, {}).get(picked, "")
    st.session_state[INPUT_KEY] = ""


def _load_clicked() -> None:
    st.session_state[SOURCE_KEY] = st.session_state.get(INPUT_KEY, "").strip()[:300]
    st.session_state.pop(CHOICE_KEY, None)


def _reset_clicked() -> None:
    st.session_state[SOURCE_KEY] = ""
    st.session_state[INPUT_KEY] = ""
    st.session_state.pop(CHOICE_KEY, None)


def model_picker() -> None:
    """Sidebar block: the BERT model in use, the models on this machine, and a box for a Hugging Face id.

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
            st.text(choice_label(current_source()))
            st.caption(t("bert.loads_later"))
        # The options are the labels themselves (no format_func): what the browser sends back is
        # then a label of this run's language, mapped back to a source here.
        labels = {choice_label(src): src for src in choices()}
        st.session_state[CHOICE_MAP_KEY] = labels
        current = current_source()
        if st.session_state.get(CHOICE_KEY) not in labels:
            st.session_state.pop(CHOICE_KEY, None)
        if CHOICE_KEY not in st.session_state and current in labels.values():
            st.session_state[CHOICE_KEY] = next(k for k, v in labels.items() if v == current)
        st.selectbox(t("bert.choice_label"), list(labels), key=CHOICE_KEY, on_change=_choice_changed)
        st.text_input(
            t("bert.source_label"),
            key=INPUT_KEY,
            placeholder=t("bert.source_placeholder"),
            help=t("bert.source_help"),
            max_chars=300,
        )
        left, right = st.columns(2)
        left.button(t("bert.load"), key="bert.load_button", on_click=_load_clicked, type="primary")
        right.button(t("bert.reset"), key="bert.reset_button", on_click=_reset_clicked, disabled=not current_source())


@st.cache_data(show_spinner=False, max_entries=16)
def param_count(**shape: int):
    """core.bert.count for one shape, cached (it builds a model on the meta device: ~0.5 s)."""
    from core.bert import count

    return count(**shape)


@st.cache_resource(show_spinner=False, max_entries=4)
def _sentiment(path: str, source: str, lang: str):
    from core.bert import SentimentScorer, sentiment_factor
    from core.bert.sentiment import load_posts, posts_file

    scorer = SentimentScorer(get_bundle(source), load_posts(posts_file(lang)))
    return scorer, sentiment_factor(scorer)


def sentiment(source: str, lang: str):
    """(scorer, held-out result) for the model of `source` on the posts of `lang`: the head is fitted
    once per model, language and process. Keyed by the model actually loaded, so a source that fell
    back shares the default's scorer, and nothing fitted on the fallback stays attached to a source
    that loads later."""
    bundle = get_bundle(source)
    effective = "" if bundle.notice_code or bundle.is_default else bundle.source
    return _sentiment(bundle.path, effective, lang)


def model_in_use(with_heads: bool = False):
    """The model a BERT lesson is about to use, named with its shape (and heads); returns it."""
    bundle = current_bundle()
    line = f"{display_name(bundle)}  ·  {t('bert.shape', layers=bundle.num_layers, heads=bundle.num_heads, hidden=bundle.hidden_size)}"
    if with_heads:
        line += f"  ·  {t('bert.heads_label')}: {head_text(bundle.heads)}"
    st.caption(t("bert.in_use"))
    st.text(line)
    return bundle
