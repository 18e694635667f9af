"""Presenter mode's look, in one place: the scale, the page's CSS, and how a figure grows with it.

Presenter mode is for the back of the room: every element of the lesson (body text, captions,
inputs, code, tables, metrics, slider values, buttons) and every Plotly figure (fonts, height,
margins) is drawn ``SCALE`` times its normal size. The printable view never uses it.
"""

from __future__ import annotations

import copy
import re

SCALE = 1.5  # presenter mode / normal, for text and figures alike
BASE_FONT_PX = 12  # Plotly's default font size, used when a figure sets none
BASE_HEIGHT_PX = 450  # Plotly's default height, used when a figure sets none
MAX_HEIGHT_PX = 860  # a scaled figure still fits a 1080p projector's window (a taller one stays as tall)
# Streamlit's chart theme sets these sizes in its template, and a template's explicit size beats a
# size inherited from layout.font: so presenter mode sets each one the figure leaves unset.
THEME_PX = {"title": 16, "tick": 12, "axis_title": 14, "legend": 12}
AXIS_RE = re.compile(r"^(x|y)axis\d*$")

# Font objects in a Plotly figure's JSON whose "size" scales (layout, axes, legends, colour bars,
# annotations, traces' text).
FONT_KEYS = frozenset(
    {"font", "tickfont", "titlefont", "textfont", "insidetextfont", "outsidetextfont", "hoverlabel", "grouptitlefont"}
)
MARGIN_KEYS = ("l", "r", "t", "b", "pad")


def _rem(x: float) -> str:
    return f"{x * SCALE:.3g}rem"


def presenter_css() -> str:
    """The presenter stylesheet. Streamlit sizes its elements in rem, so each kind is set here,
    in the main area only (the sidebar keeps its size and its width)."""
    m = '[data-testid="stMain"]'
    return f"""
<style>
{m} [data-testid="stMainBlockContainer"] {{ max-width: 92rem; }}
{m} [data-testid="stMarkdownContainer"] p, {m} [data-testid="stMarkdownContainer"] li,
{m} [data-testid="stMarkdownContainer"] td, {m} [data-testid="stMarkdownContainer"] th,
{m} [data-testid="stText"], {m} [data-testid="stAlertContainer"] p {{ font-size: {_rem(1)}; line-height: 1.5; }}
{m} h1 {{ font-size: {_rem(2.4)}; }}
{m} h2 {{ font-size: {_rem(1.9)}; }}
{m} h3 {{ font-size: {_rem(1.5)}; }}
{m} [data-testid="stCaptionContainer"], {m} [data-testid="stCaptionContainer"] p {{ font-size: {_rem(0.875)}; }}
{m} [data-testid="stWidgetLabel"] p, {m} label p, {m} button p, {m} summary p,
{m} [role="tab"] p, {m} [data-testid="stMarkdownContainer"] code {{ font-size: {_rem(0.95)}; }}
{m} input, {m} textarea, {m} [data-baseweb="select"] div, {m} [data-baseweb="input"] input,
{m} [role="radiogroup"] p {{ font-size: {_rem(1)}; }}
{m} [data-testid="stCode"] pre, {m} [data-testid="stCode"] code {{ font-size: {_rem(0.875)}; }}
{m} [data-testid="stTable"] td, {m} [data-testid="stTable"] th,
{m} [data-testid="stMarkdownContainer"] table {{ font-size: {_rem(0.95)}; }}
{m} [data-testid="stMetricLabel"] p {{ font-size: {_rem(0.95)}; }}
{m} [data-testid="stMetricValue"] {{ font-size: {_rem(1.35)}; line-height: 1.3; }}
{m} [data-testid="stMetricDelta"] {{ font-size: {_rem(0.875)}; }}
{m} [data-testid="stSliderThumbValue"] p, {m} [data-testid="stSliderTickBar"] p {{ font-size: {_rem(0.8)}; }}
.st-key-presenter-keys {{ position: absolute !important; width: 0; height: 0; overflow: hidden; }}
</style>
"""


def scaled_figure(fig, scale: float = SCALE):
    """A copy of ``fig`` with every font size, the height and the margins times ``scale``.

    Sizes the figure leaves unset inherit from the layout's font, which is set (Plotly's 12 px
    times ``scale`` when the figure gives none). The figure passed in is not changed (it may be
    cached)."""
    import plotly.graph_objects as go

    spec = copy.deepcopy(fig.to_dict() if hasattr(fig, "to_dict") else fig)
    _scale_fonts(spec, scale)
    layout = spec.setdefault("layout", {})
    font = layout.setdefault("font", {})
    if "size" not in font:
        font["size"] = round(BASE_FONT_PX * scale, 1)
    height = layout.get("height") or BASE_HEIGHT_PX
    layout["height"] = max(height, min(round(height * scale), MAX_HEIGHT_PX))
    px = {k: round(v * scale, 1) for k, v in THEME_PX.items()}
    _default_size(layout, ("title", "font"), px["title"])
    _default_size(layout, ("legend", "font"), px["legend"])
    axes = [k for k in layout if AXIS_RE.match(k)]
    if any(
        tr.get("type", "scatter") not in ("pie", "sunburst", "treemap", "table", "sankey", "indicator")
        for tr in spec.get("data", [])
    ):
        axes += [k for k in ("xaxis", "yaxis") if k not in axes]
    for axis in axes:
        node = layout.setdefault(axis, {})
        _default_size(node, ("tickfont",), px["tick"])
        _default_size(node, ("title", "font"), px["axis_title"])
    colorbars = [tr.setdefault("colorbar", {}) for tr in spec.get("data", []) if tr.get("type") in COLORBAR_TRACES]
    colorbars += [
        v["colorbar"]
        for k, v in layout.items()
        if k.startswith("coloraxis") and isinstance(v, dict) and isinstance(v.get("colorbar"), dict)
    ]
    for bar in colorbars:
        _default_size(bar, ("tickfont",), px["tick"])
        _default_size(bar, ("title", "font"), px["axis_title"])
    margin = layout.get("margin")
    if isinstance(margin, dict):
        for k in MARGIN_KEYS:
            if isinstance(margin.get(k), (int, float)):
                margin[k] = round(margin[k] * scale)
    return go.Figure(spec)


COLORBAR_TRACES = frozenset({"heatmap", "contour", "histogram2d", "histogram2dcontour", "surface", "choropleth"})


def _default_size(node: dict, path: tuple[str, ...], size: float) -> None:
    """Set ``node[path...]["size"]`` to ``size`` unless the figure set it (a str title becomes
    ``{"text": ...}``)."""
    for name in path:
        child = node.get(name)
        if isinstance(child, str):
            child = {"text": child}
        if not isinstance(child, dict):
            child = {}
        node[name] = child
        node = child
    node.setdefault("size", size)


def _scale_fonts(node, scale: float) -> None:
    """Multiply ``size`` in every font object of a figure's JSON, in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in FONT_KEYS and isinstance(value, dict):
                size = value.get("size")
                if isinstance(size, (int, float)) and not isinstance(size, bool):
                    value["size"] = round(size * scale, 1)
                elif isinstance(size, list):
                    value["size"] = [round(s * scale, 1) if isinstance(s, (int, float)) else s for s in size]
            _scale_fonts(value, scale)
    elif isinstance(node, list):
        for item in node:
            _scale_fonts(item, scale)
