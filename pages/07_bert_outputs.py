"""Lesson 7: BERT's outputs and pre-training, on the model in use (layout and widgets only)."""

import streamlit as st

from core.text import clean
from core.widgets import MAX_CHARS, SHOW_TOKENS
from ui import figures, lesson, state, widgets
from ui.bert import current_bundle, current_source, model_in_use, safe_name, sentiment
from ui.bert_live import live_section
from ui.i18n import t

page = lesson.LessonPage("bert-outputs")
MAX_SENTENCES = 8


def _text(key: str, label_key: str, default_key: str) -> str | None:
    return widgets.text_box(t(label_key), key, t(default_key))


def _lines(key: str, label_key: str, default_key: str, most: int) -> list[str]:
    """A text area, one sentence per line, each line cleaned; at most `most` lines are kept."""
    raw = st.text_area(t(label_key), value=t(default_key), key=key, max_chars=MAX_CHARS * 5)
    codes: list[str] = []
    lines = []
    for line in raw.splitlines():
        c = clean(line, MAX_CHARS)
        codes += [n for n in c.notices if n != "empty" and n not in codes]
        if "empty" not in c.notices:
            lines.append(c.text)
    for code in codes:
        lesson.notice(code, limit=MAX_CHARS)
    if len(lines) > most:
        st.warning(t("bert_outputs.lines_capped", n=most))
    return lines[:most]


def _pick(key: str, options: list[str], targets: list[str], values: list) -> tuple:
    """A list of the lesson's examples (in the page's language) and "my own text": picking an example
    copies it into the text boxes `targets`; the boxes stay editable. Returns the first example."""
    own = t("bert_outputs.example_own")

    def _picked():
        choice = st.session_state.get(key)
        if choice in options:
            value = values[options.index(choice)]
            for target, v in zip(targets, value if isinstance(value, tuple) else (value,)):
                st.session_state[target] = v
                st.session_state[target + "_auto"] = (state.lang(), v)

    st.selectbox(t("bert_outputs.example_label"), options + [own], key=key, on_change=_picked)
    first = values[0]
    return first if isinstance(first, tuple) else (first,)


def _example_box(key: str, label_key: str, default: str) -> str | None:
    """A cleaned text box (ui.lesson.text_box's notices) whose starting value is an example. An example
    the page put there itself, still unedited, follows a change of language."""
    auto = st.session_state.get(key + "_auto")
    if key not in st.session_state or (auto and auto[0] != state.lang() and st.session_state[key] == auto[1]):
        st.session_state[key] = default
        st.session_state[key + "_auto"] = (state.lang(), default)
    c = clean(st.text_input(t(label_key), key=key, max_chars=MAX_CHARS * 5), MAX_CHARS)
    lesson.notices(c.notices, limit=MAX_CHARS)
    return None if "empty" in c.notices else c.text


def _example(key: str, label_key: str, examples: list[str]) -> str | None:
    first = _pick(key + "_pick", examples, [key], examples)[0]
    return _example_box(key, label_key, first)


def _capped(truncated: bool, total) -> None:
    lesson.tokens_capped(truncated, total, SHOW_TOKENS)


def _sentence_capped(bundle, texts: list[str]) -> None:
    """Sentence vectors read the first SENTENCE_MAX_TOKENS tokens of each text: say so when cut."""
    from core.bert.outputs import SENTENCE_MAX_TOKENS, token_lengths

    longest = max(token_lengths(bundle, texts), default=0)
    lesson.tokens_capped(longest > SENTENCE_MAX_TOKENS, longest, SENTENCE_MAX_TOKENS)


@page.widget("intro")
def intro():
    model_in_use(with_heads=True)


@page.inputs("hidden")
def sentence(inp, show: bool) -> dict:
    """The sentence whose hidden states the first two sections show."""
    if show:
        return {"text": _text("bert-outputs.text", "bert_outputs.text_label", "bert_outputs.text_default")}
    c = clean(st.session_state.get("bert-outputs.text", t("bert_outputs.text_default")), MAX_CHARS)
    return {"text": None if "empty" in c.notices else c.text}


