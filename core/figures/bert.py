"""Figures for lessons 6–7 (BERT's inputs and outputs). Every label that may hold user text goes
through escape_label; every number on a figure is the one computed in core.bert (rounded for hover).

Titles and axis names are passed in by the caller (already translated) as ``labels={...}``, the
one label API of core.figures (see merge_labels); builders only draw.
"""

from __future__ import annotations

import html as _html
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import HIGHLIGHT, OKABE_ITO, PLOT_PX, escape_label, heatmap, heatmap_titles, layout, merge_labels, text_px

# Colours for the masking simulator's categories (Okabe-Ito, distinguishable without red/green).
ACTION_COLOURS = {
    "special": "#BBBBBB",
    "not chosen": "#F2F2F2",
    "mask": OKABE_ITO[0],
    "random": OKABE_ITO[5],
    "keep": OKABE_ITO[2],
}
SENTIMENT_COLOURS = {"positive": OKABE_ITO[0], "neutral": "#999999", "negative": OKABE_ITO[5]}


# Text in a cell is drawn at CELL_FONT px (never smaller: 11 px is the floor at 1400 px wide). A grid
# wider than PLOT_PX wraps into bands, each band headed by its column labels; text too long for its
# cell is cut with "…" and shown whole on hover.
CELL_FONT = 12
LABEL_PX = 120  # room for the row names on the left
MIN_CELL, MAX_CELL = 34, 96


def fit_text(text: str, width: int, size: int = CELL_FONT) -> str:
    """``text`` cut with "…" so that it fits ``width`` px at ``size`` px."""
    text = str(text)
    if text_px(text, size) <= width:
        return text
    out = ""
    for c in text:
        if text_px(out + c + "…", size) > width:
            break
        out += c
    return out + "…"


def cell_ticks(ticks: Sequence[str]) -> dict:
    """An axis labelled cell by cell (one tick per row or column), at the cells' font size."""
    return dict(
        tickmode="array",
        tickvals=list(range(len(ticks))),
        ticktext=list(ticks),
        showgrid=False,
        tickfont=dict(size=CELL_FONT),
    )


