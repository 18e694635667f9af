"""core.figures.Figure: what st.plotly_chart sends from a lazy figure is what Plotly itself sends.

Every attention builder runs on a real sentence through the shipped BERT; each figure's ``to_dict``
(taken while the figure is still only its spec) is compared, as JSON, with the same spec passed
through Plotly's own validating ``go.Figure`` and with the figure after it was built as a
``go.Figure`` by first use. A misspelled property or a value Plotly would coerce fails here.
"""

from __future__ import annotations

import base64
import copy
import json
import pickle

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from core import attention as A
from core.figures import Figure, figure, heatmap, layout
from core.figures import attention as FA

SENT = "The animal didn't cross the street because it was too tired."
SENT_B = "It was late."


def _json(d: dict):
    """The figure as the browser receives it (parsed back, so key order does not matter)."""
    return json.loads(pio.to_json(d, validate=False, engine="json"))


def _plotly_part(sent: dict):
    """``sent`` without the app's axis defaults (core.figures.AXIS_DEFAULTS, checked here to be in
    its template for x and y axes): what Plotly's own to_dict should have given."""
    out = _json(sent)
    tl = out["layout"]["template"]["layout"]
    for axis in ("xaxis", "yaxis"):
        assert tl[axis].pop("ticklabeloverflow") == "allow"
        if not tl[axis]:
            del tl[axis]
    return out


@pytest.fixture(scope="module")
def bundle():
    from core.bert import load

    return load()


def _builders(b):
    enc, summ = A.summarize(b, SENT)
    pair_enc, _ = A.summarize(b, SENT, SENT_B)
    expl = A.explain_head(b, SENT, 1, 0)
    proj = A.concat_projection(b, SENT, 1)
    return {
        "heatmap": lambda: heatmap(np.arange(6.0).reshape(2, 3) / 6, ["a", "b", "c"], ["x", "y"], title="t"),
        "head_heatmap": lambda: FA.head_heatmap(expl),
        "qk_vectors": lambda: FA.qk_vectors(expl, 2),
        "score_steps": lambda: FA.score_steps(expl, 2, scaled=True),
        "score_steps_unscaled": lambda: FA.score_steps(expl, 2, scaled=False),
        "weighted_sum": lambda: FA.weighted_sum(expl, 2, scaled=True),
        "scaling": lambda: FA.scaling_figure(A.scaling_study(trials=16)),
        "layer_head_grid": lambda: FA.layer_head_grid(enc, selected=(1, 0)),
        "layer_head_grid_pair": lambda: FA.layer_head_grid(pair_enc, selected=(0, 1)),
        "tag_grid": lambda: FA.tag_grid(summ, selected=(1, 0)),
        "rollout": lambda: FA.rollout_figure(*A.rollout(b, SENT, SENT_B)),
        "projection": lambda: FA.projection_figure(proj),
        "projection_shapes": lambda: FA.projection_shapes(proj),
    }


@pytest.mark.parametrize(
    "name",
    [
        "heatmap",
        "head_heatmap",
        "qk_vectors",
        "score_steps",
        "score_steps_unscaled",
        "weighted_sum",
        "scaling",
        "layer_head_grid",
        "layer_head_grid_pair",
        "tag_grid",
        "rollout",
        "projection",
        "projection_shapes",
    ],
)
def test_a_lazy_figure_sends_what_plotly_would(bundle, name):
    fig = _builders(bundle)[name]()
    assert isinstance(fig, go.Figure)
    spec = copy.deepcopy(fig.__dict__.get("_spec"))  # None: a builder that used it as a go.Figure
    sent = fig.to_dict()
    assert sent["data"] or sent["layout"].get("shapes"), "an empty figure tests nothing"
    assert "template" in sent["layout"], "Plotly's default template must still be applied"
    # sending did not build it (the point of the lazy figure); rollout's pair divider uses Plotly's API
    assert fig.lazy == (name != "rollout")
    if spec is not None:  # Plotly's own figure from the same spec, as the app built it before
        assert _plotly_part(sent) == _json(go.Figure(spec, _validate=False).to_dict())
    # Plotly's validating constructor: raises on any property or value it does not accept
    go.Figure(sent)
    # the same figure once something used it as a go.Figure
    fig.data  # noqa: B018 - first use builds it
    assert not getattr(fig, "lazy", False)
    assert _json(fig.to_dict()) == _json(sent)


def test_first_use_builds_the_figure_and_later_changes_are_sent():
    fig = figure([dict(type="bar", y=[1, 2, 3])], dict(height=200))
    assert fig.lazy
    assert fig.data[0].y == (1, 2, 3)
    assert not fig.lazy
    fig.update_layout(title_text="after")
    assert fig.to_dict()["layout"]["title"] == {"text": "after"}


def test_a_magic_underscore_path_is_left_to_plotly():
    fig = figure([dict(type="bar", y=[1, 2], marker_color="red", error_y=dict(array=[0.1, 0.2]))], {})
    sent = fig.to_dict()
    assert sent["data"][0]["marker"] == {"color": "red"}
    assert "marker_color" not in sent["data"][0] and "error_y" in sent["data"][0]