@page.widget("hidden")
def hidden(inp):
    from core.bert import hidden_states
    from core.figures import bar_strip
    from core.figures.bert import hidden_figure

    bundle = current_bundle(show_notice=False)
    text = inp.text
    if text is None:
        return
    hs = hidden_states(bundle, text, max_length=SHOW_TOKENS)
    _capped(hs.encoded.truncated, hs.encoded.n_total)
    st.caption(t("bert_outputs.hidden_shape", t_=len(hs.tokens), h=hs.last.shape[1], l=hs.layers.shape[0] - 1))
    fig = hidden_figure(
        hs.last,
        hs.tokens,
        labels={"title": t("bert_outputs.hidden_title"), "x": t("bert_outputs.dim"), "value": t("bert_outputs.value")},
    )
    figures.show(
        fig,
        key="bert-outputs.hidden",
        filename="last-hidden-state",
        data=[
            {"position": i, "token": tok, **{f"d{d}": float(v) for d, v in enumerate(row)}}
            for i, (tok, row) in enumerate(zip(hs.tokens, hs.last))
        ],
    )
    if hs.pooled is None:
        st.info(t("bert_outputs.no_pooler"))
    else:
        fig = bar_strip(hs.pooled, labels={"title": t("bert_outputs.pooled_title"), "value": t("bert_outputs.value")})
        figures.show(
            fig,
            key="bert-outputs.pooled",
            filename="pooled-cls",
            data=[{"dimension": d, "pooled": float(v)} for d, v in enumerate(hs.pooled)],
        )


@page.widget("layers")
def layers(inp):
    from core.bert import hidden_states, layer_trajectory
    from core.figures.bert import trajectory_figure

    bundle = current_bundle(show_notice=False)
    if inp.text is None:
        lesson.notice("empty")
        return
    st.caption(t("bert_outputs.layers_uses_text"))
    st.text(inp.text[:200])
    hs = hidden_states(bundle, inp.text, max_length=SHOW_TOKENS)
    options = list(range(len(hs.tokens)))
    i = st.selectbox(
        t("bert_outputs.pick_token"),
        options,
        index=min(2, len(options) - 1),
        key=lesson.follow_inputs("bert-outputs.layer_token", hs.tokens),
        format_func=lambda j: f"{j}: {hs.tokens[j]}",
    )
    i = min(int(i or 0), len(options) - 1)
    rows = layer_trajectory(hs, i)
    names = {k: t(f"bert_outputs.traj_{k}") for k in ("norm", "change", "cos_prev", "cos_embedding", "layer")}
    fig = trajectory_figure(rows, labels={**names, "title": t("bert_outputs.traj_title", token=hs.tokens[i], i=i)})
    figures.show(fig, key="bert-outputs.trajectory", data=rows, filename="token-through-layers")


@page.widget("similarity")
def similarity_widget():
    from core.bert import similarity
    from core.figures.bert import similarity_figure

    bundle = current_bundle(show_notice=False)
    lines = _lines("bert-outputs.sentences", "bert_outputs.sim_label", "bert_outputs.sim_default", MAX_SENTENCES)
    if len(lines) < 2:
        st.info(t("bert_outputs.sim_need_two"))
        return
    _sentence_capped(bundle, lines)
    sim = similarity(bundle, lines)
    fig = similarity_figure(
        sim, lines, labels={"title": t("bert_outputs.sim_title"), "value": t("bert_outputs.cosine")}
    )
    figures.show(
        fig,
        key="bert-outputs.similarity",
        filename="sentence-similarity",
        data=[
            {"a": lines[i], "b": lines[j], "cosine": float(sim[i, j])}
            for i in range(len(lines))
            for j in range(len(lines))
        ],
    )
    st.caption(t("bert_outputs.sim_method"))


@page.widget("mlm")
def mlm():
    text = _text("bert-outputs.mlm_text", "bert_outputs.mlm_label", "bert_outputs.mlm_default")
    if text is None:
        return
    left, right = st.columns(2)
    seed = widgets.seed_input(t("bert_outputs.seed"), "bert-outputs.seed", 21, container=left)
    with right:
        prob = st.slider(t("bert_outputs.prob"), 0.05, 0.5, 0.15, 0.01, key="bert-outputs.prob")
    widgets.draw("mask-simulator", "bert-outputs.masking", text=text, seed=seed, prob=float(prob), stats=True)