def _grid(
    z, text, hover, x_ticks, y_ticks, colorscale, title, zmin=None, zmax=None, height=None, showscale=False
) -> go.Figure:
    """A labelled grid of cells (tokens across): the shape every input table takes. Wraps into bands
    when the columns cannot fit at a readable size; cut text keeps its whole form in the hover."""
    n, rows = len(x_ticks), len(y_ticks)
    widest = max([text_px(_html.unescape(str(c))) + 10 for row in text for c in row] + [MIN_CELL])
    cell = min(MAX_CELL, widest)
    per_band = max(4, (PLOT_PX - LABEL_PX) // cell)
    banded = n > per_band
    cell = (PLOT_PX - LABEL_PX) // min(n, per_band) if n else cell

    def cut(c) -> str:
        raw = _html.unescape(str(c))
        return _html.escape(fit_text(raw, cell - 8), quote=False) if text_px(raw) > cell - 8 else str(c)

    def cell_heatmap(cells, shown, hovers, columns, lines, **extra) -> go.Heatmap:
        return go.Heatmap(
            z=cells,
            text=shown,
            texttemplate="%{text}",
            textfont=dict(size=CELL_FONT),
            customdata=hovers,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale=colorscale,
            zmin=zmin,
            zmax=zmax,
            showscale=showscale,
            xgap=2,
            ygap=2,
            x=list(range(columns)),
            y=list(range(lines)),
            **extra,
        )

    if not banded:
        fig = go.Figure(cell_heatmap(z, [[cut(c) for c in row] for row in text], hover, n, rows))
        ticks = [cut(t) for t in x_ticks]
        long = any(text_px(_html.unescape(t), 12) > cell for t in ticks)
        fig.update_xaxes(**cell_ticks(ticks), side="top", tickangle=-45 if long else 0)
        fig.update_yaxes(**cell_ticks(y_ticks), autorange="reversed")
        # x tick labels sit on top: keep the title above them
        return layout(
            fig,
            title,
            (height or 80 + 46 * rows) + 30 + (30 if long else 0),
            top=(110 if title else 70) + (30 if long else 0),
            plot_bgcolor="white",
        )
    bands = -(-n // per_band)
    bz, bt, bh, names = [], [], [], []
    for b in range(bands):
        lo, hi = b * per_band, min(n, (b + 1) * per_band)
        pad = per_band - (hi - lo)
        bz.append([None] * per_band)
        bt.append([cut(t) for t in x_ticks[lo:hi]] + [""] * pad)
        bh.append([str(t) for t in x_ticks[lo:hi]] + [""] * pad)
        names.append(f"{lo}–{hi - 1}")
        for r in range(rows):
            bz.append(list(z[r][lo:hi]) + [None] * pad)
            bt.append([cut(c) for c in text[r][lo:hi]] + [""] * pad)
            bh.append(list(hover[r][lo:hi]) + [""] * pad)
            names.append(y_ticks[r])
    fig = go.Figure(cell_heatmap(bz, bt, bh, per_band, len(bz), hoverongaps=False))
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(**cell_ticks(names), autorange="reversed", zeroline=False)
    return layout(fig, title, 60 + 40 * len(bz), top=60 if title else 20, plot_bgcolor="white")


def wordpiece_figure(
    tokens: Sequence[str],
    ids: Sequence[int],
    word_index: Sequence[int],
    continuation: Sequence[bool],
    *,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """WordPiece pieces in a row, the two-row cell (piece over id), shaded by the word they belong to.
    Labels: title, piece, id (the two rows)."""
    lab = merge_labels({"title": "", "piece": "piece", "id": "id"}, labels)
    title, piece_label, id_label = lab["title"], lab["piece"], lab["id"]
    toks = [escape_label(t) for t in tokens]
    n = len(toks)
    z = [[w % 2 + (0.5 if c else 0) for w, c in zip(word_index, continuation)]] * 2
    text = [toks, [str(i) for i in ids]]
    hover = [[f"{piece_label} {j}: {toks[j]}<br>{id_label}: {ids[j]}" for j in range(n)]] * 2
    return _grid(
        z,
        text,
        hover,
        [str(j) for j in range(n)],
        [piece_label, id_label],
        [[0, "#DCEBF7"], [0.33, "#9CC7EA"], [0.66, "#FBE3C2"], [1, "#F4BE7A"]],
        title,
        0,
        1.5,
        height=170,
    )


def input_rows_figure(
    tokens: Sequence[str],
    rows: dict[str, Sequence[int]],
    *,
    colour_row: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """Tokens across; one row per id sequence (input ids, segment ids, position ids, mask), named by
    the keys of ``rows``. Labels: title, token (the first row)."""
    lab = merge_labels({"title": "", "token": "token"}, labels)
    title = lab["title"]
    toks = [escape_label(t) for t in tokens]
    names = list(rows)
    key = colour_row if colour_row in rows else names[0]
    shade = [float(v) for v in rows[key]]
    hi = max(shade) if shade and max(shade) > 0 else 1.0
    z = [[s / hi for s in shade] for _ in [None] + names]
    text = [toks] + [[str(v) for v in rows[name]] for name in names]
    hover = [
        [
            f"{j}: {toks[j]}" + "".join(f"<br>{escape_label(nm)}: {rows[nm][j]}" for nm in names)
            for j in range(len(toks))
        ]
        for _ in [None] + names
    ]
    row_names = [escape_label(lab["token"])] + [escape_label(n) for n in names]
    return _grid(
        z, text, hover, [str(j) for j in range(len(toks))], row_names, [[0, "#EAF2FA"], [1, "#F6D7A7"]], title, 0, 1
    )


def batch_figure(
    tokens: Sequence[Sequence[str]], mask: Sequence[Sequence[int]], *, labels: Mapping[str, str] | None = None
) -> go.Figure:
    """A padded batch: one row per sentence, cells = tokens, shaded by the attention mask.
    Labels: title, row (a sentence), mask."""
    lab = merge_labels({"title": "", "row": "sentence", "mask": "mask"}, labels)
    title, row_label, mask_label = lab["title"], lab["row"], lab["mask"]
    text = [[escape_label(t) for t in row] for row in tokens]
    hover = [
        [f"{row_label} {r}, position {j}: {text[r][j]}<br>{mask_label} = {mask[r][j]}" for j in range(len(row))]
        for r, row in enumerate(tokens)
    ]
    z = [[float(m) for m in row] for row in mask]
    width = len(tokens[0]) if tokens else 0
    return _grid(
        z,
        text,
        hover,
        [str(j) for j in range(width)],
        [f"{row_label} {r + 1}" for r in range(len(tokens))],
        [[0, "#DDDDDD"], [1, "#9CC7EA"]],
        title,
        0,
        1,
        height=170,
    )


def embedding_strips(
    rows: dict[str, np.ndarray], norms: dict[str, float], *, labels: Mapping[str, str] | None = None
) -> go.Figure:
    """One token's vectors as strips of colour, one strip per part (token, segment, position, sum,
    LayerNorm), each with its L2 norm in the row label. Each strip is coloured on its own scale
    (divided by its largest |value|), because LayerNorm's output is ~10x larger than the three
    inputs and would wash them out; the hover shows the true value. Labels: title, dim, norm, scale_note."""
    lab = merge_labels({"title": "", "dim": "dimension", "norm": "norm", "scale_note": ""}, labels)
    title, dim_label, norm_label, scale_note = lab["title"], lab["dim"], lab["norm"], lab["scale_note"]
    names = list(rows)
    data = np.stack([np.asarray(rows[n], dtype=np.float64) for n in names])  # (parts, H)
    peak = np.abs(data).max(axis=1, keepdims=True)  # (parts, 1)
    scaled = data / np.where(peak > 0, peak, 1.0)  # (parts, H) in [-1, 1]
    row_names = [f"{escape_label(n)}  ({escape_label(norm_label)} {norms[n]:.3f})" for n in names]
    fig = go.Figure(
        go.Heatmap(
            z=np.round(scaled, 4).tolist(),
            x=list(range(data.shape[1])),
            y=list(range(len(names))),
            customdata=np.round(data, 4).tolist(),
            text=[[row_names[i]] * data.shape[1] for i in range(len(names))],
            colorscale="RdBu",
            reversescale=True,
            zmid=0,
            zmin=-1,
            zmax=1,
            showscale=False,
            hovertemplate=f"%{{text}}<br>{escape_label(dim_label)} %{{x}}: %{{customdata:.4f}}<extra></extra>",
            ygap=6,
        )
    )
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(names))), ticktext=row_names, autorange="reversed")
    fig.update_xaxes(title_text=escape_label(dim_label + (f" · {scale_note}" if scale_note else "")))
    return layout(fig, title, 90 + 48 * len(names))


def norms_figure(
    tokens: Sequence[str], norms: dict[str, Sequence[float]], *, labels: Mapping[str, str] | None = None
) -> go.Figure:
    """Grouped bars: each part's norm at each token position. Labels: title, y."""
    lab = merge_labels({"title": "", "y": "L2 norm"}, labels)
    toks = [escape_label(t) for t in tokens]
    fig = go.Figure()
    for k, (name, vals) in enumerate(norms.items()):
        fig.add_bar(
            x=list(range(len(toks))),
            y=[round(float(v), 4) for v in vals],
            name=escape_label(name),
            marker_color=OKABE_ITO[k % len(OKABE_ITO)],
            customdata=toks,
            hovertemplate=f"%{{customdata}} (%{{x}})<br>{escape_label(name)}: %{{y:.4f}}<extra></extra>",
        )
    fig.update_xaxes(
        tickmode="array", tickvals=list(range(len(toks))), ticktext=toks, tickangle=-45 if len(toks) > 10 else 0
    )
    fig.update_yaxes(title_text=escape_label(lab["y"]))
    return layout(fig, lab["title"], 360, barmode="group", legend=dict(orientation="h", y=-0.25))


def anatomy_figure(models: dict[str, dict[str, int]], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Stacked horizontal bars: each model's parameters by block (exact count on hover). Labels: title, x."""
    lab = merge_labels({"title": "", "x": "parameters"}, labels)
    names = list(models)
    blocks = list(next(iter(models.values())))
    fig = go.Figure()
    for k, block in enumerate(blocks):
        vals = [models[m][block] for m in names]
        fig.add_bar(
            y=[escape_label(m) for m in names],
            x=vals,
            orientation="h",
            name=escape_label(block),
            marker_color=OKABE_ITO[k % len(OKABE_ITO)],
            customdata=[f"{v:,}" for v in vals],
            hovertemplate=f"%{{y}}<br>{escape_label(block)}: %{{customdata}}<extra></extra>",
        )
    fig.update_xaxes(title_text=escape_label(lab["x"]))
    return layout(
        fig,
        lab["title"],
        120 + 60 * len(names),
        barmode="stack",
        legend=dict(orientation="h", y=-0.3, traceorder="normal"),
    )


def layer_parts_figure(parts: dict[str, int], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """One encoder layer's parameters by part, as bars (exact counts on hover). Labels: title."""
    title = merge_labels({"title": ""}, labels)["title"]
    names = [escape_label(n) for n in parts]
    vals = list(parts.values())
    fig = go.Figure(
        go.Bar(
            x=vals,
            y=names,
            orientation="h",
            marker_color=OKABE_ITO[0],
            text=[f"{v:,}" for v in vals],
            textposition="auto",
            hovertemplate="%{y}: %{x:,}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    return layout(fig, title, 80 + 32 * len(names))


def hidden_figure(states: np.ndarray, tokens: Sequence[str], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """(T, H) hidden states: tokens down, dimensions across, diverging scale. Labels: title, x, value."""
    lab = merge_labels({"title": "", "x": "dimension", "value": "value"}, labels)
    title, dim_label, value_name = lab["title"], lab["x"], lab["value"]
    s = np.asarray(states, dtype=np.float64)
    lim = float(np.abs(s).max()) or 1.0
    toks = [escape_label(t) for t in tokens]
    fig = go.Figure(
        go.Heatmap(
            z=np.round(s, 4).tolist(),
            x=list(range(s.shape[1])),
            y=list(range(s.shape[0])),
            colorscale="RdBu",
            reversescale=True,
            zmid=0,
            zmin=-lim,
            zmax=lim,
            customdata=[[t] * s.shape[1] for t in toks],
            hovertemplate=(
                f"%{{customdata}} (%{{y}})<br>{escape_label(dim_label)} %{{x}}<br>"
                f"{escape_label(value_name)}: %{{z:.4f}}<extra></extra>"
            ),
            colorbar=dict(thickness=10),
        )
    )
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(toks))), ticktext=toks, autorange="reversed")
    fig.update_xaxes(title_text=escape_label(dim_label))
    return layout(fig, title, max(220, 60 + 22 * len(toks)))


def trajectory_figure(rows: list[dict], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """One token through the layers: its norm and each layer's update size (top), cosine to the
    previous layer and to its embedding (bottom). Labels: title, layer, norm, change, cos_prev,
    cos_embedding."""
    names = merge_labels(
        {
            "title": "",
            "layer": "layer",
            "norm": "norm",
            "change": "change",
            "cos_prev": "cos_prev",
            "cos_embedding": "cos_embedding",
        },
        labels,
    )
    layers = [r["layer"] for r in rows]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    # sizes on top, cosines below; one colour per series
    for k, key in enumerate(("norm", "change", "cos_prev", "cos_embedding")):
        fig.add_scatter(
            x=layers,
            y=[round(r[key], 4) for r in rows],
            mode="lines+markers",
            name=escape_label(names.get(key, key)),
            marker_color=OKABE_ITO[k],
            row=1 + k // 2,
            col=1,
        )
    fig.update_xaxes(title_text=escape_label(names["layer"]), dtick=1, row=2, col=1)
    fig.update_yaxes(range=[min(-0.05, min(r["cos_embedding"] for r in rows) - 0.05), 1.05], row=2, col=1)
    return layout(fig, names["title"], 460, legend=dict(orientation="h", y=-0.2))


def similarity_figure(matrix, sentences: Sequence[str], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Sentences numbered: "1: text" down, the numbers across (long sentences would collide on top).
    Labels: title, value."""
    lab = merge_labels({"title": "", "value": "cosine"}, labels)
    short = [s if len(s) <= 40 else s[:39] + "…" for s in sentences]
    fig = heatmap(
        matrix,
        [str(i + 1) for i in range(len(short))],
        [f"{i + 1}: {s}" for i, s in enumerate(short)],
        **heatmap_titles(lab),
        zmin=-1.0,
        zmax=1.0,
        precision=3,
        colorscale="RdBu_r",
    )
    fig.update_traces(
        text=[[f"{v:.2f}" for v in row] for row in np.asarray(matrix, dtype=np.float64)], texttemplate="%{text}"
    )
    return fig


def masking_figure(
    original: Sequence[str],
    shown: Sequence[str],
    actions: Sequence[str],
    *,
    action_names: dict[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """The masking simulator: original tokens over what the model is fed, coloured by what happened.
    ``action_names``: a display name per action. Labels: title, original, input (the two rows)."""
    lab = merge_labels({"title": "", "original": "original", "input": "input"}, labels)
    title, row_names = lab["title"], (lab["original"], lab["input"])
    action_names = action_names or {}
    order = list(ACTION_COLOURS)
    idx = [order.index(a) for a in actions]
    n = len(order) - 1
    scale = []
    for k, a in enumerate(order):  # a stepped categorical scale
        scale += [[k / (n + 1), ACTION_COLOURS[a]], [(k + 1) / (n + 1), ACTION_COLOURS[a]]]
    z = [[(i + 0.5) / (n + 1) for i in idx]] * 2
    o = [escape_label(t) for t in original]
    s = [escape_label(t) for t in shown]
    hover = [
        [f"{j}: {o[j]} → {s[j]}<br>{escape_label(action_names.get(actions[j], actions[j]))}" for j in range(len(o))]
    ] * 2
    fig = _grid(
        z,
        [o, s],
        hover,
        [str(j) for j in range(len(o))],
        [escape_label(r) for r in row_names],
        scale,
        title,
        0,
        1,
        height=190,
    )
    for a in order:  # legend entries for the categories
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=escape_label(action_names.get(a, a)),
            marker=dict(size=12, color=ACTION_COLOURS[a], symbol="square", line=dict(color="#888", width=1)),
        )
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.15))
    return fig


def topk_figure(masks: list[dict], tokens: Sequence[str], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Top-k predictions at each [MASK], one panel per mask. Labels: title, value."""
    lab = merge_labels({"title": "", "value": "probability"}, labels)
    title, prob_label = lab["title"], lab["value"]
    k = max(1, len(masks))
    fig = make_subplots(rows=1, cols=k, subplot_titles=[f"[MASK] @ {m['position']}" for m in masks] or [""])
    for c, m in enumerate(masks, start=1):
        toks = [escape_label(t["token"]) for t in m["top"]]
        fig.add_bar(
            x=[round(t["probability"], 4) for t in m["top"]],
            y=toks,
            orientation="h",
            marker_color=OKABE_ITO[0],
            showlegend=False,
            hovertemplate=f"%{{y}}<br>{escape_label(prob_label)}: %{{x:.4f}}<extra></extra>",
            row=1,
            col=c,
        )
        fig.update_yaxes(autorange="reversed", row=1, col=c)
        fig.update_xaxes(range=[0, 1], row=1, col=c)
    return layout(fig, title, 320)


def nsp_figure(is_next: float, not_next: float, *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """IsNext / NotNext probabilities. Labels: title, is_next, not_next."""
    lab = merge_labels({"title": "", "is_next": "IsNext", "not_next": "NotNext"}, labels)
    title, names = lab["title"], (lab["is_next"], lab["not_next"])
    fig = go.Figure(
        go.Bar(
            x=[escape_label(n) for n in names],
            y=[round(is_next, 4), round(not_next, 4)],
            marker_color=[OKABE_ITO[0], OKABE_ITO[5]],
            text=[f"{is_next:.1%}", f"{not_next:.1%}"],
            textposition="auto",
            hovertemplate="%{x}: %{y:.4f}<extra></extra>",
        )
    )
    fig.update_yaxes(range=[0, 1])
    return layout(fig, title, 300)


def task_heads_figure(tokens: Sequence[str], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Which output each fine-tuning head reads (Devlin et al. 2018, Figure 4): classification
    reads C at [CLS]; token labeling reads every T_i; span QA scores every T_i with S (start) and E (end).
    Labels: title, classification, labeling, start, end."""
    names = merge_labels(
        {"title": "", "classification": "classification", "labeling": "labeling", "start": "start", "end": "end"},
        labels,
    )
    title = names["title"]
    toks = [escape_label(t) for t in tokens]
    special = {"[CLS]", "[SEP]", "[PAD]"}
    heads = ("classification", "labeling", "start", "end")
    z, text = [], []
    for h in heads:
        row, txt = [], []
        for t in tokens:
            if h == "classification":
                on = t == "[CLS]"
                txt.append("softmax(W C)" if on else "")
            elif h == "labeling":
                on = t not in special
                txt.append("W·T_i" if on else "")
            else:
                on = t not in special
                txt.append(("S·T" if h == "start" else "E·T") if on else "")
            row.append(1.0 if on else 0.0)
        z.append(row)
        text.append(txt)
    hover = [[f"{escape_label(names.get(h, h))}<br>{toks[j]}" for j in range(len(toks))] for h in heads]
    return _grid(
        z,
        text,
        hover,
        toks,
        [escape_label(names.get(h, h)) for h in heads],
        [[0, "#F2F2F2"], [1, "#9CC7EA"]],
        title,
        0,
        1,
    )


def factor_figure(days: list[dict], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Per day: stacked counts of the model's positive / neutral / negative posts (bars, left axis),
    the model's factor and the authors' factor (lines, right axis, in [-1, 1]). Labels: title,
    positive, neutral, negative, factor_model, factor_human, posts, factor."""
    names = merge_labels(
        {
            "title": "",
            "positive": "positive",
            "neutral": "neutral",
            "negative": "negative",
            "factor_model": "factor (model)",
            "factor_human": "factor (authors' labels)",
            "posts": "posts",
            "factor": "factor",
        },
        labels,
    )
    title = names["title"]
    x = [escape_label(d["date"]) for d in days]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for lab in ("positive", "neutral", "negative"):
        fig.add_bar(
            x=x,
            y=[d[f"model_{lab}"] for d in days],
            name=escape_label(names.get(lab, lab)),
            marker_color=SENTIMENT_COLOURS[lab],
            opacity=0.75,
            secondary_y=False,
            hovertemplate=f"%{{x}}<br>{escape_label(names.get(lab, lab))}: %{{y}}<extra></extra>",
        )
    fig.add_scatter(
        x=x,
        y=[round(d["factor_model"], 4) for d in days],
        mode="lines+markers",
        name=escape_label(names.get("factor_model", "factor (model)")),
        line=dict(color="#000000", width=3),
        secondary_y=True,
    )
    fig.add_scatter(
        x=x,
        y=[round(d["factor_human"], 4) for d in days],
        mode="lines+markers",
        name=escape_label(names.get("factor_human", "factor (authors' labels)")),
        line=dict(color=HIGHLIGHT, width=2, dash="dash"),
        secondary_y=True,
    )
    fig.update_yaxes(title_text=escape_label(names.get("posts", "posts")), secondary_y=False)
    fig.update_yaxes(
        title_text=escape_label(names.get("factor", "factor")),
        range=[-1.05, 1.05],
        secondary_y=True,
        zeroline=True,
        tickvals=[-1, -0.5, 0, 0.5, 1],
        showgrid=False,
    )
    return layout(fig, title, 420, barmode="stack", legend=dict(orientation="h", y=-0.2, traceorder="normal"))


def confusion_figure(
    confusion: list[list[int]], classes: Sequence[str], *, labels: Mapping[str, str] | None = None
) -> go.Figure:
    """Counts by (true class, predicted class). Labels: title, x, y, value."""
    lab = merge_labels({"title": "", "x": "predicted", "y": "label", "value": "posts"}, labels)
    hi = max(max(r) for r in confusion) or 1
    fig = heatmap(confusion, classes, classes, **heatmap_titles(lab), zmin=0, zmax=hi, precision=0, height=340)
    fig.update_traces(text=[[str(v) for v in r] for r in confusion], texttemplate="%{text}")
    return layout(fig, lab["title"], top=120)


def probs_figure(
    classes: Sequence[str],
    probs: Sequence[float],
    *,
    colours: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """A small probability bar chart (one post's sentiment, one pair's NSP). Labels: title."""
    title = merge_labels({"title": ""}, labels)["title"]
    names = [escape_label(x) for x in classes]
    vals = [round(float(p), 4) for p in probs]
    fig = go.Figure(
        go.Bar(
            x=names,
            y=vals,
            marker_color=list(colours) if colours else OKABE_ITO[0],
            text=[f"{v:.1%}" for v in vals],
            textposition="auto",
            hovertemplate="%{x}: %{y:.4f}<extra></extra>",
        )
    )
    fig.update_yaxes(range=[0, 1])
    return layout(fig, title, 280)