def test_the_layout_helper_merges_into_a_lazy_spec_as_update_layout_does():
    spec = dict(data=[dict(type="bar", y=[1, 2])], layout=dict(margin=dict(l=40, b=40), title=dict(x=0.2)))
    lazy = layout(figure(spec["data"], spec["layout"]), "Title <b>", 300, margin=dict(t=5), bargap=0.1)
    assert lazy.lazy
    built = go.Figure(spec)
    layout(built, "Title <b>", 300, margin=dict(t=5), bargap=0.1)
    assert _plotly_part(lazy.to_dict()) == _json(built.to_dict())
    # a magic-underscore keyword is Plotly's to resolve: the figure is built first
    lazy2 = layout(figure(spec["data"], spec["layout"]), "T", xaxis_title_text="x")
    assert not lazy2.lazy
    assert lazy2.to_dict()["layout"]["xaxis"]["title"]["text"] == "x"


def test_a_lazy_figure_pickles_and_reads_like_a_figure():
    fig = heatmap(np.eye(3), ["a", "b", "c"], ["a", "b", "c"])
    back = pickle.loads(pickle.dumps(fig))  # st.cache_data pickles what it caches
    assert _json(back.to_dict()) == _json(fig.to_dict())
    assert isinstance(back, Figure) and back.lazy
    fig.data  # noqa: B018 - a built one pickles as Plotly's own
    assert _json(pickle.loads(pickle.dumps(fig)).to_dict())["data"][0]["z"] == _json(fig.to_dict())["data"][0]["z"]
    with pytest.raises(AttributeError):
        fig.no_such_attribute  # noqa: B018


@pytest.mark.parametrize("precision", [0, 2, 3, 4, 6])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0, 1e3, 1e5, 1e8])
def test_rounded_values_print_as_the_float64_ones_they_replace(precision, scale):
    """A heatmap's values go out as float32 only where every value still prints with the hover's digits
    exactly as the float64 value rounded to them would (Python's own formatting is the reference)."""
    from core.figures import rounded

    rng = np.random.default_rng(precision * 100 + int(np.log10(scale)) + 10)
    values = rng.standard_normal((40, 40)) * scale
    values[0, :8] = [0.5, -0.5, 0.25, 0.125, 0.00005, 0.99995, 1 - 1e-9, 0.0]  # halves and near-ties
    z = rounded(values, precision)
    reference = np.round(values, precision)
    shown = [f"{float(v):.{precision}f}" for v in z.ravel()]
    assert shown == [f"{float(v):.{precision}f}" for v in reference.ravel()]
    peak = np.abs(reference).max()
    if peak * 2.0**-24 < 0.25 * 10.0**-precision:
        assert z.dtype == np.float32  # half the bytes
    else:
        assert z.dtype == np.float64  # float32 could print another last digit: kept as it was
    if scale == 1e8 and precision >= 2:
        assert z.dtype == np.float64


def test_attention_heatmaps_go_out_as_float32():
    """64 tokens of attention weights: the typed array in the spec is 'f4', half of 'f8'."""
    from core.figures import heatmap

    w = np.random.default_rng(0).dirichlet(np.ones(64), size=64)
    spec = heatmap(w, [f"t{i}" for i in range(64)], [f"t{i}" for i in range(64)]).to_dict()
    z = spec["data"][0]["z"]
    assert z["dtype"] == "f4" and len(base64.b64decode(z["bdata"])) == 64 * 64 * 4
    back = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.float32).reshape(64, 64)
    np.testing.assert_allclose(back, np.round(w, 4), atol=1e-7)


def _arrays():
    rng = np.random.default_rng(3)
    m = rng.normal(size=(5, 7))
    return {
        "float64 2-D": m,
        "float32": m.astype(np.float32),
        "transposed (not contiguous)": m.T,
        "every other column": m[:, ::2],
        "big-endian": m.astype(">f8"),
        "int8": np.arange(-3, 4, dtype=np.int8),
        "int32": np.arange(6, dtype=np.int32).reshape(2, 3),
        "uint16": np.arange(9, dtype=np.uint16),
        "int64 small": np.arange(5, dtype=np.int64),
        "int64 wide": np.array([0, 2**40], dtype=np.int64),
        "uint64": np.arange(4, dtype=np.uint64),
        "empty": np.zeros((0,)),
        "bool": np.array([True, False]),
        "strings": np.array(["a", "b"]),
        "a list": [1.0, 2.0],
    }


@pytest.mark.parametrize("name", list(_arrays()))
def test_arrays_are_encoded_as_plotly_encodes_them(name):
    from _plotly_utils.utils import to_typed_array_spec

    from core.figures import _typed

    v = _arrays()[name]
    ours, plotly = _typed(v), to_typed_array_spec(v)
    if isinstance(plotly, dict):
        assert ours == plotly
        if "bdata" in ours:  # and it decodes to the values given
            got = np.frombuffer(base64.b64decode(ours["bdata"]), dtype=np.dtype(ours["dtype"]))
            assert np.array_equal(got.reshape(np.shape(v)), np.asarray(v))
    else:
        assert not isinstance(ours, dict) and np.array_equal(np.asarray(ours), np.asarray(plotly))