@page.widget("fill-mask")
def fill_mask_widget():
    from core.bert import fill_mask
    from core.figures.bert import topk_figure

    bundle = current_bundle(show_notice=False)
    if "mlm" not in bundle.heads:
        st.info(t("bert_outputs.no_mlm_head", name=t("bert.default_name") if bundle.is_default else "—"))
        st.code("bert-base-uncased", language=None)
        return
    text = _example("bert-outputs.fill_text", "bert_outputs.fill_label", t("bert_outputs.fill_examples").splitlines())
    if text is None:
        return
    res = fill_mask(bundle, text, top_k=5, max_length=SHOW_TOKENS)
    _capped(res.truncated, t("bert_outputs.more"))
    if not res.masks:
        st.info(t("bert_outputs.fill_no_mask"))
        return
    fig = topk_figure(
        res.masks, res.tokens, labels={"title": t("bert_outputs.fill_title"), "value": t("bert_outputs.probability")}
    )
    figures.show(
        fig,
        key="bert-outputs.fill",
        filename="fill-mask",
        data=[{"position": m["position"], **p} for m in res.masks for p in m["top"]],
    )


@page.widget("nsp")
def nsp():
    from core.bert import next_sentence, nsp_pairs
    from core.figures.bert import probs_figure

    bundle = current_bundle(show_notice=False)
    sentences = _lines(
        "bert-outputs.nsp_corpus", "bert_outputs.nsp_corpus_label", "bert_outputs.nsp_corpus_default", 20
    )
    seed = widgets.seed_input(t("bert_outputs.seed"), "bert-outputs.nsp_seed", 1)
    if len(sentences) < 3:
        st.info(t("bert_outputs.nsp_need_three"))
    else:
        pairs = nsp_pairs(sentences, seed=int(seed))
        lesson.table(
            [{"A": p["a"], "B": p["b"], t("bert_outputs.label"): p["label"]} for p in pairs],
            hide_index=True,
            width="stretch",
        )
        st.caption(t("bert_outputs.nsp_count", n=sum(p["label"] == "IsNext" for p in pairs), total=len(pairs)))
    if "nsp" not in bundle.heads:
        st.info(t("bert_outputs.no_nsp_head"))
        st.code("bert-base-uncased", language=None)
        return
    pairs = [tuple(x.strip() for x in line.split("|", 1)) for line in t("bert_outputs.nsp_examples").splitlines()]
    picked = _pick(
        "bert-outputs.nsp_pick", [f"{a}  ⟶  {b}" for a, b in pairs], ["bert-outputs.nsp_a", "bert-outputs.nsp_b"], pairs
    )
    a = _example_box("bert-outputs.nsp_a", "bert_outputs.nsp_a_label", picked[0])
    b = _example_box("bert-outputs.nsp_b", "bert_outputs.nsp_b_label", picked[1])
    if a is None or b is None:
        return
    r = next_sentence(bundle, a, b, max_length=SHOW_TOKENS)
    _capped(r.truncated, t("bert_outputs.more"))
    fig = probs_figure(["IsNext", "NotNext"], [r.is_next, r.not_next], labels={"title": t("bert_outputs.nsp_title")})
    figures.show(fig, key="bert-outputs.nsp", data=[{"IsNext": r.is_next, "NotNext": r.not_next}], filename="nsp")


@page.widget("learn")
def learn():
    live_section(state.lang())


@page.widget("heads")
def heads():
    from core.bert import encode_pair, task_head_params
    from core.figures.bert import task_heads_figure

    bundle = current_bundle(show_notice=False)
    text = _text("bert-outputs.heads_text", "bert_outputs.heads_label", "bert_outputs.heads_default")
    if text is None:
        return
    enc = encode_pair(bundle, text, None, max_length=32)
    _capped(enc.truncated, enc.n_total)
    names = {k: t(f"bert_outputs.head_{k}") for k in ("classification", "labeling", "start", "end")}
    fig = task_heads_figure(enc.tokens, labels={**names, "title": t("bert_outputs.heads_title")})
    figures.show(fig, key="bert-outputs.heads", data=enc.table, filename="task-heads")
    p = task_head_params(bundle.hidden_size, n_classes=3, n_tags=9)
    cols = st.columns(3)
    cols[0].metric(
        t("bert_outputs.head_classification"),
        f"{p['classification']:,}",
        help=t("bert_outputs.head_cls_help", h=bundle.hidden_size),
    )
    cols[1].metric(
        t("bert_outputs.head_labeling"),
        f"{p['labeling']:,}",
        help=t("bert_outputs.head_tag_help", h=bundle.hidden_size),
    )
    cols[2].metric(
        t("bert_outputs.head_qa"), f"{p['span_qa']:,}", help=t("bert_outputs.head_qa_help", h=bundle.hidden_size)
    )


