"""Figures for lessons 4-5: the glass box of one head, the layer × head grid, summaries, rollout,
the concatenation and W^O. All attention matrices go through :func:`core.figures.heatmap` (queries
down, keys across, one colour-blind-safe scale) or use the same scale and orientation.
"""

from __future__ import annotations

import copy
import functools
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.attention import (
    FALLBACK_TAG,
    TAG_RULES,
    Encoding,
    HeadExplanation,
    HeadSummaries,
    ProjectionExplanation,
    ScalingStudy,
)
from core.figures import (
    ATTENTION_SCALE,
    COLORBAR_PX,
    FONT,
    HIGHLIGHT,
    OKABE_ITO,
    TICK_PAD_PX,
    X_TICKS_PX,
    X_TITLE_PX,
    _unique,
    arrow,
    escape_label,
    figure,
    heatmap,
    heatmap_titles,
    label_room,
    layout,
    merge_labels,
    rounded,
)

DIVERGING = "RdBu"  # q, k, v components: signed values, centred on 0


def _labels(tokens: Sequence[str]) -> list[str]:
    return [escape_label(t) for t in tokens]


def _pair_divider(fig: go.Figure, b_start: int | None, n: int, rows: bool = True) -> None:
    """Dashed lines between sentence A and sentence B."""
    if b_start is None or not 0 < b_start < n:
        return
    fig.add_vline(x=b_start - 0.5, line=dict(color="white", width=2, dash="dash"))
    if rows:
        fig.add_hline(y=b_start - 0.5, line=dict(color="white", width=2, dash="dash"))


