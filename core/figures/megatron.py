"""Figures for lesson 8 (Megatron-BERT and model parallelism).

Every number drawn comes from core.megatron (the demo's JSON, a simulated schedule, a calculator or
the papers' tables). Titles and names are passed in by the caller, already translated; builders
only draw. No torch here.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import HIGHLIGHT, OKABE_ITO, arrow, escape_label, layout, log_ticks

RANK_COLOURS = [OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[2], OKABE_ITO[3]]


def _n(labels: Mapping[str, str] | None, key: str, default: str) -> str:
    """One label, escaped: ``labels`` is core.figures' one label API (title, x, y and the builder's
    own names, each optional)."""
    return escape_label((labels or {}).get(key, default))


def _title(labels: Mapping[str, str] | None) -> str:
    return (labels or {}).get("title", "")


# ---- tensor parallelism --------------------------------------------------------------------

SPLIT_WEIGHTS = [
    "attention.query_key_value.weight",
    "attention.dense.weight",
    "mlp.dense_h_to_4h.weight",
    "mlp.dense_4h_to_h.weight",
]


def shard_map(shards: dict, *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Each split weight drawn at its full shape as the paper's A (in x out), every slice coloured
    by the rank that holds it. shards: the demo's {rank: [shard dicts]}."""
    ranks = sorted(shards, key=int)
    by_name = {name: [] for name in SPLIT_WEIGHTS}
    for r in ranks:
        for s in shards[r]:
            if s["name"] in by_name:
                by_name[s["name"]].append((int(r), s))
    fig = make_subplots(
        rows=1,
        cols=len(SPLIT_WEIGHTS),
        horizontal_spacing=0.05,
        subplot_titles=[escape_label(n.replace(".weight", "")) for n in SPLIT_WEIGHTS],
    )
    rank_word = _n(labels, "rank", "rank")
    rows_word, cols_word = _n(labels, "rows", "rows"), _n(labels, "cols", "columns")
    shown = set()
    for col, name in enumerate(SPLIT_WEIGHTS, start=1):
        for r, s in by_name[name]:
            out_f, in_f = s["global_shape"]
            for lo, hi in s["ranges"]:
                # Drawn as the paper's A in Y = X A (input rows x output columns): a torch weight
                # split along its output dim (0) is a column band of A, along its input dim a row band.
                if s["split_dim"] == 0:
                    x0, x1, y0, y1 = lo, hi, 0, in_f
                    what = f"{cols_word} {lo}–{hi - 1}"
                else:
                    x0, x1, y0, y1 = 0, out_f, lo, hi
                    what = f"{rows_word} {lo}–{hi - 1}"
                fig.add_trace(
                    go.Scatter(
                        x=[x0, x1, x1, x0, x0],
                        y=[y0, y0, y1, y1, y0],
                        fill="toself",
                        mode="lines",
                        line=dict(color="white", width=1),
                        fillcolor=RANK_COLOURS[r % 4],
                        name=f"{rank_word} {r}",
                        legendgroup=str(r),
                        showlegend=r not in shown,
                        hoveron="fills",
                        text=f"{escape_label(name)}<br>{rank_word} {r}: {what}<br>"
                        f"{_n(labels, 'local', 'local shape')} {tuple(s['local_shape'])}",
                        hoverinfo="text",
                    ),
                    row=1,
                    col=col,
                )
                shown.add(r)
        fig.update_yaxes(autorange="reversed", row=1, col=col, title_text=rows_word if col == 1 else "")
        fig.update_xaxes(row=1, col=col, title_text=cols_word)
    return layout(fig, _title(labels), 340, plot_bgcolor="white", legend=dict(orientation="h", y=-0.25))


