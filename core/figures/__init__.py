"""Plotly figure builders: the one place where pictures are made.

Every attention picture in the app goes through :func:`heatmap`, so they all read the same way
(d2l's habit): queries (or outputs) down, keys (or inputs) across, one colour-blind-safe scale,
exact values on hover. Topic-specific builders live beside this file (seq2seq.py, attention.py,
bert.py, megatron.py) and reuse these helpers.
"""

from __future__ import annotations

import base64
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
from _plotly_utils.utils import is_homogeneous_array, is_skipped_key, plotlyjsShortTypes, to_typed_array_spec

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


# Room beside the plot, in px, for what Plotly's automatic margins would otherwise push out to (the
# figures keep automatic margins on as a safety net). A figure whose margins already fit is laid
# out once; one whose margins get pushed is laid out, measured and drawn again, which was about half
# of each figure's drawing time in Chromium (every figure of lessons 4 and 5 was pushed). Measured in
# the app, under Streamlit's theme (its 12 px tick labels; axis titles 14 px with a wide standoff):
TICK_PAD_PX = 24  # tick labels' distance from the plot, and slack
AXIS_TITLE_PX = 58  # a y axis title beside its tick labels
COLORBAR_PX = 104  # a colorbar with its tick labels, to the right of the plot
X_TICKS_PX = 38  # a row of x tick labels under (or over) the plot
X_TITLE_PX = 76  # x tick labels and the axis title, over or under the plot


def label_room(labels: Sequence[str], *, title: bool = False, size: int = 12) -> int:
    """Left margin for y tick ``labels`` (escaped, as given to Plotly) and, with ``title``, the axis
    title: sized so that automatic margins have nothing to add (see TICK_PAD_PX)."""
    widest = max((text_px(html.unescape(str(s)), size) for s in labels), default=0)
    return widest + TICK_PAD_PX + (AXIS_TITLE_PX if title else 0)


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


# Plotly properties whose own names have an underscore; any other key with one is a "magic
# underscore" path (marker_color) that only Plotly's objects resolve.
UNDERSCORE_NAMES = frozenset({"paper_bgcolor", "plot_bgcolor", "error_x", "error_y", "error_z"})


class _NeedsPlotly(Exception):
    pass


# Values Plotly's to_dict copies as they are and convert_to_base64 never converts: a plain Python
# scalar is not a homogeneous array, so it needs none of Plotly's checks (exact types: a numpy
# scalar still goes through them, as in Plotly).
_SCALARS = frozenset((str, int, float, bool, type(None)))
_SKIPPED: dict[str, bool] = {}  # is_skipped_key per key; keys are Plotly's property names, few


def _skipped(key: str) -> bool:
    hit = _SKIPPED.get(key)
    if hit is None:
        hit = _SKIPPED[key] = is_skipped_key(key)
    return hit


def _typed(v):
    """Plotly's ``to_typed_array_spec`` of a homogeneous array. A numpy array of a type plotly.js
    takes as it is (float32/64, int and uint up to 32 bits) is encoded here, as Plotly would encode
    its contiguous copy, without Plotly's conversion walk (narwhals, a copy; ~0.1 ms an array);
    anything else goes to Plotly."""
    if type(v) is np.ndarray and v.size:
        code = plotlyjsShortTypes.get(v.dtype.name)
        if code is not None and v.dtype.isnative and v.dtype.name not in ("int64", "uint64"):
            out = {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(v)).decode("ascii")}
            if v.ndim > 1:
                out["shape"] = str(v.shape)[1:-1]
            return out
    return to_typed_array_spec(v)


