"""Figures for lessons 2-3 (seq2seq bottleneck, Bahdanau attention).

Every builder takes already-computed numbers (from core.seq2seq.explain / evaluate / manifest)
and translated strings from the page; none of them computes model outputs. All user text goes
through escape_label (via core.figures.heatmap or directly).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import HIGHLIGHT, OKABE_ITO, bar_strip, escape_label, heatmap, heatmap_titles, layout, log_ticks, merge_labels

SERIES_COLOURS = {"none": OKABE_ITO[5], "bahdanau": OKABE_ITO[0]}  # vermilion vs blue: CVD-safe pair


def _show_char(ch: str) -> str:
    """Spaces are invisible as tick labels; show them as ␣."""
    return "␣" if ch == " " else ch


def c_strip(c: Sequence[float], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """The fixed-length vector c as one strip of colours: its size is its width. Labels: title, value."""
    return bar_strip(c, labels=merge_labels({"title": "", "value": "c"}, labels), height=130)


def accuracy_vs_length(
    entries: Sequence[dict], *, names: dict[str, str], labels: Mapping[str, str] | None = None
) -> go.Figure:
    """Held-out exact match by source-length bucket, one line per model (manifest / evaluate).
    ``names``: a model's display name by its attention kind. Labels: title, x, y."""
    lab = merge_labels({"title": "", "x": "input length", "y": "exact match"}, labels)
    fig = go.Figure()
    for e in entries:
        xs = [b["lengths"] for b in e["by_length"]]
        ys = [b["exact_match"] for b in e["by_length"]]
        ns = [b["n"] for b in e["by_length"]]
        name = escape_label(names.get(e["attention"], e["attention"]))
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                name=name,
                customdata=ns,
                line=dict(color=SERIES_COLOURS.get(e["attention"]), width=3),
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.1%}} (n=%{{customdata}})<extra></extra>",
            )
        )
    fig.update_yaxes(range=[-0.02, 1.02], tickformat=".0%", title_text=escape_label(lab["y"]))
    fig.update_xaxes(title_text=escape_label(lab["x"]), type="category")
    return layout(fig, lab["title"], 360, legend=dict(orientation="h", y=-0.25), margin=dict(t=50))


def per_position(
    entries: Sequence[dict], *, names: dict[str, str], labels: Mapping[str, str] | None = None
) -> go.Figure:
    """Token accuracy at each output position (for copy: position i reproduces input i).
    Labels: title, x, y."""
    lab = merge_labels({"title": "", "x": "output position", "y": "token accuracy"}, labels)
    fig = go.Figure()
    for e in entries:
        name = escape_label(names.get(e["attention"], e["attention"]))
        fig.add_trace(
            go.Scatter(
                x=[p["position"] for p in e["per_position"]],
                y=[p["accuracy"] for p in e["per_position"]],
                customdata=[p["n"] for p in e["per_position"]],
                mode="lines+markers",
                name=name,
                line=dict(color=SERIES_COLOURS.get(e["attention"]), width=3),
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.1%}} (n=%{{customdata}})<extra></extra>",
            )
        )
    fig.update_yaxes(range=[-0.02, 1.02], tickformat=".0%", title_text=escape_label(lab["y"]))
    fig.update_xaxes(title_text=escape_label(lab["x"]))
    return layout(fig, lab["title"], 340, legend=dict(orientation="h", y=-0.25), margin=dict(t=50))


def position_marks(
    target: str, output: str, marks: Sequence[bool | None], *, labels: Mapping[str, str] | None = None
) -> go.Figure:
    """One row per target character, green when the model's character at that position is right.
    Labels: title."""
    title = merge_labels({"title": ""}, labels)["title"]
    n = len(target)
    z = [[1.0 if m else 0.0 for m in marks]]
    out = [output[i] if i < len(output) else "∅" for i in range(n)]
    labels = [escape_label(_show_char(c)) for c in target]
    custom = [[escape_label(_show_char(o)) for o in out]]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(n)),
            y=[0],
            zmin=0,
            zmax=1,
            showscale=False,
            customdata=custom,
            colorscale=[[0, OKABE_ITO[5]], [1, OKABE_ITO[2]]],
            xgap=2,
            hovertemplate="%{x}: " + "%{customdata}" + "<extra></extra>",
        )
    )
    fig.update_xaxes(tickmode="array", tickvals=list(range(n)), ticktext=labels, side="top")
    fig.update_yaxes(tickmode="array", tickvals=[0], ticktext=[""])
    return layout(fig, title, 140, margin=dict(t=60 if title else 30))