def joins_figure(joins: dict, site: str, *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """The first few numbers of each rank's partial result at one g (all-reduce), and their sum
    next to what the all-reduce returned."""
    j = joins[site]
    k = len(j["reduced_first"])
    xs = [f"y[{i}]" for i in range(k)]
    fig = go.Figure()
    rank_word = _n(labels, "rank", "rank")
    for r, vals in enumerate(j["partials_first"]):
        fig.add_trace(
            go.Bar(
                x=xs,
                y=[round(v, 6) for v in vals],
                name=f"{rank_word} {r}",
                marker_color=RANK_COLOURS[r % 4],
                hovertemplate=f"{rank_word} {r}: %{{y:.6f}}<extra></extra>",
            )
        )
    fig.add_trace(
        go.Bar(
            x=xs,
            y=[round(v, 6) for v in j["reduced_first"]],
            name=_n(labels, "reduced", "after all-reduce"),
            marker_color="#000000",
            hovertemplate="%{y:.6f}<extra></extra>",
        )
    )
    fig.update_layout(barmode="group")
    return layout(fig, _title(labels), 300, legend=dict(orientation="h", y=-0.2))


def diff_figure(max_abs_diff: dict, tolerance: float, *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Max |parallel - unsharded| per tensor, on a log axis, with the tolerance line."""
    names = list(max_abs_diff)
    floor = 1e-12  # an exact 0 cannot sit on a log axis: it is drawn at the floor and labelled "0"
    vals = [max(max_abs_diff[n], floor) for n in names]
    fig = go.Figure(
        go.Bar(
            x=vals,
            y=[escape_label(n) for n in names],
            orientation="h",
            marker_color=OKABE_ITO[2],
            base=[floor / 10] * len(names),
            text=["0" if max_abs_diff[n] == 0 else f"{max_abs_diff[n]:.2g}" for n in names],
            textposition="outside",
            customdata=[f"{max_abs_diff[n]:.3g}" for n in names],
            hovertemplate="%{y}: %{customdata}<extra></extra>",
        )
    )
    fig.add_vline(
        x=tolerance, line=dict(color=OKABE_ITO[5], dash="dash"), annotation_text=_n(labels, "tolerance", "tolerance")
    )
    lo, hi = floor / 10, tolerance * 100
    tv, tt = log_ticks(lo, hi, most=6)
    fig.update_xaxes(
        type="log",
        title_text=_n(labels, "x", "max |difference|"),
        tickmode="array",
        tickvals=tv,
        ticktext=tt,
        range=[math.log10(lo), math.log10(hi)],
    )
    fig.update_yaxes(autorange="reversed")
    return layout(fig, _title(labels), 90 + 24 * len(names))


# ---- pipeline parallelism -------------------------------------------------------------------


def pipeline_figure(tl: dict, *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """A schedule as a timeline: one row per device, forward and backward boxes labelled by
    micro-batch (and chunk when interleaved), idle time left blank."""
    p = tl["p"]
    dev_word = _n(labels, "device", "device")
    fig = go.Figure()
    chunk_word = _n(labels, "chunk", "chunk")
    for kind, colour, name in (
        ("F", OKABE_ITO[0], _n(labels, "forward", "forward")),
        ("B", OKABE_ITO[1], _n(labels, "backward", "backward")),
    ):
        # interleaved: odd chunks drawn lighter, so the v chunks of one device can be told apart;
        # each shade gets its own legend entry
        shades = ((0, 1.0), (1, 0.6)) if tl["v"] > 1 else ((None, 1.0),)
        for parity, opacity in shades:
            ops = [o for o in tl["ops"] if o["kind"] == kind and (parity is None or o["chunk"] % 2 == parity)]
            if not ops:
                continue
            text = [str(o["microbatch"] + 1) + (f"·{o['chunk'] + 1}" if tl["v"] > 1 else "") for o in ops]
            chunks = sorted({o["chunk"] + 1 for o in ops})
            entry = name if parity is None else f"{name} · {chunk_word} {', '.join(map(str, chunks))}"
            fig.add_trace(
                go.Bar(
                    base=[o["start"] for o in ops],
                    x=[o["end"] - o["start"] for o in ops],
                    y=[f"{dev_word} {o['device'] + 1}" for o in ops],
                    orientation="h",
                    name=entry,
                    marker=dict(color=colour, line=dict(color="white", width=1), opacity=opacity),
                    text=text,
                    textposition="inside",
                    insidetextanchor="middle",
                    textangle=0,
                    textfont=dict(size=12),
                    customdata=[
                        [o["microbatch"] + 1, o["chunk"] + 1, o["stage"] + 1, o["start"], o["end"]] for o in ops
                    ],
                    hovertemplate=(
                        f"{name} · {_n(labels, 'microbatch', 'micro-batch')} %{{customdata[0]}}"
                        f" · {chunk_word} %{{customdata[1]}}"
                        f" · {_n(labels, 'stage', 'stage')} %{{customdata[2]}}"
                        "<br>%{customdata[3]:.3f} → %{customdata[4]:.3f}<extra></extra>"
                    ),
                )
            )
    fig.update_yaxes(
        autorange="reversed", categoryorder="array", categoryarray=[f"{dev_word} {d + 1}" for d in range(p)]
    )
    fig.update_xaxes(
        title_text=_n(labels, "time", "time (one forward of one micro-batch = 1)"), range=[0, tl["makespan"]]
    )
    fig.update_layout(barmode="overlay", bargap=0.15)
    return layout(
        fig,
        _title(labels),
        90 + 38 * p,
        legend=dict(orientation="h", y=-0.25),
        uniformtext=dict(minsize=11, mode="hide"),
    )


def zero_figure(rows_by_stage: list[dict], chosen: int, *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """GB per device for stages 0-3, stacked by what is held (parameters, gradients, optimizer)."""
    names = {
        "parameters_fp16": _n(labels, "parameters_fp16", "fp16 parameters"),
        "gradients_fp16": _n(labels, "gradients_fp16", "fp16 gradients"),
        "optimizer_states": _n(labels, "optimizer_states", "optimizer states (fp32)"),
    }
    xs = [_n(labels, f"stage{r['inputs']['zero_stage']}", f"stage {r['inputs']['zero_stage']}") for r in rows_by_stage]
    fig = go.Figure()
    for key, colour in zip(names, (OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[2])):
        fig.add_trace(
            go.Bar(
                x=xs,
                y=[r["breakdown_bytes"][key] / 1e9 for r in rows_by_stage],
                name=names[key],
                marker_color=colour,
                hovertemplate=f"{names[key]}: %{{y:.3f}} GB<extra></extra>",
            )
        )
    totals = [r["gb_per_device"] for r in rows_by_stage]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=totals,
            mode="text",
            text=[f"{v:.1f} GB" for v in totals],
            textposition="top center",
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.add_vrect(x0=chosen - 0.45, x1=chosen + 0.45, line=dict(color=HIGHLIGHT, width=3))
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text=_n(labels, "y", "GB per device"), range=[0, max(totals) * 1.18])
    return layout(fig, _title(labels), 360, legend=dict(orientation="h", y=-0.2))


def holdings_figure(rows: list[dict], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Which slice of each model state every data-parallel device keeps (the whole bar = all of it)."""
    colours = {"parameters_fp16": OKABE_ITO[0], "gradients_fp16": OKABE_ITO[1], "optimizer_states": OKABE_ITO[2]}
    dev_word = _n(labels, "device", "device")
    fig = go.Figure()
    seen = set()
    for r in rows:
        state = r["state"]
        fig.add_trace(
            go.Bar(
                base=[r["start"]],
                x=[r["end"] - r["start"]],
                orientation="h",
                y=[[f"{dev_word} {r['device'] + 1}"], [_n(labels, state, state)]],
                marker_color=colours[state],
                name=_n(labels, state, state),
                legendgroup=state,
                showlegend=state not in seen,
                hovertemplate=f"{dev_word} {r['device'] + 1}: {r['start']:.3f}–{r['end']:.3f}<extra></extra>",
            )
        )
        seen.add(state)
    fig.update_xaxes(range=[0, 1], title_text=_n(labels, "x", "share of the model"), tickformat=".0%")
    fig.update_yaxes(autorange="reversed")
    devices = len({r["device"] for r in rows})
    return layout(fig, _title(labels), 80 + 60 * devices, barmode="overlay", showlegend=False)


def activations_figure(
    results: list[dict], names: Sequence[str], *, labels: Mapping[str, str] | None = None
) -> go.Figure:
    fig = go.Figure(
        go.Bar(
            x=[escape_label(n) for n in names],
            y=[r["gb_total"] for r in results],
            marker_color=[OKABE_ITO[i % len(OKABE_ITO)] for i in range(len(results))],
            customdata=[escape_label(r["formula"]) for r in results],
            hovertemplate="%{x}<br>%{customdata}<br>%{y:.2f} GB<extra></extra>",
            text=[f"{r['gb_total']:.1f}" for r in results],
            textposition="outside",
        )
    )
    fig.update_yaxes(
        title_text=_n(labels, "y", "GB of activations"), range=[0, max(r["gb_total"] for r in results) * 1.2]
    )
    return layout(fig, _title(labels), 340)


# ---- the Megatron-BERT story ----------------------------------------------------------------


def bert_results_figure(
    table: list[dict], column: str, params: dict[str, float], *, labels: Mapping[str, str] | None = None
) -> go.Figure:
    """One task's score for the three Megatron-BERT sizes (x: parameters), with RoBERTa, ALBERT
    and XLNet as dashed lines at their own scores."""
    mega = [r for r in table if r["model"] in params and r[column] is not None]
    fig = go.Figure(
        go.Scatter(
            x=[params[r["model"]] / 1e9 for r in mega],
            y=[r[column] for r in mega],
            mode="lines+markers+text",
            text=[escape_label(r["model"]) for r in mega],
            textposition=["bottom right"] * (len(mega) - 1) + ["bottom left"],
            marker=dict(size=10, color=OKABE_ITO[0]),
            name="Megatron-BERT",
            hovertemplate="%{text}: %{y}<extra></extra>",
        )
    )
    for i, r in enumerate(x for x in table if x["model"] in ("RoBERTa", "ALBERT", "XLNet")):
        if r[column] is None:
            continue
        fig.add_hline(
            y=r[column],
            line=dict(dash="dash", color=OKABE_ITO[(i + 1) % 8]),
            annotation_text=f"{escape_label(r['model'])} {r[column]}",
            annotation_position="top left",
        )
    xs = [params[r["model"]] / 1e9 for r in mega]
    fig.update_xaxes(
        type="log",
        title_text=_n(labels, "x", "parameters (billions)"),
        range=[math.log10(min(xs)) - 0.15, math.log10(max(xs)) + 0.15],
        tickmode="array",
        tickvals=xs,
        ticktext=[f"{x:.2g}" for x in xs],
    )
    ys = [r[column] for r in table if r[column] is not None]
    fig.update_yaxes(title_text=escape_label(_title(labels) or column), range=[min(ys) - 1, max(ys) + 1])
    return layout(fig, _title(labels), 360, showlegend=False)


def scaling_figure(rows: list[dict], *, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Figure 5 of Shoeybi et al. 2019 as bars: weak-scaling efficiency against GPUs."""
    fig = go.Figure()
    for i, setting in enumerate(("model_parallel", "model_data_parallel")):
        rs = [r for r in rows if r["setting"] == setting]
        fig.add_trace(
            go.Bar(
                x=[str(r["gpus"]) for r in rs],
                y=[r["efficiency"] for r in rs],
                name=_n(labels, setting, setting),
                marker_color=OKABE_ITO[i],
                text=[f"{r['efficiency']:.0%}" for r in rs],
                textposition="outside",
                customdata=[r["implied_pflops"] for r in rs],
                hovertemplate="%{x} GPUs: %{y:.0%} → %{customdata:.2f} PFLOP/s<extra></extra>",
            )
        )
    fig.update_yaxes(range=[0, 1.15], tickformat=".0%", title_text=_n(labels, "y", "weak-scaling efficiency"))
    fig.update_xaxes(type="category", title_text=_n(labels, "x", "GPUs"))
    return layout(fig, _title(labels), 340, legend=dict(orientation="h", y=-0.25))


def ln_curves_figure(result: dict, *, labels: Mapping[str, str] | None = None) -> go.Figure:
    fig = go.Figure()
    for order, colour in (("post_ln", OKABE_ITO[5]), ("pre_ln", OKABE_ITO[0])):
        ys = result["curves"][order]
        fig.add_trace(
            go.Scatter(
                x=list(range(1, len(ys) + 1)),
                y=ys,
                mode="lines",
                name=_n(labels, order, order),
                line=dict(color=colour),
                hovertemplate="%{x}: %{y:.4f}<extra></extra>",
            )
        )
    fig.add_hline(
        y=result["chance_loss"],
        line=dict(dash="dot", color="#888888"),
        annotation_text=_n(labels, "chance", "chance (log V)"),
    )
    fig.update_xaxes(title_text=_n(labels, "x", "step"))
    fig.update_yaxes(title_text=_n(labels, "y", "masked-token loss"))
    return layout(fig, _title(labels), 340, legend=dict(orientation="h", y=-0.25))


def layer_order_figure(*, labels: Mapping[str, str] | None = None) -> go.Figure:
    """The two orders of Shoeybi et al. 2019, Figure 7: (a) post-LN, (b) pre-LN, as block diagrams.
    Residual (skip) paths are drawn as arcs beside the blocks."""
    lab = lambda k, d: _n(labels, k, d)  # noqa: E731
    columns = {
        0: [
            ("x", "in"),
            (lab("attn", "self-attention"), "op"),
            ("+", "add"),
            (lab("ln", "layer norm"), "ln"),
            (lab("mlp", "MLP"), "op"),
            ("+", "add"),
            (lab("ln", "layer norm"), "ln"),
            ("y", "in"),
        ],
        1: [
            ("x", "in"),
            (lab("ln", "layer norm"), "ln"),
            (lab("attn", "self-attention"), "op"),
            ("+", "add"),
            (lab("ln", "layer norm"), "ln"),
            (lab("mlp", "MLP"), "op"),
            ("+", "add"),
            ("y", "in"),
        ],
    }
    # (from, to) indices of the skip paths: x joins at the first '+', its output at the second
    skips = {0: [(0, 2), (3, 5)], 1: [(0, 3), (3, 6)]}
    colour = {"in": "#FFFFFF", "op": "#DCEBF7", "ln": "#FBE3C2", "add": "#FFFFFF"}
    fig = go.Figure()
    for c, items in columns.items():
        cx = c * 3.0
        for i, (text, kind) in enumerate(items):
            y = -i
            w = 0.25 if kind == "add" else 0.9
            fig.add_shape(
                type="rect" if kind != "add" else "circle",
                x0=cx - w,
                x1=cx + w,
                y0=y - 0.3,
                y1=y + 0.3,
                fillcolor=colour[kind],
                line=dict(color="#444444" if kind != "in" else "white"),
            )
            fig.add_annotation(x=cx, y=y, text=text, showarrow=False, font=dict(size=13))
            if i:
                fig.add_annotation(arrow(cx, y + 0.3, cx, y + 0.7))
        for a, b in skips[c]:
            side = cx + 1.25
            fig.add_shape(
                type="path",
                path=f"M {cx + 0.9},{-a} L {side},{-a} L {side},{-b} L {cx + 0.25},{-b}",
                line=dict(color=OKABE_ITO[2], width=2),
            )
        fig.add_annotation(
            x=cx,
            y=0.8,
            showarrow=False,
            font=dict(size=14),
            text=lab(
                "post" if c == 0 else "pre", "(a) original BERT: post-LN" if c == 0 else "(b) Megatron-BERT: pre-LN"
            ),
        )
    fig.update_xaxes(visible=False, range=[-1.6, 5.0])
    fig.update_yaxes(visible=False, range=[-7.6, 1.2], scaleanchor="x", scaleratio=0.55)
    return layout(fig, _title(labels), 520, plot_bgcolor="white", showlegend=False)