def _plain(node, *, typed: bool = True, strict: bool = True):
    """A copy of a figure spec's dicts and lists (arrays, strings and numbers are shared), with
    Plotly's ``convert_to_base64`` done in the same walk: every array under a dict key becomes
    Plotly's typed-array spec, except under the keys Plotly leaves alone. ``strict``: raise
    _NeedsPlotly at a magic-underscore key (a spec that only Plotly's objects can resolve)."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if strict and "_" in k and k not in UNDERSCORE_NAMES:
                raise _NeedsPlotly(k)
            if type(v) in _SCALARS:
                out[k] = v
            elif isinstance(v, (dict, list, tuple)):
                out[k] = _plain(v, typed=typed and not _skipped(k), strict=strict)
            elif typed and not _skipped(k) and (type(v) is np.ndarray or is_homogeneous_array(v)):
                out[k] = _typed(v)
            else:
                out[k] = v
        return out
    if isinstance(node, (list, tuple)):
        if all(type(v) in _SCALARS for v in node):  # tick labels, hover text, a colorscale's row
            return list(node)
        return [_plain(v, typed=typed, strict=strict) for v in node]
    return node


_TEMPLATE: tuple | None = None  # (key, template, its dict)

# Axis defaults of every figure, set in its template, so that a builder's own axis settings win and
# every axis of a subplot grid (xaxis2, yaxis3) gets them. "allow": tick labels are drawn as laid
# out; Plotly's default measures every label after drawing it, to hide any that crosses the
# figure's edge (in Chromium, ~50 ms of each lesson-4 edit; automatic margins make room for them).
AXIS_DEFAULTS = {"ticklabeloverflow": "allow"}


def _with_axis_defaults(spec: dict) -> dict:
    """``spec`` (a to_dict result, changed in place) with :data:`AXIS_DEFAULTS` in its template."""
    template = spec["layout"].get("template")
    if isinstance(template, dict):
        tl = template.setdefault("layout", {})
        for axis in ("xaxis", "yaxis"):
            node = tl.setdefault(axis, {})
            for k, v in AXIS_DEFAULTS.items():
                node.setdefault(k, v)
    return spec


def _default_template():
    """What Plotly puts in ``layout.template`` when a figure names none: the default template (the
    "streamlit" one once Streamlit is imported), as a plain dict, converted once per template."""
    import plotly.io as pio

    global _TEMPLATE
    name = pio.templates.default
    if name is None:
        return None
    tpl = name if not isinstance(name, str) else pio.templates[name]
    key = (name if isinstance(name, str) else None, id(tpl))
    hit = _TEMPLATE  # one tuple, replaced whole: sessions read it from their own threads
    if hit is None or hit[0] != key:
        hit = (key, tpl, tpl.to_plotly_json())  # the template is kept so its id stays its own
        _TEMPLATE = hit
    return hit[2]


def _merge(target: dict, update: dict) -> None:
    """``update`` into ``target`` as ``update_layout`` does: nested dicts merged, anything else replaced."""
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(target.get(k), dict):
            _merge(target[k], v)
        else:
            target[k] = v


class Figure(go.Figure):
    """A Plotly figure built from plain dicts (:func:`figure`) that becomes a real ``go.Figure`` only
    when something uses it as one.

    ``st.plotly_chart`` only calls ``to_dict``; for a figure that was never used otherwise this
    returns the spec with Plotly's default template, copying only its dicts and lists, without
    building Plotly's trace and layout objects (a deep copy and a validator walk of every value,
    ~1.5 ms a figure, a tenth of a lesson's rerun). The first use of anything else (``fig.data``,
    ``fig.update_layout``) builds the ``go.Figure`` from the same spec. Either way ``to_dict`` gives
    the dict Plotly's own would (tests/test_figures_spec.py checks every builder against it)."""

    def __init__(self, data=None, layout=None, frames=None, skip_invalid=False, *, spec: dict | None = None, **kw):
        if spec is not None:
            # set without BaseFigure.__setattr__, which looks attributes up (and would build it)
            self.__dict__["_spec"] = spec
            return
        super().__init__(data, layout, frames, skip_invalid, **kw)

    def __getattr__(self, name):  # only reached when normal lookup fails: the first use as a go.Figure
        spec = self.__dict__.pop("_spec", None)
        if spec is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        go.Figure.__init__(self, spec, _validate=False)
        return getattr(self, name)

    def __reduce__(self):  # st.cache_data pickles: a lazy figure stays lazy
        spec = self.__dict__.get("_spec")
        return (figure, (spec["data"], spec["layout"])) if spec is not None else super().__reduce__()

    @property
    def lazy(self) -> bool:
        """True while the figure is still only its spec (nothing has used it as a go.Figure)."""
        return "_spec" in self.__dict__

    def update_spec_layout(self, **kw) -> Figure:
        """``update_layout`` on a lazy figure's spec (same merge), or Plotly's own on a built one."""
        spec = self.__dict__.get("_spec")
        if spec is None or any("_" in k and k not in UNDERSCORE_NAMES for k in kw):  # title_text: Plotly resolves it
            self.update_layout(**kw)
        else:
            _merge(spec.setdefault("layout", {}), kw)
        return self

    def _spec_dict(self) -> dict | None:
        """The lazy spec as Plotly's ``to_dict`` would give it, or None where only Plotly can say
        (a magic-underscore path, a template of its own, frames): the figure is then built."""
        spec = self.__dict__.get("_spec")
        if spec is None or spec.get("layout", {}).get("template") is not None or "frames" in spec:
            return None
        try:
            res = {"data": _plain(spec.get("data", [])), "layout": _plain(spec.get("layout", {}))}
        except _NeedsPlotly:
            return None
        template = _default_template()
        if template is not None:
            res["layout"]["template"] = _plain(template, typed=False, strict=False)
        return res

    def to_dict(self):
        res = self._spec_dict()
        if res is None:
            if self._frame_objs:  # (first use builds a lazy figure here)
                return super().to_dict()
            res = {"data": _plain(self._data, strict=False), "layout": _plain(self._layout, strict=False)}
        return _with_axis_defaults(res)