def head_heatmap(
    expl: HeadExplanation,
    *,
    highlight_row: int | None = None,
    scaled: bool = True,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """One head's attention weights, rows = queries, columns = keys (softmax over each row).
    Labels: title, x, y, value."""
    lab = merge_labels({"title": "", "x": "key", "y": "query", "value": "α"}, labels)
    w = expl.weights if scaled else expl.weights_unscaled
    fig = heatmap(w, expl.tokens, expl.tokens, **heatmap_titles(lab), highlight_row=highlight_row, precision=4)
    _pair_divider(fig, expl.sentence_b_start, expl.n_tokens)
    return fig


_GLASS = {
    "q": "q",
    "k": "k",
    "v": "v",
    "dot": "q·k",
    "scaled": "q·k / √d_k",
    "unscaled": "q·k (no scaling)",
    "softmax": "softmax",
    "output": "output",
    "dim": "dimension",
    "key": "key",
}


def _signed_rows(rows: np.ndarray, ylab: list[str], lab: dict[str, str], line_y: float) -> go.Figure:
    """Vectors as rows of a signed heatmap (one colour scale centred on 0), a rule under/over one row."""
    n, d = rows.shape
    lim = float(np.abs(rows).max()) or 1.0
    trace = dict(
        type="heatmap",
        z=rounded(rows, 4),
        x=list(range(d)),
        # rows named on a category axis, so the hover reads the name without a label per cell
        y=_unique(ylab),
        colorscale=DIVERGING,
        zmid=0,
        zmin=-lim,
        zmax=lim,
        reversescale=True,
        hovertemplate="%{y}<br>" + escape_label(lab["dim"]) + " %{x}: %{z:.4f}<extra></extra>",
    )
    layout = dict(
        yaxis=dict(type="category", autorange="reversed"),
        xaxis=dict(title=dict(text=escape_label(lab["dim"])), side="top"),
        shapes=[
            dict(
                type="line",
                xref="x domain",
                x0=0,
                x1=1,
                yref="y",
                y0=line_y,
                y1=line_y,
                line=dict(color=HIGHLIGHT, width=3),
            )
        ],
        font=FONT,
        height=max(240, 22 * n + 90),
        margin=dict(l=label_room(ylab), r=COLORBAR_PX, t=X_TITLE_PX, b=10),
    )
    return figure([trace], layout)


def _glass_query(expl: HeadExplanation, query: int, labels: dict[str, str] | None):
    """What every glass-box step starts from: its labels, T, the query i clamped to 0..T-1, escaped tokens."""
    T = expl.n_tokens
    return {**_GLASS, **(labels or {})}, T, max(0, min(int(query), T - 1)), _labels(expl.tokens)


def qk_vectors(expl: HeadExplanation, query: int, *, labels: dict[str, str] | None = None) -> go.Figure:
    """Glass box, step 1: q_i above every k_j (d_k components each), on one signed scale."""
    lab, _, i, toks = _glass_query(expl, query, labels)
    rows = np.vstack([expl.q[i][None, :], expl.k])  # (1 + T, d_k)
    ylab = [f"{escape_label(lab['q'])}: {toks[i]} ({i})"] + [
        f"{escape_label(lab['k'])}: {t} ({j})" for j, t in enumerate(toks)
    ]
    return _signed_rows(rows, ylab, lab, 0.5)


def score_steps(
    expl: HeadExplanation, query: int, *, scaled: bool = True, labels: dict[str, str] | None = None
) -> go.Figure:
    """Glass box, steps 2-4 of eq. (1) for query i: q_i·k_j, ÷√d_k (or not), softmax. One bar per key."""
    lab, T, i, toks = _glass_query(expl, query, labels)
    dot = expl.raw_scores[i]
    step2 = expl.scaled_scores[i] if scaled else expl.raw_scores[i]
    soft = expl.weights[i] if scaled else expl.weights_unscaled[i]
    # three panels side by side sharing the token axis, laid out by hand (make_subplots costs ~10 ms)
    titles = [lab["dot"], lab["scaled"] if scaled else lab["unscaled"], lab["softmax"]]
    ys = list(range(T))
    gap, w = 0.04, (1 - 2 * 0.04) / 3
    data, layout, notes = [], {}, []
    for c, (vals, colour) in enumerate(((dot, OKABE_ITO[0]), (step2, OKABE_ITO[2]), (soft, OKABE_ITO[1]))):
        s = "" if c == 0 else str(c + 1)
        x0 = c * (w + gap)
        data.append(
            dict(
                type="bar",
                x=np.round(vals, 4),
                y=ys,
                orientation="h",
                marker=dict(color=colour),
                customdata=toks,
                xaxis=f"x{s}",
                yaxis="y",
                showlegend=False,
                hovertemplate=escape_label(lab["key"]) + ": %{customdata} (%{y})<br>%{x:.4f}<extra></extra>",
            )
        )
        layout[f"xaxis{s}"] = dict(domain=[max(0.0, x0), min(1.0, x0 + w)], anchor="y", zeroline=True)
        notes.append(
            dict(
                text=escape_label(titles[c]),
                x=x0 + w / 2,
                y=1.0,
                xref="paper",
                yref="paper",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=14),
            )
        )
    layout["xaxis3"]["range"] = [0, 1.0]
    layout["yaxis"] = dict(tickmode="array", tickvals=ys, ticktext=toks, autorange="reversed")
    layout.update(
        annotations=notes,
        font=FONT,
        height=max(240, 22 * T + 90),
        bargap=0.15,
        margin=dict(l=label_room(toks), r=TICK_PAD_PX, t=50, b=X_TICKS_PX),
    )
    return figure(data, layout)


def weighted_sum(
    expl: HeadExplanation, query: int, *, scaled: bool = True, labels: dict[str, str] | None = None
) -> go.Figure:
    """Glass box, last step: α_ij v_j for every key j, and their sum (the head's output for i)."""
    lab, T, i, toks = _glass_query(expl, query, labels)
    alpha = expl.weights[i] if scaled else expl.weights_unscaled[i]
    contrib = alpha[:, None] * expl.v  # (T, d_k)
    rows = np.vstack([contrib, contrib.sum(0)[None, :]])  # (T + 1, d_k)
    ylab = [f"α·{escape_label(lab['v'])}: {t} ({j})" for j, t in enumerate(toks)] + [
        f"{escape_label(lab['output'])}: {toks[i]} ({i})"
    ]
    return _signed_rows(rows, ylab, lab, T - 0.5)


def scaling_figure(study: ScalingStudy, *, labels: dict[str, str] | None = None) -> go.Figure:
    """Largest softmax weight vs d_k, with and without 1/√d_k (random unit-variance q, k).

    The same study and labels give the same figure, so its plain-dict form is built once (it is on
    every rerun of lesson 4 and does not depend on the sentence); every caller gets its own figure
    from a deep copy, so one session's change never shows in another's."""
    spec = copy.deepcopy(_scaling_spec(study, tuple(sorted((labels or {}).items()))))
    return figure(spec["data"], spec["layout"])


