"""Figures for lessons 6–7 (BERT's inputs and outputs). Every label that may hold user text goes
through escape_label; every number on a figure is the one computed in core.bert (rounded for hover).

Titles and axis names are passed in by the caller (already translated); builders only draw.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import FONT, HIGHLIGHT, OKABE_ITO, escape_label, heatmap

# Colours for the masking simulator's categories (Okabe-Ito, distinguishable without red/green).
ACTION_COLOURS = {"special": "#BBBBBB", "not chosen": "#F2F2F2", "mask": OKABE_ITO[0],
                  "random": OKABE_ITO[5], "keep": OKABE_ITO[2]}
SENTIMENT_COLOURS = {"positive": OKABE_ITO[0], "neutral": "#999999", "negative": OKABE_ITO[5]}


def _layout(fig: go.Figure, title: str, height: int, **kw) -> go.Figure:
    fig.update_layout(title=dict(text=escape_label(title)), font=FONT, height=height,
                      margin=dict(l=10, r=10, t=50 if title else 20, b=10), **kw)
    return fig


def _grid(z, text, hover, x_ticks, y_ticks, colorscale, title, zmin=None, zmax=None, height=None,
          showscale=False) -> go.Figure:
    """A labelled grid of cells (tokens across): the shape every input table takes."""
    fig = go.Figure(go.Heatmap(z=z, text=text, texttemplate="%{text}", customdata=hover,
                               hovertemplate="%{customdata}<extra></extra>", colorscale=colorscale,
                               zmin=zmin, zmax=zmax, showscale=showscale, xgap=2, ygap=2,
                               x=list(range(len(x_ticks))), y=list(range(len(y_ticks)))))
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(x_ticks))), ticktext=x_ticks, side="top",
                     showgrid=False, tickangle=-45 if len(x_ticks) > 10 else 0)
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(y_ticks))), ticktext=y_ticks,
                     autorange="reversed", showgrid=False)
    fig = _layout(fig, title, (height or 80 + 46 * len(y_ticks)) + 30, plot_bgcolor="white")
    # x tick labels sit on top: keep the title above them
    fig.update_layout(margin=dict(t=110 if title else 70), title=dict(y=0.98, yanchor="top"))
    return fig


def wordpiece_figure(tokens: Sequence[str], ids: Sequence[int], word_index: Sequence[int],
                     continuation: Sequence[bool], *, title: str = "", id_label: str = "id",
                     piece_label: str = "piece") -> go.Figure:
    """WordPiece pieces in a row, the two-row cell (piece over id), shaded by the word they belong to."""
    toks = [escape_label(t) for t in tokens]
    n = len(toks)
    z = [[w % 2 + (0.5 if c else 0) for w, c in zip(word_index, continuation)]] * 2
    text = [toks, [str(i) for i in ids]]
    hover = [[f"{piece_label} {j}: {toks[j]}<br>{id_label}: {ids[j]}" for j in range(n)]] * 2
    return _grid(z, text, hover, [str(j) for j in range(n)], [piece_label, id_label],
                 [[0, "#DCEBF7"], [0.33, "#9CC7EA"], [0.66, "#FBE3C2"], [1, "#F4BE7A"]], title, 0, 1.5,
                 height=170)


def input_rows_figure(tokens: Sequence[str], rows: dict[str, Sequence[int]], *, title: str = "",
                      colour_row: str | None = None) -> go.Figure:
    """Tokens across; one row per id sequence (input ids, segment ids, position ids, mask)."""
    toks = [escape_label(t) for t in tokens]
    names = list(rows)
    key = colour_row if colour_row in rows else names[0]
    shade = [float(v) for v in rows[key]]
    hi = max(shade) if shade and max(shade) > 0 else 1.0
    z = [[s / hi for s in shade] for _ in [None] + names]
    text = [toks] + [[str(v) for v in rows[name]] for name in names]
    hover = [[f"{j}: {toks[j]}" + "".join(f"<br>{escape_label(nm)}: {rows[nm][j]}" for nm in names)
              for j in range(len(toks))] for _ in [None] + names]
    labels = ["token"] + [escape_label(n) for n in names]
    return _grid(z, text, hover, [str(j) for j in range(len(toks))], labels,
                 [[0, "#EAF2FA"], [1, "#F6D7A7"]], title, 0, 1)


def batch_figure(tokens: Sequence[Sequence[str]], mask: Sequence[Sequence[int]], *, title: str = "",
                 row_label: str = "sentence", mask_label: str = "mask") -> go.Figure:
    """A padded batch: one row per sentence, cells = tokens, shaded by the attention mask."""
    text = [[escape_label(t) for t in row] for row in tokens]
    hover = [[f"{row_label} {r}, position {j}: {text[r][j]}<br>{mask_label} = {mask[r][j]}"
              for j in range(len(row))] for r, row in enumerate(tokens)]
    z = [[float(m) for m in row] for row in mask]
    width = len(tokens[0]) if tokens else 0
    return _grid(z, text, hover, [str(j) for j in range(width)], [f"{row_label} {r + 1}" for r in range(len(tokens))],
                 [[0, "#DDDDDD"], [1, "#9CC7EA"]], title, 0, 1, height=170)


def embedding_strips(rows: dict[str, np.ndarray], norms: dict[str, float], *, title: str = "",
                     dim_label: str = "dimension", norm_label: str = "norm", scale_note: str = "") -> go.Figure:
    """One token's vectors as strips of colour, one strip per part (token, segment, position, sum,
    LayerNorm), each with its L2 norm in the row label. Each strip is coloured on its own scale
    (divided by its largest |value|), because LayerNorm's output is ~10x larger than the three
    inputs and would wash them out; the hover shows the true value."""
    names = list(rows)
    data = np.stack([np.asarray(rows[n], dtype=np.float64) for n in names])      # (parts, H)
    peak = np.abs(data).max(axis=1, keepdims=True)                                # (parts, 1)
    scaled = data / np.where(peak > 0, peak, 1.0)                                 # (parts, H) in [-1, 1]
    labels = [f"{escape_label(n)}  ({norm_label} {norms[n]:.3f})" for n in names]
    fig = go.Figure(go.Heatmap(z=np.round(scaled, 4).tolist(), x=list(range(data.shape[1])), y=list(range(len(names))),
                               customdata=np.round(data, 4).tolist(), text=[[labels[i]] * data.shape[1] for i in range(len(names))],
                               colorscale="RdBu", reversescale=True, zmid=0, zmin=-1, zmax=1, showscale=False,
                               hovertemplate=f"%{{text}}<br>{escape_label(dim_label)} %{{x}}: %{{customdata:.4f}}<extra></extra>",
                               ygap=6))
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(names))), ticktext=labels, autorange="reversed")
    fig.update_xaxes(title_text=escape_label(dim_label + (f" · {scale_note}" if scale_note else "")))
    return _layout(fig, title, 90 + 48 * len(names))


def norms_figure(tokens: Sequence[str], norms: dict[str, Sequence[float]], *, title: str = "",
                 y_title: str = "L2 norm") -> go.Figure:
    """Grouped bars: each part's norm at each token position."""
    toks = [escape_label(t) for t in tokens]
    fig = go.Figure()
    for k, (name, vals) in enumerate(norms.items()):
        fig.add_bar(x=list(range(len(toks))), y=[round(float(v), 4) for v in vals], name=escape_label(name),
                    marker_color=OKABE_ITO[k % len(OKABE_ITO)], customdata=toks,
                    hovertemplate=f"%{{customdata}} (%{{x}})<br>{escape_label(name)}: %{{y:.4f}}<extra></extra>")
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(toks))), ticktext=toks,
                     tickangle=-45 if len(toks) > 10 else 0)
    fig.update_yaxes(title_text=escape_label(y_title))
    return _layout(fig, title, 360, barmode="group", legend=dict(orientation="h", y=-0.25))