def figure(data: list[dict], layout: dict) -> Figure:
    """A figure from plain dicts, without Plotly's per-property validation (see :class:`Figure`).

    Our builders assemble known-good dicts, and tests/test_figures_spec.py has Plotly validate
    every one of them.
    """
    return Figure(spec=dict(data=list(data), layout=dict(layout)))


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
    update = dict(title=title_spec, font=FONT, margin=margin, **({"height": height} if height else {}), **kw)
    if isinstance(fig, Figure):
        return fig.update_spec_layout(**update)
    fig.update_layout(**update)
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


def rounded(values, precision: int) -> np.ndarray:
    """``values`` rounded to ``precision`` decimals, as the hover shows them; as float32 (half the
    bytes to send, parse and draw) where float32 still shows the same digits: its error, at most
    max|v|·2⁻²⁴, stays under a quarter of the last shown decimal, so a value rounded to ``precision``
    decimals cannot print differently. Larger values, or more decimals, stay float64."""
    z = _as_array(values).round(precision)
    peak = float(np.abs(z).max()) if z.size else 0.0
    if np.isfinite(peak) and peak * 2.0**-24 < 0.25 * 10.0**-precision:
        return z.astype(np.float32)
    return z


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
    xs: list[str],
    ys: list[str],
    title: str,
    x_title: str,
    y_title: str,
    height: int | None,
    shapes: list[dict],
    show_scale: bool = True,
) -> dict:
    """heatmap's layout: categorical axes with x on top, sized to the matrix (or ``height``)."""
    n_x, n_y = len(xs), len(ys)
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
        margin=dict(l=label_room(ys, title=bool(y_title)), r=COLORBAR_PX if show_scale else 10, t=top, b=10),
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
    z = rounded(values, precision)
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
    layout = _heatmap_layout(xs, ys, title, x_title, y_title, height, _row_box(highlight_row, n_x, n_y), show_scale)
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
