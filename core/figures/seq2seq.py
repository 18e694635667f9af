"""Figures for lessons 2-3 (seq2seq bottleneck, Bahdanau attention).

Every builder takes already-computed numbers (from core.seq2seq.explain / evaluate / manifest)
and translated strings from the page; none of them computes model outputs. All user text goes
through escape_label (via core.figures.heatmap or directly).
"""
from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import FONT, HIGHLIGHT, OKABE_ITO, bar_strip, escape_label, heatmap

SERIES_COLOURS = {"none": OKABE_ITO[5], "bahdanau": OKABE_ITO[0]}  # vermilion vs blue: CVD-safe pair


def _room_for_title(fig: go.Figure, title: str) -> go.Figure:
    """core.figures.heatmap puts the x-axis title on top; leave room for the figure title above it."""
    if title:
        fig.update_layout(margin=dict(t=120), title=dict(y=0.99, yanchor="top"))
    return fig


def _show_char(ch: str) -> str:
    """Spaces are invisible as tick labels; show them as ␣."""
    return "␣" if ch == " " else ch


def c_strip(c: Sequence[float], *, title: str = "", value_name: str = "c") -> go.Figure:
    """The fixed-length vector c as one strip of colours: its size is its width."""
    return bar_strip(c, title=title, value_name=value_name, height=130)


def accuracy_vs_length(entries: Sequence[dict], *, names: dict[str, str], title: str = "",
                       x_title: str = "input length", y_title: str = "exact match") -> go.Figure:
    """Held-out exact match by source-length bucket, one line per model (manifest / evaluate)."""
    fig = go.Figure()
    for e in entries:
        xs = [b["lengths"] for b in e["by_length"]]
        ys = [b["exact_match"] for b in e["by_length"]]
        ns = [b["n"] for b in e["by_length"]]
        name = escape_label(names.get(e["attention"], e["attention"]))
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines+markers", name=name, customdata=ns,
            line=dict(color=SERIES_COLOURS.get(e["attention"]), width=3),
            hovertemplate=f"{name}<br>%{{x}}: %{{y:.1%}} (n=%{{customdata}})<extra></extra>"))
    fig.update_yaxes(range=[-0.02, 1.02], tickformat=".0%", title_text=escape_label(y_title))
    fig.update_xaxes(title_text=escape_label(x_title), type="category")
    fig.update_layout(title=dict(text=escape_label(title)), font=FONT, height=360,
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def per_position(entries: Sequence[dict], *, names: dict[str, str], title: str = "",
                 x_title: str = "output position", y_title: str = "token accuracy") -> go.Figure:
    """Token accuracy at each output position (for copy: position i reproduces input i)."""
    fig = go.Figure()
    for e in entries:
        name = escape_label(names.get(e["attention"], e["attention"]))
        fig.add_trace(go.Scatter(
            x=[p["position"] for p in e["per_position"]], y=[p["accuracy"] for p in e["per_position"]],
            customdata=[p["n"] for p in e["per_position"]], mode="lines+markers", name=name,
            line=dict(color=SERIES_COLOURS.get(e["attention"]), width=3),
            hovertemplate=f"{name}<br>%{{x}}: %{{y:.1%}} (n=%{{customdata}})<extra></extra>"))
    fig.update_yaxes(range=[-0.02, 1.02], tickformat=".0%", title_text=escape_label(y_title))
    fig.update_xaxes(title_text=escape_label(x_title))
    fig.update_layout(title=dict(text=escape_label(title)), font=FONT, height=340,
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def position_marks(target: str, output: str, marks: Sequence[bool | None], *, title: str = "",
                   right: str = "right", wrong: str = "wrong") -> go.Figure:
    """One row per target character, green when the model's character at that position is right."""
    n = len(target)
    z = [[1.0 if m else 0.0 for m in marks]]
    out = [output[i] if i < len(output) else "∅" for i in range(n)]
    labels = [escape_label(_show_char(c)) for c in target]
    custom = [[escape_label(_show_char(o)) for o in out]]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(n)), y=[0], zmin=0, zmax=1, showscale=False, customdata=custom,
        colorscale=[[0, OKABE_ITO[5]], [1, OKABE_ITO[2]]], xgap=2,
        hovertemplate="%{x}: " + "%{customdata}" + "<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(n)), ticktext=labels, side="top")
    fig.update_yaxes(tickmode="array", tickvals=[0], ticktext=[""])
    fig.update_layout(title=dict(text=escape_label(title)), font=FONT, height=140,
                      margin=dict(l=10, r=10, t=60 if title else 30, b=10))
    return fig


def annotations(forward: Sequence[Sequence[float]], backward: Sequence[Sequence[float]],
                source: Sequence[str], *, title: str = "", x_title: str = "dimension",
                y_title: str = "input", fwd_label: str = "→h_j", bwd_label: str = "←h_j") -> go.Figure:
    """h_j = [→h_j ; ←h_j]: one row per input character, forward half then backward half."""
    H = len(forward[0])
    rows = [list(f) + list(b) for f, b in zip(forward, backward)]
    xs = [f"→{d}" for d in range(H)] + [f"←{d}" for d in range(H)]
    fig = heatmap(rows, xs, [f"{_show_char(c)}" for c in source], title=title, x_title=x_title,
                  y_title=y_title, value_name="h", zmin=-1.0, zmax=1.0, colorscale="RdBu",
                  precision=3)
    fig.update_xaxes(showticklabels=False, side="bottom")
    fig.add_vline(x=H - 0.5, line=dict(color="black", width=3))
    for x, text in ((H / 2 - 0.5, fwd_label), (H + H / 2 - 0.5, bwd_label)):
        fig.add_annotation(x=x, y=-0.9, text=escape_label(text), showarrow=False, yref="y",
                           font=dict(size=16))
    fig.update_layout(height=max(260, 26 * len(source) + 160))
    return fig


def alignment(weights: Sequence[Sequence[float]], source: Sequence[str], outputs: Sequence[str], *,
              step: int | None = None, title: str = "", x_title: str = "input x_j",
              y_title: str = "output y_i", value_name: str = "α_ij") -> go.Figure:
    """The full alignment heatmap (Bahdanau et al. 2014, Fig. 3): outputs down, inputs across."""
    fig = heatmap(weights, [_show_char(c) for c in source], [_show_char(c) for c in outputs],
                  title=title, x_title=x_title, y_title=y_title, value_name=value_name,
                  highlight_row=step)
    return _room_for_title(fig, title)


def decoder_step(energies: Sequence[float], weights: Sequence[float], source: Sequence[str], *,
                 reveal: bool = True, title: str = "", e_title: str = "e_ij",
                 a_title: str = "α_ij") -> go.Figure:
    """Step i: the scores e_ij (top) and, once revealed, the weights α_ij = softmax(e_i·) (bottom)."""
    xs = list(range(len(source)))
    ticks = [escape_label(_show_char(c)) for c in source]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=(escape_label(e_title), escape_label(a_title)))
    fig.add_trace(go.Bar(x=xs, y=[round(v, 4) for v in energies], marker_color=OKABE_ITO[4],
                         customdata=ticks, name=escape_label(e_title),
                         hovertemplate="%{customdata} (%{x}): %{y:.4f}<extra></extra>"), 1, 1)
    if reveal:
        best = max(xs, key=lambda j: weights[j]) if weights else -1
        colours = [HIGHLIGHT if j == best else OKABE_ITO[0] for j in xs]
        fig.add_trace(go.Bar(x=xs, y=[round(v, 4) for v in weights], marker_color=colours,
                             customdata=ticks, name=escape_label(a_title),
                             hovertemplate="%{customdata} (%{x}): %{y:.4f}<extra></extra>"), 2, 1)
    fig.update_yaxes(range=[0, 1], row=2, col=1)
    fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=ticks, row=2, col=1)
    fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=ticks, row=1, col=1)
    fig.update_layout(title=dict(text=escape_label(title)), font=FONT, height=420, showlegend=False,
                      margin=dict(l=10, r=10, t=70 if title else 40, b=10))
    return fig