def anatomy_figure(models: dict[str, dict[str, int]], *, title: str = "", x_title: str = "parameters") -> go.Figure:
    """Stacked horizontal bars: each model's parameters by block (exact count on hover)."""
    names = list(models)
    blocks = list(next(iter(models.values())))
    fig = go.Figure()
    for k, block in enumerate(blocks):
        vals = [models[m][block] for m in names]
        fig.add_bar(y=[escape_label(m) for m in names], x=vals, orientation="h", name=escape_label(block),
                    marker_color=OKABE_ITO[k % len(OKABE_ITO)],
                    customdata=[f"{v:,}" for v in vals],
                    hovertemplate=f"%{{y}}<br>{escape_label(block)}: %{{customdata}}<extra></extra>")
    fig.update_xaxes(title_text=escape_label(x_title))
    return _layout(fig, title, 120 + 60 * len(names), barmode="stack",
                   legend=dict(orientation="h", y=-0.3, traceorder="normal"))


def layer_parts_figure(parts: dict[str, int], *, title: str = "") -> go.Figure:
    """One encoder layer's parameters by part, as bars (exact counts on hover)."""
    names = [escape_label(n) for n in parts]
    vals = list(parts.values())
    fig = go.Figure(go.Bar(x=vals, y=names, orientation="h", marker_color=OKABE_ITO[0],
                           text=[f"{v:,}" for v in vals], textposition="auto",
                           hovertemplate="%{y}: %{x:,}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, 80 + 32 * len(names))


def hidden_figure(states: np.ndarray, tokens: Sequence[str], *, title: str = "",
                  dim_label: str = "dimension", value_name: str = "value") -> go.Figure:
    """(T, H) hidden states: tokens down, dimensions across, diverging scale."""
    s = np.asarray(states, dtype=np.float64)
    lim = float(np.abs(s).max()) or 1.0
    toks = [escape_label(t) for t in tokens]
    fig = go.Figure(go.Heatmap(z=np.round(s, 4).tolist(), x=list(range(s.shape[1])), y=list(range(s.shape[0])),
                               colorscale="RdBu", reversescale=True, zmid=0, zmin=-lim, zmax=lim,
                               customdata=[[t] * s.shape[1] for t in toks],
                               hovertemplate=(f"%{{customdata}} (%{{y}})<br>{escape_label(dim_label)} %{{x}}<br>"
                                              f"{escape_label(value_name)}: %{{z:.4f}}<extra></extra>"),
                               colorbar=dict(thickness=10)))
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(toks))), ticktext=toks, autorange="reversed")
    fig.update_xaxes(title_text=escape_label(dim_label))
    return _layout(fig, title, max(220, 60 + 22 * len(toks)))


