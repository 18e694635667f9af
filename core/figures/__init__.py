"""Plotly figure builders: the one place where pictures are made.

Every attention picture in the app goes through :func:`heatmap`, so they all read the same way
(d2l's habit): queries (or outputs) down, keys (or inputs) across, one colour-blind-safe scale,
exact values on hover. Topic-specific builders live beside this file (seq2seq.py, attention.py,
bert.py, megatron.py) and reuse these helpers.
"""

from __future__ import annotations

import html
from typing import Mapping, Sequence

import numpy as np

# pandas is imported before any figure can be built: plotly's validators look pandas up in
# sys.modules without importing it, and on a cold server one session's thread can find the module
# another thread is still importing ("partially initialized module 'pandas' has no attribute
# 'Series'": lesson 5's first loads failed this way). Importing it here, under the import lock of this
# package, means every figure builder runs after pandas is complete.
import pandas  # noqa: F401
import plotly.graph_objects as go
from _plotly_utils.utils import convert_to_base64

# Viridis is perceptually uniform and readable with the common colour-vision deficiencies,
# and it stays legible on a washed-out projector.
ATTENTION_SCALE = "Viridis"
HIGHLIGHT = "#E69F00"  # Okabe-Ito orange: stands out against Viridis
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
FONT = dict(family="Noto Sans, Noto Sans CJK TC, PingFang TC, Microsoft JhengHei, sans-serif", size=12)
# The smallest text a figure may draw, in px at 1400 px wide: text that would have to shrink below it
# (a bar label inside a thin bar) is hidden instead, and the hover still has it.
MIN_TEXT_PX = 11
UNIFORM_TEXT = dict(minsize=MIN_TEXT_PX, mode="hide")


PLOT_PX = 760  # the plot area a figure gets in the main column at 1400 px, sidebar open


def text_px(text: str, size: int = 12) -> int:
    """About how wide ``text`` is at ``size`` px: CJK and full-width characters are one em, others
    ~0.6 em (the app's sans-serif)."""
    return int(sum(size if ord(c) >= 0x2E80 else 0.6 * size for c in str(text)))


def log_ticks(lo: float, hi: float, most: int = 7) -> tuple[list[float], list[str]]:
    """Tick values and labels for a log axis from ``lo`` to ``hi``: 1-2-5 steps per decade, thinned to
    ``most``, so short ranges are labelled once each (no pile of minor labels) and long ones by decade."""
    import math

    lo, hi = max(min(lo, hi), 1e-300), max(lo, hi, 1e-300)
    vals = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**e
            if lo <= v * (1 + 1e-9) and v <= hi * (1 + 1e-9):
                vals.append(v)
    if len(vals) > most:
        vals = [v for v in vals if f"{v:.0e}".startswith("1")] or vals
    if len(vals) > most:
        step = math.ceil(len(vals) / most)
        vals = vals[::step]
    if len(vals) < 2:
        vals = [lo, hi]
    return vals, [f"{v:g}" for v in vals]