@functools.lru_cache(maxsize=8)
def _scaling_spec(study: ScalingStudy, label_items: tuple) -> dict:
    spec = _scaling_figure(study, label_items).to_plotly_json()
    spec["layout"].pop("template", None)  # the default one: to_dict adds it, as Plotly would
    return spec


def _scaling_figure(study: ScalingStudy, label_items: tuple) -> go.Figure:
    labels = dict(label_items)
    lab = {
        "x": "d_k",
        "y": "mean largest weight",
        "with": "with 1/√d_k",
        "without": "without",
        "std": "std of q·k",
        **(labels or {}),
    }
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    series = (
        (study.max_weight_unscaled, 4, "without", dict(color=OKABE_ITO[5]), False),
        (study.max_weight_scaled, 4, "with", dict(color=OKABE_ITO[0]), False),
        (study.score_std, 3, "std", dict(color=OKABE_ITO[7], dash="dot"), True),
    )
    for values, digits, key, line, secondary in series:
        fig.add_trace(
            go.Scatter(
                x=study.d_k,
                y=np.round(values, digits),
                name=escape_label(lab[key]),
                mode="lines+markers",
                line=line,
            ),
            secondary_y=secondary,
        )
    fig.update_xaxes(type="log", title_text=escape_label(lab["x"]), tickvals=study.d_k)
    fig.update_yaxes(range=[0, 1.05], title_text=escape_label(lab["y"]), secondary_y=False)
    fig.update_yaxes(
        type="log",
        title_text=escape_label(lab["std"]),
        secondary_y=True,
        tickvals=[v for v in (1, 2, 4, 8, 16, 32, 64) if v <= 2 * max(study.score_std)],
    )
    # margins measured in the app (automatic margins then have nothing to add: see core.figures.label_room)
    return layout(fig, "", 340, margin=dict(t=30, l=74, r=24, b=98), legend=dict(orientation="h", y=-0.25))


def _cell_suffix(l: int, h: int, H: int) -> str:
    """The axis suffix of layer l, head h's cell in layer_head_grid ("" for the first, then "2", ...)."""
    n = l * H + h + 1
    return "" if n == 1 else str(n)


def _cell_axes(l: int, h: int, s: str, w: float, h_: float, gx: float, gy: float) -> dict:
    """x and y axes of one cell of the grid: its paper domain, with no ticks or grid."""
    bare = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    return {
        f"xaxis{s}": dict(
            domain=[max(0.0, h * (w + gx)), min(1.0, h * (w + gx) + w)],
            anchor=f"y{s}",
            **bare,
        ),
        f"yaxis{s}": dict(
            domain=[max(0.0, 1 - (l * (h_ + gy) + h_)), min(1.0, 1 - l * (h_ + gy))],
            anchor=f"x{s}",
            **bare,
            autorange="reversed",
        ),
    }


def _grid_notes(L: int, H: int, w: float, h_: float, gx: float, gy: float, layer_word: str) -> list[dict]:
    """Head numbers along the top, "layer l" down the right side."""
    notes = [
        dict(text=str(h), x=h * (w + gx) + w / 2, y=1.0, xref="paper", yref="paper", yanchor="bottom", showarrow=False)
        for h in range(H)
    ]
    notes += [
        dict(
            text=f"{layer_word} {l}",
            x=1.0,
            y=1 - l * (h_ + gy) - h_ / 2,
            xref="paper",
            yref="paper",
            xanchor="left",
            textangle=90,
            showarrow=False,
        )
        for l in range(L)
    ]
    return notes


def _selected_box(selected: tuple[int, int] | None, L: int, H: int) -> list[dict]:
    """A frame around the selected head's cell (none when nothing, or nothing in range, is selected)."""
    if selected is None:
        return []
    l, h = selected
    if not (0 <= l < L and 0 <= h < H):
        return []
    s = _cell_suffix(l, h, H)
    return [
        dict(
            type="rect",
            xref=f"x{s} domain",
            yref=f"y{s} domain",
            x0=-0.04,
            x1=1.04,
            y0=-0.04,
            y1=1.04,
            line=dict(color=HIGHLIGHT, width=3),
        )
    ]