def loss_curve(points: Sequence[tuple[int, float]], *, title: str = "", x_title: str = "step",
               y_title: str = "loss") -> go.Figure:
    fig = go.Figure(go.Scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="lines",
                               line=dict(color=OKABE_ITO[0]),
                               hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
    fig.update_yaxes(type="log", title_text=escape_label(y_title))
    fig.update_xaxes(title_text=escape_label(x_title))
    fig.update_layout(title=dict(text=escape_label(title)), font=FONT, height=260,
                      margin=dict(l=10, r=10, t=40 if title else 10, b=10))
    return fig


def position_by_length(entry: dict, *, title: str = "", x_title: str = "output position",
                       y_title: str = "input length", value_name: str = "token accuracy") -> go.Figure:
    """Token accuracy at each position, one row per input-length bucket (blank where no input of
    that length has that position). Read down a column: the same early letter, followed by more
    and more letters."""
    rows = entry["per_position_by_length"]
    width = max(len(r["accuracy"]) for r in rows)
    z = [list(r["accuracy"]) + [float("nan")] * (width - len(r["accuracy"])) for r in rows]
    fig = heatmap(z, [str(i + 1) for i in range(width)], [r["lengths"] for r in rows], title=title,
                  x_title=x_title, y_title=y_title, value_name=value_name, precision=3,
                  height=170 + 34 * len(rows))
    return _room_for_title(fig, title)