def annotations(
    forward: Sequence[Sequence[float]],
    backward: Sequence[Sequence[float]],
    source: Sequence[str],
    *,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """h_j = [→h_j ; ←h_j]: one row per input character, forward half then backward half.
    Labels: title, x, y, forward, backward."""
    lab = merge_labels({"title": "", "x": "dimension", "y": "input", "forward": "→h_j", "backward": "←h_j"}, labels)
    H = len(forward[0])
    rows = [list(f) + list(b) for f, b in zip(forward, backward)]
    xs = [f"→{d}" for d in range(H)] + [f"←{d}" for d in range(H)]
    fig = heatmap(
        rows,
        xs,
        [f"{_show_char(c)}" for c in source],
        **heatmap_titles({**lab, "value": "h"}),
        zmin=-1.0,
        zmax=1.0,
        colorscale="RdBu",
        precision=3,
    )
    # dimension numbers below (every few, so they stay upright and apart); the two halves named above
    every = max(1, -(-2 * H // 16))
    ticks = [x for d, x in enumerate(xs) if d % H % every == 0]
    fig.update_xaxes(side="bottom", tickangle=0, tickmode="array", tickvals=ticks, ticktext=ticks)
    fig.add_vline(x=H - 0.5, line=dict(color="black", width=3))
    for x, text in ((H / 2 - 0.5, lab["forward"]), (H + H / 2 - 0.5, lab["backward"])):
        fig.add_annotation(
            x=x, y=1.0, yref="paper", yanchor="bottom", text=escape_label(text), showarrow=False, font=dict(size=16)
        )
    title = lab["title"]
    fig.update_layout(height=max(260, 26 * len(source) + 150), margin=dict(t=(80 if title else 40), b=60))
    return fig


def alignment(
    weights: Sequence[Sequence[float]],
    source: Sequence[str],
    outputs: Sequence[str],
    *,
    step: int | None = None,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """The full alignment heatmap (Bahdanau et al. 2014, Fig. 3): outputs down, inputs across.
    Labels: title, x, y, value."""
    lab = merge_labels({"title": "", "x": "input x_j", "y": "output y_i", "value": "α_ij"}, labels)
    fig = heatmap(
        weights,
        [_show_char(c) for c in source],
        [_show_char(c) for c in outputs],
        **heatmap_titles(lab),
        highlight_row=step,
    )
    return layout(fig, lab["title"], top=120) if lab["title"] else fig


def decoder_step(
    energies: Sequence[float],
    weights: Sequence[float],
    source: Sequence[str],
    *,
    reveal: bool = True,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """Step i: the scores e_ij (top) and, once revealed, the weights α_ij = softmax(e_i·) (bottom).
    Labels: title, energy (the top panel), weight (the bottom panel)."""
    lab = merge_labels({"title": "", "energy": "e_ij", "weight": "α_ij"}, labels)
    title, e_title, a_title = lab["title"], lab["energy"], lab["weight"]
    xs = list(range(len(source)))
    ticks = [escape_label(_show_char(c)) for c in source]
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=(escape_label(e_title), escape_label(a_title)),
    )
    fig.add_trace(
        go.Bar(
            x=xs,
            y=[round(v, 4) for v in energies],
            marker_color=OKABE_ITO[4],
            customdata=ticks,
            name=escape_label(e_title),
            hovertemplate="%{customdata} (%{x}): %{y:.4f}<extra></extra>",
        ),
        1,
        1,
    )
    if reveal:
        best = max(xs, key=lambda j: weights[j]) if weights else -1
        colours = [HIGHLIGHT if j == best else OKABE_ITO[0] for j in xs]
        fig.add_trace(
            go.Bar(
                x=xs,
                y=[round(v, 4) for v in weights],
                marker_color=colours,
                customdata=ticks,
                name=escape_label(a_title),
                hovertemplate="%{customdata} (%{x}): %{y:.4f}<extra></extra>",
            ),
            2,
            1,
        )
    fig.update_yaxes(range=[0, 1], row=2, col=1)
    fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=ticks, row=2, col=1)
    fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=ticks, row=1, col=1)
    return layout(fig, title, 420, showlegend=False, margin=dict(t=70 if title else 40))


def loss_curve(points: Sequence[tuple[int, float]], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Training loss by step, log scale. Labels: title, x, y."""
    lab = merge_labels({"title": "", "x": "step", "y": "loss"}, labels)
    fig = go.Figure(
        go.Scatter(
            x=[p[0] for p in points],
            y=[p[1] for p in points],
            mode="lines",
            line=dict(color=OKABE_ITO[0]),
            hovertemplate="%{x}: %{y:.4f}<extra></extra>",
        )
    )
    ys = [p[1] for p in points if p[1] > 0]
    ticks = log_ticks(min(ys), max(ys)) if ys else ([], [])
    fig.update_yaxes(
        type="log", title_text=escape_label(lab["y"]), tickmode="array", tickvals=ticks[0], ticktext=ticks[1]
    )
    fig.update_xaxes(title_text=escape_label(lab["x"]))
    return layout(fig, lab["title"], 260, margin=dict(t=40 if lab["title"] else 10))


def position_by_length(entry: dict, *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Token accuracy at each position, one row per input-length bucket (blank where no input of
    that length has that position). Read down a column: the same early letter, followed by more
    and more letters. Labels: title, x, y, value."""
    lab = merge_labels({"title": "", "x": "output position", "y": "input length", "value": "token accuracy"}, labels)
    rows = entry["per_position_by_length"]
    width = max(len(r["accuracy"]) for r in rows)
    z = [list(r["accuracy"]) + [float("nan")] * (width - len(r["accuracy"])) for r in rows]
    fig = heatmap(
        z,
        [str(i + 1) for i in range(width)],
        [r["lengths"] for r in rows],
        **heatmap_titles(lab),
        precision=3,
        height=170 + 34 * len(rows),
    )
    return layout(fig, lab["title"], top=120) if lab["title"] else fig