def layer_head_grid(
    enc: Encoding, *, selected: tuple[int, int] | None = None, labels: dict[str, str] | None = None
) -> go.Figure:
    """Every head of every layer as a small heatmap (layers down, heads across).

    Thumbnails carry weights as whole percents in uint8 (hover shows them as such): 6 × 12 heads at
    64 tokens is then about 0.4 MB instead of 2.4 MB of float32; the enlarged head shows exact values.
    The subplot grid is laid out by hand: make_subplots takes ~0.2 s for 72 cells, this ~0.02 s.
    """
    lab = {"layer": "layer", "head": "head", "query": "query", "key": "key", **(labels or {})}
    L, H = enc.num_layers, enc.num_heads
    pct = np.rint(np.clip(enc.attentions, 0, 1) * 100).astype(np.uint8)  # (L, H, T, T)
    gx, gy = 0.006, 0.012
    w, h_ = (1 - gx * (H - 1)) / H, (1 - gy * (L - 1)) / L
    layout: dict = {}
    data = []
    head_word, layer_word = escape_label(lab["head"]), escape_label(lab["layer"])
    q_word, k_word = escape_label(lab["query"]), escape_label(lab["key"])
    for l in range(L):
        for h in range(H):
            s = _cell_suffix(l, h, H)
            layout.update(_cell_axes(l, h, s, w, h_, gx, gy))
            data.append(
                dict(
                    type="heatmap",
                    z=pct[l, h],
                    zmin=0,
                    zmax=100,
                    colorscale=ATTENTION_SCALE,
                    showscale=False,
                    xaxis=f"x{s}",
                    yaxis=f"y{s}",
                    hovertemplate=(
                        f"{layer_word} {l} · {head_word} {h}<br>{q_word} %{{y}} → "
                        f"{k_word} %{{x}}: %{{z}}%<extra></extra>"
                    ),
                )
            )
    layout.update(
        annotations=_grid_notes(L, H, w, h_, gx, gy, layer_word),
        shapes=_selected_box(selected, L, H),
        font=FONT,
        height=max(300, 70 * L + 60),
        margin=dict(l=10, r=40, t=40, b=10),
    )
    return figure(data, layout)


def tag_grid(
    summ: HeadSummaries,
    *,
    tag_names: dict[str, str] | None = None,
    selected: tuple[int, int] | None = None,
    labels: dict[str, str] | None = None,
) -> go.Figure:
    """Layers × heads, coloured by tag, each cell printed with its tag; hover shows every metric."""
    lab = {"layer": "layer", "head": "head", **(labels or {})}
    order = [r.tag for r in TAG_RULES] + [FALLBACK_TAG]
    names = {t: (tag_names or {}).get(t, t) for t in order}
    L, H = summ.num_layers, summ.num_heads
    z = np.array([[order.index(summ.tags[l][h]) for h in range(H)] for l in range(L)])
    n = len(order)
    scale = []
    for k, colour in enumerate(OKABE_ITO[:n]):
        scale += [(k / n, colour), ((k + 1) / n, colour)]
    m = summ.metrics
    hover = [
        [
            (
                f"{escape_label(lab['layer'])} {l} · {escape_label(lab['head'])} {h}<br>"
                f"{escape_label(names[summ.tags[l][h]])}<br>"
                f"entropy {m['entropy'][l, h]:.3f} ({m['entropy_norm'][l, h]:.2f} of ln T)<br>"
                f"[CLS] {m['cls'][l, h]:.3f} · [SEP] {m['sep'][l, h]:.3f}<br>"
                f"prev {m['previous'][l, h]:.3f} · next {m['next'][l, h]:.3f} · self {m['self'][l, h]:.3f}"
            )
            for h in range(H)
        ]
        for l in range(L)
    ]
    text = [[escape_label(names[summ.tags[l][h]]) for h in range(H)] for l in range(L)]
    trace = dict(
        type="heatmap",
        z=z,
        x=list(range(H)),
        y=list(range(L)),
        zmin=-0.5,
        zmax=n - 0.5,
        colorscale=scale,
        showscale=False,
        text=text,
        texttemplate="%{text}",
        textfont=dict(size=12),
        customdata=hover,
        hovertemplate="%{customdata}<extra></extra>",
        xgap=2,
        ygap=2,
    )
    shapes = []
    if selected is not None:
        l, h = selected
        shapes.append(
            dict(type="rect", x0=h - 0.5, x1=h + 0.5, y0=l - 0.5, y1=l + 0.5, line=dict(color="black", width=3))
        )
    spec = dict(
        xaxis=dict(title=dict(text=escape_label(lab["head"])), tickmode="array", tickvals=list(range(H)), side="top"),
        yaxis=dict(
            title=dict(text=escape_label(lab["layer"])), tickmode="array", tickvals=list(range(L)), autorange="reversed"
        ),
        shapes=shapes,
    )
    room = dict(t=X_TITLE_PX, l=label_room([str(v) for v in range(L)], title=True))
    return layout(figure([trace], spec), "", max(220, 40 * L + 90), margin=room)