@page.widget("sentiment")
def sentiment_widget():
    from core.bert import score_posts
    from core.bert.sentiment import MAX_UNK, load_posts, posts_file, unk_rate
    from core.figures.bert import SENTIMENT_COLOURS, confusion_figure, factor_figure, probs_figure

    bundle = current_bundle(show_notice=False)
    lang = state.lang()
    posts = load_posts(posts_file(lang))
    rate = unk_rate(
        bundle.tokenizer, [p["text"] for p in posts["train"]] + [p["text"] for d in posts["days"] for p in d["posts"]]
    )
    if rate > MAX_UNK:
        st.warning(
            t("bert_outputs.sent_unreadable", name=safe_name(bundle), rate=f"{rate:.0%}", limit=f"{MAX_UNK:.0%}")
        )
        return
    with st.spinner(t("bert_outputs.sent_fitting")):
        scorer, result = sentiment(current_source(), lang)
    labels = {k: t(f"bert_outputs.sent_{k}") for k in ("positive", "neutral", "negative")}
    cols = st.columns(3)
    cols[0].metric(
        t("bert_outputs.sent_accuracy"),
        f"{result.accuracy:.1%}",
        help=t("bert_outputs.sent_accuracy_help", n=len(result.posts)),
    )
    cols[1].metric(t("bert_outputs.sent_train"), result.n_train)
    cols[2].metric(t("bert_outputs.sent_corr"), f"{result.correlation:.2f}")
    st.caption(t("bert_outputs.sent_model", name=safe_name(bundle)))
    day = {d["date"]: t("bert_outputs.day_label", n=i + 1) for i, d in enumerate(result.days)}
    names = dict(
        labels,
        factor_model=t("bert_outputs.sent_factor_model"),
        factor_human=t("bert_outputs.sent_factor_human"),
        posts=t("bert_outputs.sent_posts"),
        factor=t("bert_outputs.sent_factor"),
    )
    fig = factor_figure(
        [dict(d, date=day[d["date"]]) for d in result.days], labels={**names, "title": t("bert_outputs.sent_title")}
    )
    figures.show(fig, key="bert-outputs.factor", data=result.days, filename="sentiment-factor")
    fig = confusion_figure(
        result.confusion,
        [labels[k] for k in ("positive", "neutral", "negative")],
        labels={
            "title": t("bert_outputs.sent_confusion"),
            "x": t("bert_outputs.sent_predicted"),
            "y": t("bert_outputs.sent_human"),
            "value": t("bert_outputs.sent_posts"),
        },
    )
    figures.show(fig, key="bert-outputs.confusion", data=result.posts, filename="sentiment-posts")
    with lesson.advanced(t("bert_outputs.sent_all_posts")):
        lesson.table(
            [
                {
                    t("bert_outputs.sent_day"): day[p["date"]],
                    t("bert_outputs.sent_post"): p["text"],
                    t("bert_outputs.sent_human"): labels[p["human"]],
                    t("bert_outputs.sent_predicted"): labels[p["predicted"]],
                }
                for p in result.posts
            ],
            hide_index=True,
            width="stretch",
        )
    post = _text("bert-outputs.own_post", "bert_outputs.own_label", "bert_outputs.own_default")
    if post is None:
        return
    _sentence_capped(bundle, [post])
    s = score_posts(scorer, [post])
    fig = probs_figure(
        [labels[k] for k in ("positive", "neutral", "negative")],
        s.probs[0].tolist(),
        colours=[SENTIMENT_COLOURS[k] for k in ("positive", "neutral", "negative")],
        labels={"title": t("bert_outputs.own_title", label=labels[s.predicted[0]])},
    )
    figures.show(fig, key="bert-outputs.own", data=s.table, filename="my-post")


page.render()