def trajectory_figure(rows: list[dict], *, title: str = "", names: dict[str, str] | None = None) -> go.Figure:
    """One token through the layers: its norm and each layer's update size (top), cosine to the
    previous layer and to its embedding (bottom)."""
    names = names or {}
    layers = [r["layer"] for r in rows]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    for k, key in enumerate(("norm", "change")):
        fig.add_scatter(x=layers, y=[round(r[key], 4) for r in rows], mode="lines+markers",
                        name=escape_label(names.get(key, key)), marker_color=OKABE_ITO[k], row=1, col=1)
    for k, key in enumerate(("cos_prev", "cos_embedding")):
        fig.add_scatter(x=layers, y=[round(r[key], 4) for r in rows], mode="lines+markers",
                        name=escape_label(names.get(key, key)), marker_color=OKABE_ITO[k + 2], row=2, col=1)
    fig.update_xaxes(title_text=escape_label(names.get("layer", "layer")), dtick=1, row=2, col=1)
    fig.update_yaxes(range=[min(-0.05, min(r["cos_embedding"] for r in rows) - 0.05), 1.05], row=2, col=1)
    return _layout(fig, title, 460, legend=dict(orientation="h", y=-0.2))


def similarity_figure(matrix, labels: Sequence[str], *, title: str = "", value_name: str = "cosine") -> go.Figure:
    """Sentences numbered: "1: text" down, the numbers across (long sentences would collide on top)."""
    short = [lab if len(lab) <= 40 else lab[:39] + "…" for lab in labels]
    fig = heatmap(matrix, [str(i + 1) for i in range(len(short))], [f"{i + 1}: {s}" for i, s in enumerate(short)],
                  title=title, value_name=value_name, zmin=-1.0, zmax=1.0, precision=3, colorscale="RdBu_r")
    fig.update_traces(text=[[f"{v:.2f}" for v in row] for row in np.asarray(matrix, dtype=np.float64)],
                      texttemplate="%{text}")
    return fig


def masking_figure(original: Sequence[str], shown: Sequence[str], actions: Sequence[str], *, title: str = "",
                   action_names: dict[str, str] | None = None, row_names: tuple[str, str] = ("original", "input")
                   ) -> go.Figure:
    """The masking simulator: original tokens over what the model is fed, coloured by what happened."""
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
    hover = [[f"{j}: {o[j]} → {s[j]}<br>{escape_label(action_names.get(actions[j], actions[j]))}"
              for j in range(len(o))]] * 2
    fig = _grid(z, [o, s], hover, [str(j) for j in range(len(o))], [escape_label(r) for r in row_names],
                scale, title, 0, 1, height=190)
    for a in order:  # legend entries for the categories
        fig.add_scatter(x=[None], y=[None], mode="markers", name=escape_label(action_names.get(a, a)),
                        marker=dict(size=12, color=ACTION_COLOURS[a], symbol="square", line=dict(color="#888", width=1)))
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.15))
    return fig


def topk_figure(masks: list[dict], tokens: Sequence[str], *, title: str = "", prob_label: str = "probability"
                ) -> go.Figure:
    """Top-k predictions at each [MASK], one panel per mask."""
    k = max(1, len(masks))
    fig = make_subplots(rows=1, cols=k, subplot_titles=[f"[MASK] @ {m['position']}" for m in masks] or [""])
    for c, m in enumerate(masks, start=1):
        toks = [escape_label(t["token"]) for t in m["top"]]
        fig.add_bar(x=[round(t["probability"], 4) for t in m["top"]], y=toks, orientation="h",
                    marker_color=OKABE_ITO[0], showlegend=False,
                    hovertemplate=f"%{{y}}<br>{escape_label(prob_label)}: %{{x:.4f}}<extra></extra>", row=1, col=c)
        fig.update_yaxes(autorange="reversed", row=1, col=c)
        fig.update_xaxes(range=[0, 1], row=1, col=c)
    return _layout(fig, title, 320)