def rollout_figure(
    enc: Encoding, roll: np.ndarray, layer: int | None = None, *, labels: Mapping[str, str] | None = None
) -> go.Figure:
    """Rollout after ``layer`` (default: the last): how much each position draws on each input token.
    Labels: title, x, y, value."""
    lab = merge_labels({"title": "", "x": "input token", "y": "position", "value": "Ã"}, labels)
    l = enc.num_layers - 1 if layer is None else int(layer)
    r = roll[l]
    fig = heatmap(r, enc.tokens, enc.tokens, **heatmap_titles(lab), zmin=0.0, zmax=float(r.max()), precision=4)
    _pair_divider(fig, enc.sentence_b_start, enc.n_tokens)
    return fig


def _projection_panel(
    r: int, mat: np.ndarray, title: str, toks: list[str], hover: str, *, few: bool, top: float, hgt: float
) -> tuple[dict, dict, dict]:
    """One of projection_figure's stacked heatmaps (r = 0: Concat, 1: the projection), with its top at
    ``top`` of the paper: the trace, its x and y axes, and its title; ``few``: token labels per cell."""
    s = "" if r == 0 else "2"
    T = len(toks)
    lim = float(np.abs(mat).max()) or 1.0
    trace = dict(
        type="heatmap",
        z=mat.astype(np.float32),
        colorscale=DIVERGING,
        reversescale=True,
        zmid=0,
        zmin=-lim,
        zmax=lim,
        showscale=False,
        xaxis=f"x{s}",
        yaxis=f"y{s}",
        hovertemplate=hover,
    )
    if few:
        trace["customdata"] = np.array(toks, dtype=object)[:, None].repeat(mat.shape[1], 1)
    axes = {
        f"xaxis{s}": dict(domain=[0, 1], anchor=f"y{s}"),
        f"yaxis{s}": dict(
            domain=[max(0.0, top - hgt), min(1.0, top)],
            anchor=f"x{s}",
            autorange="reversed",
            **(dict(tickmode="array", tickvals=list(range(T)), ticktext=toks) if few else {}),
        ),
    }
    note = dict(
        text=title, x=0.5, y=top, xref="paper", yref="paper", yanchor="bottom", showarrow=False, font=dict(size=14)
    )
    return trace, axes, note


def _head_boundaries(p: ProjectionExplanation) -> list[dict]:
    """A vertical line between consecutive heads' d_k columns of Concat."""
    return [
        dict(
            type="line",
            xref="x",
            yref="y domain",
            x0=h * p.d_k - 0.5,
            x1=h * p.d_k - 0.5,
            y0=0,
            y1=1,
            line=dict(color="black", width=1),
        )
        for h in range(1, p.num_heads)
    ]