def _containers(node):
    """A copy of the dicts and lists of a figure spec; arrays, strings and numbers are shared."""
    if isinstance(node, dict):
        return {k: _containers(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_containers(v) for v in node]
    return node


class Figure(go.Figure):
    """A Plotly figure whose ``to_dict`` (what ``st.plotly_chart`` sends) copies only the spec's dicts
    and lists. Plotly's own deep-copies every array and string first, ~2 ms of a 64-token heatmap;
    nothing here changes an array after it is built, and the result is the same dict."""

    def to_dict(self):
        if self._frame_objs:
            return super().to_dict()
        res = {"data": _containers(self._data), "layout": _containers(self._layout)}
        convert_to_base64(res)
        return res


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain dicts, without Plotly's per-property validation.

    Validation costs ~6 ms a figure, which is most of a figure's share of a rerun; our builders
    assemble known-good dicts, and the tests read back the JSON they produce.
    """
    return Figure(dict(data=data, layout=layout), _validate=False)


def merge_labels(defaults: Mapping[str, str], labels: Mapping[str, str] | None) -> dict[str, str]:
    """The one label API of every builder here: ``labels={"title": ..., "x": ..., "y": ...,
    "value": ..., <the builder's own names>}``, each optional, translated by the caller. A key the
    builder does not draw is an error (a typo would otherwise fall back to English silently)."""
    unknown = set(labels or {}) - set(defaults)
    if unknown:
        raise KeyError(
            f"unknown label(s) {', '.join(sorted(unknown))}; this figure takes: {', '.join(sorted(defaults))}"
        )
    return {**defaults, **(labels or {})}


def heatmap_titles(lab: Mapping[str, str]) -> dict[str, str]:
    """A builder's labels (title, x, y, value) as :func:`heatmap`'s keywords."""
    return {
        "title": lab.get("title", ""),
        "x_title": lab.get("x", ""),
        "y_title": lab.get("y", ""),
        "value_name": lab.get("value", "weight"),
    }


def layout(fig: go.Figure, title: str = "", height: int | None = None, *, top: int | None = None, **kw) -> go.Figure:
    """The one layout helper: escaped title, the app's font, a height and tight margins. ``top`` is
    the top margin (default: room for a title, if any); the title then sits at the very top, above
    an x axis drawn on top of the plot."""
    margin = dict(l=10, r=10, t=top if top is not None else (50 if title else 20), b=10)
    margin.update(kw.pop("margin", {}))
    title_spec = dict(text=escape_label(title))
    if top is not None:
        title_spec.update(y=0.98, yanchor="top")
    kw.setdefault("uniformtext", UNIFORM_TEXT)
    fig.update_layout(title=title_spec, font=FONT, margin=margin, **({"height": height} if height else {}), **kw)
    return fig


def arrow(x: float, y: float, ax: float, ay: float) -> dict:
    """An annotation that is only an arrow, from (ax, ay) to (x, y) in data coordinates."""
    return dict(x=x, y=y, ax=ax, ay=ay, xref="x", yref="y", axref="x", ayref="y", showarrow=True, arrowhead=2, text="")


def escape_label(text: str) -> str:
    """Make user text safe for a Plotly label, which understands a subset of HTML tags."""
    return html.escape(str(text), quote=False)


def _unique(labels: list[str]) -> list[str]:
    """Repeated tokens ("the" twice) must keep their own row and column on a category axis, and
    the hover should still read "the": the n-th repeat gets n zero-width spaces appended. User text
    never contains them (core.text.clean removes them), so nothing can collide. Per-cell hover
    data instead would cost twice the bytes and ~6 ms a figure at 64 tokens."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        n = seen.get(label, 0)
        seen[label] = n + 1
        out.append(label + "\u200b" * n)
    return out


def _as_array(values) -> np.ndarray:
    if hasattr(values, "detach"):
        values = values.detach().to("cpu").double().numpy()
    return np.asarray(values, dtype=np.float64)


def _row_box(row: int | None, n_x: int, n_y: int) -> list[dict]:
    """A frame around one row of an n_y × n_x heatmap (none for no row, or one out of range)."""
    if row is None or not 0 <= row < n_y:
        return []
    return [
        dict(
            type="rect",
            x0=-0.5,
            x1=n_x - 0.5,
            y0=row - 0.5,
            y1=row + 0.5,
            line=dict(color=HIGHLIGHT, width=3),
        )
    ]


def _heatmap_layout(
    xs: list[str], n_x: int, n_y: int, title: str, x_title: str, y_title: str, height: int | None, shapes: list[dict]
) -> dict:
    """heatmap's layout: categorical axes with x on top, sized to the matrix (or ``height``)."""
    side = max(260, min(900, 28 * max(n_x, n_y) + 140))
    column_px = (PLOT_PX - 120) / max(n_x, 1)
    rotate = any(text_px(html.unescape(s)) + 4 > column_px for s in xs)
    # The x axis sits on top (read like a matrix), so the title needs room above its labels.
    top = 60 + (40 if x_title else 0) + (40 if title else 0) + (30 if rotate else 0)
    return dict(
        title=dict(text=escape_label(title), y=0.99, yanchor="top"),
        font=FONT,
        shapes=shapes,
        uniformtext=UNIFORM_TEXT,
        height=(height or side) + top - 60,
        margin=dict(l=10, r=10, t=top, b=10),
        # rotate the input labels only when they cannot stand upright in their column
        xaxis=dict(
            type="category",
            side="top",
            title=dict(text=escape_label(x_title)),
            tickangle=-45 if rotate else 0,
            tickmode="array",
            tickvals=xs,
            ticktext=xs,
        ),
        yaxis=dict(type="category", autorange="reversed", title=dict(text=escape_label(y_title))),
    )


def heatmap(
    values,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    value_name: str = "weight",
    zmin: float | None = 0.0,
    zmax: float | None = 1.0,
    precision: int = 4,
    highlight_row: int | None = None,
    height: int | None = None,
    show_scale: bool = True,
    colorscale: str = ATTENTION_SCALE,
) -> go.Figure:
    """An attention-style heatmap: rows are queries/outputs (down), columns keys/inputs (across).

    This is the primitive the builders share (its titles are plain keywords; a builder maps its
    ``labels`` onto them with :func:`heatmap_titles`). Axes are categories, one per token; repeated tokens ("the" twice) keep their own rows and
    columns (see _unique). Values are rounded to ``precision`` decimals, which is what
    the hover shows, and keeps the figure small for the browser.
    """
    z = _as_array(values).round(precision)
    n_y, n_x = z.shape if z.ndim == 2 and z.size else (0, 0)
    if len(y_labels) != n_y or len(x_labels) != n_x:
        raise ValueError(f"labels {len(y_labels)}x{len(x_labels)} do not match values {n_y}x{n_x}")
    xs = _unique([escape_label(s) for s in x_labels])
    ys = _unique([escape_label(s) for s in y_labels])
    trace = dict(
        type="heatmap",
        z=z,
        x=xs,
        y=ys,
        colorscale=colorscale,
        zmin=zmin,
        zmax=zmax,
        showscale=show_scale,
        colorbar=dict(title=dict(text=value_name)),
        hovertemplate=(
            f"{escape_label(y_title) or 'row'}: %{{y}}<br>"
            f"{escape_label(x_title) or 'column'}: %{{x}}<br>"
            f"{escape_label(value_name)}: %{{z:.{precision}f}}<extra></extra>"
        ),
    )
    layout = _heatmap_layout(xs, n_x, n_y, title, x_title, y_title, height, _row_box(highlight_row, n_x, n_y))
    return figure([trace], layout)


def bar_strip(
    values: Sequence[float], *, labels: Mapping[str, str] | None = None, height: int = 120, zmid: float | None = 0.0
) -> go.Figure:
    """One vector as a single-row strip of colours (a hidden state, an embedding, c).
    ``labels``: title, value."""
    lab = merge_labels({"title": "", "value": "value"}, labels)
    title, value_name = lab["title"], lab["value"]
    vals = [round(float(v), 4) for v in (values.tolist() if hasattr(values, "tolist") else values)]
    fig = go.Figure(
        go.Heatmap(
            z=[vals],
            x=list(range(len(vals))),
            y=[0],
            colorscale="RdBu",
            zmid=zmid,
            reversescale=True,
            hovertemplate=f"dim %{{x}}<br>{escape_label(value_name)}: %{{z:.4f}}<extra></extra>",
            colorbar=dict(thickness=10),
        )
    )
    fig.update_yaxes(visible=False)
    return layout(fig, title, height, margin=dict(t=30 if title else 10, b=20))