def nsp_figure(is_next: float, not_next: float, *, title: str = "", names: tuple[str, str] = ("IsNext", "NotNext")
               ) -> go.Figure:
    fig = go.Figure(go.Bar(x=[escape_label(n) for n in names], y=[round(is_next, 4), round(not_next, 4)],
                           marker_color=[OKABE_ITO[0], OKABE_ITO[5]], text=[f"{is_next:.1%}", f"{not_next:.1%}"],
                           textposition="auto", hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, title, 300)


def task_heads_figure(tokens: Sequence[str], *, title: str = "", names: dict[str, str] | None = None) -> go.Figure:
    """Which output each fine-tuning head reads (Devlin et al. 2018, Figure 4): classification
    reads C at [CLS]; token labeling reads every T_i; span QA scores every T_i with S (start) and E (end)."""
    names = names or {}
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
                txt.append("tag" if on else "")
            else:
                on = t not in special
                txt.append(("S·T" if h == "start" else "E·T") if on else "")
            row.append(1.0 if on else 0.0)
        z.append(row)
        text.append(txt)
    hover = [[f"{escape_label(names.get(h, h))}<br>{toks[j]}" for j in range(len(toks))] for h in heads]
    return _grid(z, text, hover, toks, [escape_label(names.get(h, h)) for h in heads],
                 [[0, "#F2F2F2"], [1, "#9CC7EA"]], title, 0, 1)


def factor_figure(days: list[dict], *, title: str = "", names: dict[str, str] | None = None) -> go.Figure:
    """Per day: stacked counts of the model's positive / neutral / negative posts (bars, left axis),
    the model's factor and the authors' factor (lines, right axis, in [-1, 1])."""
    names = names or {}
    x = [escape_label(d["date"]) for d in days]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for lab in ("positive", "neutral", "negative"):
        fig.add_bar(x=x, y=[d[f"model_{lab}"] for d in days], name=escape_label(names.get(lab, lab)),
                    marker_color=SENTIMENT_COLOURS[lab], opacity=0.75, secondary_y=False,
                    hovertemplate=f"%{{x}}<br>{escape_label(names.get(lab, lab))}: %{{y}}<extra></extra>")
    fig.add_scatter(x=x, y=[round(d["factor_model"], 4) for d in days], mode="lines+markers",
                    name=escape_label(names.get("factor_model", "factor (model)")),
                    line=dict(color="#000000", width=3), secondary_y=True)
    fig.add_scatter(x=x, y=[round(d["factor_human"], 4) for d in days], mode="lines+markers",
                    name=escape_label(names.get("factor_human", "factor (authors' labels)")),
                    line=dict(color=HIGHLIGHT, width=2, dash="dash"), secondary_y=True)
    fig.update_yaxes(title_text=escape_label(names.get("posts", "posts")), secondary_y=False)
    fig.update_yaxes(title_text=escape_label(names.get("factor", "factor")), range=[-1.05, 1.05], secondary_y=True,
                     zeroline=True, tickvals=[-1, -0.5, 0, 0.5, 1], showgrid=False)
    return _layout(fig, title, 420, barmode="stack", legend=dict(orientation="h", y=-0.2, traceorder="normal"))


def confusion_figure(confusion: list[list[int]], labels: Sequence[str], *, title: str = "",
                     x_title: str = "predicted", y_title: str = "label", value_name: str = "posts") -> go.Figure:
    hi = max(max(r) for r in confusion) or 1
    fig = heatmap(confusion, labels, labels, title=title, x_title=x_title, y_title=y_title, value_name=value_name,
                  zmin=0, zmax=hi, precision=0, height=340)
    fig.update_traces(text=[[str(v) for v in r] for r in confusion], texttemplate="%{text}")
    fig.update_layout(margin=dict(t=120), title=dict(y=0.98, yanchor="top"))
    return fig


def probs_figure(labels: Sequence[str], probs: Sequence[float], *, title: str = "",
                 colours: Sequence[str] | None = None) -> go.Figure:
    """A small probability bar chart (one post's sentiment, one pair's NSP)."""
    names = [escape_label(x) for x in labels]
    vals = [round(float(p), 4) for p in probs]
    fig = go.Figure(go.Bar(x=names, y=vals, marker_color=list(colours) if colours else OKABE_ITO[0],
                           text=[f"{v:.1%}" for v in vals], textposition="auto",
                           hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, title, 280)