def projection_figure(p: ProjectionExplanation, *, labels: dict[str, str] | None = None) -> go.Figure:
    """Concat(head_1..head_h) (T × h·d_k) → · W^O (h·d_k × d_model) → (T × d_model), real values.

    Two stacked heatmaps laid out by hand (make_subplots costs ~50 ms here)."""
    lab = {
        "concat": "Concat(head_1, …, head_h)",
        "proj": "Concat · W^O + b^O",
        "token": "token",
        "dim": "dimension",
        "head": "head",
        **(labels or {}),
    }
    T = len(p.tokens)
    toks = _labels(p.tokens)
    titles = [
        f"{escape_label(lab['concat'])}: {T} × {p.num_heads * p.d_k}",
        f"{escape_label(lab['proj'])}: ({T} × {p.W_O_shape[0]}) · ({p.W_O_shape[0]} × {p.W_O_shape[1]})"
        f" = {T} × {p.d_model}",
    ]
    few = T <= 32  # per-cell token labels on hover only while they stay small
    hover = (
        ("%{customdata}" if few else escape_label(lab["token"]) + " %{y}")
        + " · "
        + escape_label(lab["dim"])
        + " %{x}: %{z:.4f}<extra></extra>"
    )
    gap = 0.14
    hgt = (1 - gap) / 2
    data, layout, notes = [], {}, []
    for r, mat in enumerate((p.concat, p.projected)):
        trace, axes, note = _projection_panel(r, mat, titles[r], toks, hover, few=few, top=1 - r * (hgt + gap), hgt=hgt)
        data.append(trace)
        layout.update(axes)
        notes.append(note)
    layout["xaxis2"]["title"] = dict(text=escape_label(lab["dim"]))
    shapes = _head_boundaries(p)
    layout.update(
        annotations=notes,
        shapes=shapes,
        font=FONT,
        height=max(420, 2 * (14 * T + 120)),
        margin=dict(l=label_room(toks if few else [str(T - 1)]), r=10, t=50, b=X_TITLE_PX),
    )
    return figure(data, layout)


def projection_shapes(p: ProjectionExplanation, *, labels: dict[str, str] | None = None) -> go.Figure:
    """The shapes of multi-head attention's last step, drawn to scale (1 unit = 1 row or column):
    h heads of T × d_k, side by side → Concat (T × h·d_k) → · W^O (h·d_k × d_model) → T × d_model."""
    lab = {"head": "head", "concat": "Concat", "proj": "output", **(labels or {})}
    T, h, d_k, d = len(p.tokens), p.num_heads, p.d_k, p.d_model
    hw, ww = p.W_O_shape
    gap = max(2.0, d_k * 0.15)
    shapes, notes = [], []

    def box(x0, y0, w, hgt, colour, text):
        shapes.append(
            dict(
                type="rect",
                x0=x0,
                x1=x0 + w,
                y0=y0,
                y1=y0 - hgt,
                line=dict(color="#333", width=1),
                fillcolor=colour,
                opacity=0.85,
            )
        )
        if text:
            notes.append(dict(x=x0 + w / 2, y=y0 - hgt / 2, text=text, showarrow=False, font=dict(size=11)))

    top = 0.0
    for i in range(h):  # row 1: the h heads, each T × d_k
        box(i * (d_k + gap), top, d_k, T, OKABE_ITO[i % 7], "")
    notes.append(
        dict(
            x=(h * (d_k + gap) - gap) / 2,
            y=top + 9,
            showarrow=False,
            text=f"{h} × {escape_label(lab['head'])}: {T} × {d_k}",
            font=dict(size=12),
        )
    )
    # row 2: Concat (T × h·d_k) · W^O (h·d_k × d_model) = T × d_model, at the same scale
    y2 = -(T + 40)
    box(0, y2, h * d_k, T, "#DDDDDD", f"{escape_label(lab['concat'])}: {T} × {h * d_k}")
    x_w = h * d_k + 40
    box(x_w, y2, ww, hw, "#F5D6A0", f"W^O: {hw} × {ww}")
    x_o = x_w + ww + 40
    box(x_o, y2, d, T, "#B7D7F0", f"{escape_label(lab['proj'])}: {T} × {d}")
    notes.append(dict(x=h * d_k + 20, y=y2 - T / 2, text="·", showarrow=False, font=dict(size=22)))
    notes.append(dict(x=x_w + ww + 20, y=y2 - T / 2, text="=", showarrow=False, font=dict(size=18)))
    notes.append(arrow(h * d_k / 2, y2 + 4, h * d_k / 2, top - T - 4))
    width_units = x_o + d
    height_units = T + 40 + hw + 10
    layout = dict(
        shapes=shapes,
        annotations=notes,
        font=FONT,
        showlegend=False,
        plot_bgcolor="white",
        xaxis=dict(visible=False, range=[-10, width_units + 10]),
        yaxis=dict(visible=False, range=[y2 - hw - 10, top + 14], scaleanchor="x", scaleratio=1),
        # the page is about 1000 px wide; keep the aspect so that squares stay square
        height=int(min(800, max(220, 1000 * height_units / max(width_units, 1)))),
        margin=dict(l=10, r=10, t=10, b=10),
    )
    return figure([], layout)
