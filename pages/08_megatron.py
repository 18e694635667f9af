"""Lesson 8: Megatron-BERT and model parallelism (layout and widgets only; core computes)."""

import streamlit as st

from core.figures import megatron as mfig
from core.megatron import calculators as calc
from core.megatron import formulas as fm
from core.megatron import story
from core.widgets import CHUNKS, MICROBATCHES, SCHEDULE, STAGES
from ui import figures, lesson, tables, widgets
from ui.i18n import t, t_keys
from ui.megatron import demo_result, ln_result, run_demo, train_ln
from ui.widgets import megatron_labels

page = lesson.LessonPage("megatron")


def _tex_text(label: str) -> str:
    """A translated label as LaTeX text (the characters LaTeX treats as commands escaped)."""
    safe = "".join("\\" + c if c in "#$%&_{}" else c for c in label)
    return r"\text{" + safe + "}"


# ---- tensor parallelism, live -----------------------------------------------------------------


@page.widget("demo")
def demo():
    cols = st.columns([2, 1])
    ranks = cols[0].radio(t("megatron.ranks"), [1, 2, 4], index=1, horizontal=True, key="megatron.ranks")
    with lesson.advanced():
        # labels resolved now, in this run's language (format_func may be called outside the run)
        faults = {f: t(f"megatron.fault_{f}") for f in ("none", "crash", "hang")}
        fault = st.selectbox(t("megatron.fault"), list(faults), key="megatron.fault", format_func=faults.get)
        seed = st.number_input(t("megatron.seed"), 0, 10_000, 0, key="megatron.seed")
    if cols[1].button(t("megatron.run"), type="primary", key="megatron.run", icon=":material/play_arrow:"):
        run_demo(int(ranks), fault, int(seed))
    r = demo_result()
    if r is None:
        st.info(t("megatron.demo_hint"))
        return
    if not r.get("ok"):
        _demo_failure(r)
        return
    _demo_summary(r)
    _demo_shards(r)
    _demo_joins(r)
    _demo_log(r)
    _demo_check(r)


def _demo_failure(r: dict) -> None:
    from ui.errors import show_result

    show_result(r)
    if "port" in r:
        st.caption(
            t(
                "megatron.demo_cleanup",
                port=r["port"],
                free=t("megatron.yes") if r.get("port_free") else t("megatron.no"),
            )
        )


def _demo_summary(r: dict) -> None:
    st.success(
        t(
            "megatron.demo_ok",
            n=r["world_size"],
            backend=r["backend"],
            s=r["wall_s"],
            worst=max(r["max_abs_diff"].values()),
        ),
        icon=":material/check_circle:",
    )
    m = st.columns(4)
    m[0].metric(t("megatron.m_forward"), r["all_reduces"]["forward"])
    m[1].metric(t("megatron.m_backward"), r["all_reduces"]["backward"])
    m[2].metric(t("megatron.m_bytes"), f"{r['all_reduce_bytes']:,}")
    m[3].metric(t("megatron.m_time"), f"{r['wall_s']:.1f} s")
    st.caption(t("megatron.devices", devices=", ".join(r["devices"])))


def _demo_shards(r: dict) -> None:
    st.subheader(t("megatron.shards_title"), anchor=False)
    widgets.draw("parallel-split", "megatron.shards", shards=r["shards"])
    st.caption(t("megatron.shards_caption"))


def _demo_joins(r: dict) -> None:
    st.subheader(t("megatron.joins_title"), anchor=False)
    jcols = st.columns(2)
    for col, site in zip(jcols, ("attention.g", "mlp.g")):
        with col:
            figures.show(
                mfig.joins_figure(
                    r["joins"],
                    site,
                    labels={**megatron_labels("rank", "reduced"), "title": t(f"megatron.join_{site.split('.')[0]}")},
                ),
                key=f"megatron.join.{site}",
                filename=f"partials-{site}",
            )
    st.caption(t("megatron.joins_caption"))


def _demo_log(r: dict) -> None:
    st.subheader(t("megatron.log_title"), anchor=False)
    tables.show(
        [
            {
                "step": i + 1,
                "op": c["op"],
                "operator": c["operator"],
                "direction": t(f"megatron.dir_{c['direction']}"),
                "site": c["site"],
                "shape": str(c["shape"]),
                "bytes": c["bytes"],
                "skipped": t("megatron.yes") if c["skipped"] else "",
            }
            for i, c in enumerate(r["collectives"])
        ],
        values={"op": {"all_reduce": "all-reduce"}},
    )
    if r["world_size"] == 1:
        st.caption(t("megatron.log_one_rank"))


def _demo_check(r: dict) -> None:
    st.subheader(t("megatron.check_title"), anchor=False)
    figures.show(
        mfig.diff_figure(
            r["max_abs_diff"],
            r["tolerance"],
            labels=megatron_labels("tolerance", x="diff_x"),
        ),
        key="megatron.diffs",
        filename="parallel-vs-unsharded",
        data=[{"tensor": k, "max_abs_diff": v} for k, v in r["max_abs_diff"].items()],
    )
    e = r["embedding"]
    st.caption(
        t(
            "megatron.embedding_check",
            ranges=", ".join(f"{a}–{b - 1}" for a, b in e["vocab_ranges"]),
            tokens=", ".join(map(str, e["tokens_per_rank"])),
            diff=max(e["max_abs_diff"].values()),
        )
    )


# ---- pipeline ---------------------------------------------------------------------------------


def _param_slider(col, symbol: str, param, **kw):
    """A slider over a core.widgets Param, labelled by its symbol in the papers (key megatron.<symbol>)."""
    return col.slider(
        symbol,
        param.minimum,
        param.maximum,
        param.default,
        key=f"megatron.{symbol}",
        help=t(f"megatron.{symbol}_help"),
        **kw,
    )


@page.widget("pipeline")
def pipeline():
    c = st.columns(4)
    kinds = {k: t(f"megatron.sched_{k}") for k in SCHEDULE.choices}
    kind = c[0].selectbox(
        t("megatron.schedule"),
        list(kinds),
        index=list(kinds).index(SCHEDULE.default),
        key="megatron.schedule",
        format_func=kinds.get,
    )
    p = _param_slider(c[1], "p", STAGES)
    m = _param_slider(c[2], "m", MICROBATCHES)
    v = _param_slider(c[3], "v", CHUNKS, disabled=kind != "interleaved")
    widgets.draw("pipeline-schedule", "megatron.timeline", schedule=kind, stages=p, microbatches=m, chunks=v)


# ---- data parallel and ZeRO -------------------------------------------------------------------


@page.widget("zero")
def zero():
    c = st.columns(3)
    billions = c[0].number_input(t("megatron.zero_params"), 0.001, 10_000.0, 7.5, step=0.5, key="megatron.zero_params")
    dp = c[1].select_slider(
        "N_d", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], 64, key="megatron.zero_dp", help=t("megatron.nd_help")
    )
    stage = c[2].radio(t("megatron.zero_stage"), [0, 1, 2, 3], index=3, horizontal=True, key="megatron.zero_stage")
    rows = [calc.zero_memory(billions * 1e9, dp, s) for s in range(4)]
    figures.show(
        mfig.zero_figure(
            rows,
            stage,
            labels={
                **megatron_labels("parameters_fp16", "gradients_fp16", "optimizer_states", y="gb_per_device"),
                **t_keys("megatron.", *(f"stage{s}" for s in range(4))),
                "title": t("megatron.zero_title", b=billions, nd=dp),
            },
        ),
        key="megatron.zero",
        filename="zero-memory",
        data=[
            {
                "stage": r["inputs"]["zero_stage"],
                "formula": r["formula"],
                "gb_per_device": r["gb_per_device"],
                **r["breakdown_bytes"],
            }
            for r in rows
        ],
    )
    st.latex(fm.latex(fm.ZERO[stage], lhs=_tex_text(t("megatron.lhs_bytes"))))
    st.caption(t("megatron.zero_caption", gb=rows[stage]["gb_per_device"]))
    shown = min(dp, 8)
    holdings = [h for h in calc.zero_holdings(dp, stage) if h["device"] < shown]
    figures.show(
        mfig.holdings_figure(
            holdings,
            labels={
                **megatron_labels("device", "parameters_fp16", "gradients_fp16", "optimizer_states", x="share"),
                "title": t("megatron.holdings_title", shown=shown, nd=dp),
            },
        ),
        key="megatron.holdings",
        filename="zero-holdings",
        data=holdings,
    )


# ---- calculators ------------------------------------------------------------------------------


def _number_row(prefix: str, *fields: tuple) -> list:
    """One row of number inputs, one column each; a field is (name, label, min, max, default),
    keyed megatron.<prefix>_<name>."""
    cols = st.columns(len(fields))
    return [
        col.number_input(label, low, high, value, key=f"megatron.{prefix}_{name}")
        for col, (name, label, low, high, value) in zip(cols, fields)
    ]


# the largest value each symbol of the papers' equations takes in the calculators
_SYMBOL_MAX = {
    "l": 1000,
    "h": 200_000,
    "V": 1_000_000,
    "s": 1_000_000,
    "b": 10_000,
    "a": 10_000,
    "L": 10_000,
    "t": 1024,
}


def _symbol_row(prefix: str, **defaults: int) -> list:
    """A number input per symbol (l, h, V, s, ...), labelled by the symbol, from 1 to its maximum."""
    return _number_row(prefix, *[(name, name, 1, _SYMBOL_MAX[name], value) for name, value in defaults.items()])


@page.widget("calculators")
def calculators():
    tabs = st.tabs([t("megatron.tab_params"), t("megatron.tab_flops"), t("megatron.tab_act")])
    with tabs[0]:
        st.latex(fm.latex(fm.PARAMS))
        st.caption(t("megatron.cite_eq2"))
        l_, h_, V_, s_ = _symbol_row("c", l=128, h=25600, V=51200, s=2048)
        r = calc.params(l_, h_, V_, s_)
        st.metric(t("megatron.params_result"), f"{r['params'] / 1e9:,.2f} B")
        st.caption(t("megatron.table1_caption"))
        tables.show(
            [
                {
                    **dict(zip(story.NARAYANAN_TABLE1_COLUMNS, row)),
                    "eq2_params_b": round(
                        calc.params(row[3], row[2], story.NARAYANAN_VOCAB, story.NARAYANAN_SEQ)["params"] / 1e9, 2
                    ),
                }
                for row in story.NARAYANAN_TABLE1
            ]
        )
    with tabs[1]:
        st.latex(fm.latex(fm.FLOPS) + r"\qquad " + fm.latex(fm.TRAINING_SECONDS, lhs=_tex_text(t("megatron.lhs_time"))))
        st.caption(t("megatron.cite_eq34"))
        l_, h_, V_, s_ = _symbol_row("f", l=96, h=12288, V=51200, s=2048)
        B_, T_, n_, X_ = _number_row(
            "f",
            ("B", "B", 1, 1_000_000, 1536),
            ("T", t("megatron.tokens_b"), 0.001, 1e6, 300.0),
            ("n", t("megatron.gpus"), 1, 1_000_000, 1024),
            ("X", t("megatron.tflops"), 0.1, 10_000.0, 140.0),
        )
        r = calc.flops(l_, h_, V_, s_, B_, tokens=T_ * 1e9, gpus=n_, tflops=X_)
        k = st.columns(3)
        k[0].metric(t("megatron.flops_result"), f"{r['flops_per_iteration']:.3e}")
        k[1].metric("P", f"{r['training_time']['inputs']['params'] / 1e9:,.1f} B")
        k[2].metric(t("megatron.days"), f"{r['training_time']['days']:,.1f}")
        st.caption(t("megatron.time_caption"))
    with tabs[2]:
        st.latex(fm.latex(fm.ACTIVATIONS[("none", False)], lhs=_tex_text(t("megatron.act_per_layer"))))
        st.caption(t("megatron.cite_korthikanti"))
        s_, b_, h_, a_, L_, t_ = _symbol_row("a", s=2048, b=1, h=12288, a=96, L=96, t=8)
        configs = [("none", False), ("none", True), ("selective", False), ("selective", True), ("full", False)]
        results = [calc.activations(s_, b_, h_, a_, L_, t_, sp, rc) for rc, sp in configs]
        names = [t(f"megatron.act_{rc}{'_sp' if sp else ''}") for rc, sp in configs]
        figures.show(
            mfig.activations_figure(
                results, names, labels={"title": t("megatron.act_title", t_=t_), "y": t("megatron.fig_act_gb")}
            ),
            key="megatron.activations",
            filename="activation-memory",
            data=[
                {
                    "setting": n,
                    "formula": r["formula"],
                    "bytes_per_layer": r["bytes_per_layer"],
                    "gb_total": r["gb_total"],
                }
                for n, r in zip(names, results)
            ],
        )
        st.caption(t("megatron.act_caption"))


# ---- the Megatron-BERT story ------------------------------------------------------------------


@page.widget("bert")
def bert():
    rows = story.bert_table()
    tables.show(
        [
            {**r, "params_eq2": f"{r['params_eq2'] / 1e9:.3f}", "params_exact": f"{r['params_exact'] / 1e9:.3f}"}
            for r in rows
        ],
        [
            "model",
            "params_paper",
            "layers",
            "hidden",
            "heads",
            "head_dim",
            "gpus",
            "params_eq2",
            "params_exact",
            "heldout_ppl",
        ],
    )
    st.caption(t("megatron.table4_caption"))
    table = story.results_table()
    tables.show(table)
    st.caption(t("megatron.table5_caption"))
    columns = ["mnli_m", "qqp", "squad11_f1", "squad20_f1", "race"]
    tasks = {c: t(f"megatron.task_{c}") for c in columns}
    col = st.selectbox(t("megatron.task"), columns, index=4, key="megatron.task", format_func=tasks.get)
    params = {r["model"]: r["params_exact"] for r in rows}
    figures.show(
        mfig.bert_results_figure(
            table, col, params, labels={"title": t(f"megatron.task_{col}"), "x": t("megatron.fig_params_b")}
        ),
        key="megatron.results",
        filename=f"megatron-bert-{col}",
        data=[{"model": r["model"], col: r[col]} for r in table],
    )


@page.widget("ln-order")
def ln_order():
    figures.show(
        mfig.layer_order_figure(labels={**megatron_labels("attn", "ln", "post", "pre"), "mlp": "MLP"}),
        key="megatron.order",
        filename="layer-norm-order",
    )
    with lesson.advanced():
        c = st.columns(3)
        layers = c[0].slider(t("megatron.ln_layers"), 2, 24, 12, key="megatron.ln_layers")
        steps = c[1].slider(t("megatron.ln_steps"), 20, 300, 150, step=10, key="megatron.ln_steps")
        lr = c[2].select_slider(t("megatron.ln_lr"), [3e-4, 1e-3, 3e-3], 1e-3, key="megatron.ln_lr")
    if st.button(t("megatron.ln_run"), key="megatron.ln_run", icon=":material/model_training:"):
        train_ln(int(layers), int(steps), float(lr))
    r = ln_result()
    if r is None:
        st.info(t("megatron.ln_hint"))
        return
    cfg = r["config"]
    figures.show(
        mfig.ln_curves_figure(
            r,
            labels={
                **megatron_labels("post_ln", "pre_ln", "chance", x="step", y="loss"),
                "title": t("megatron.ln_title", layers=cfg["layers"], lr=cfg["lr"]),
            },
        ),
        key="megatron.ln_curves",
        filename="pre-vs-post-ln",
        data=[
            {"step": i + 1, "post_ln": a, "pre_ln": b}
            for i, (a, b) in enumerate(zip(r["curves"]["post_ln"], r["curves"]["pre_ln"]))
        ],
    )
    fin = r["final_loss"]
    fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    st.caption(
        t(
            "megatron.ln_caption",
            post=fmt(fin["post_ln"]),
            pre=fmt(fin["pre_ln"]),
            chance=r["chance_loss"],
            s=r["seconds"],
        )
    )
    # the verdict is read off this run, not assumed: a shallow stack may well favour post-LN
    if fin["post_ln"] is None or (fin["pre_ln"] is not None and fin["pre_ln"] < fin["post_ln"]):
        st.info(t("megatron.ln_verdict_pre"))
    else:
        st.info(t("megatron.ln_verdict_post"))


@page.widget("scaling")
def scaling():
    rows = story.scaling_table()
    figures.show(
        mfig.scaling_figure(
            rows,
            labels={
                "title": t("megatron.scaling_title"),
                "model_parallel": t("megatron.model_parallel"),
                "model_data_parallel": t("megatron.model_data_parallel"),
                "x": "GPUs",
                "y": t("megatron.fig_efficiency"),
            },
        ),
        key="megatron.scaling",
        filename="megatron-weak-scaling",
        data=rows,
    )
    c = st.columns(3)
    c[0].metric(t("megatron.sustained"), f"{story.SUSTAINED_PFLOPS} PFLOP/s")
    c[1].metric(t("megatron.baseline"), f"{story.BASELINE_TFLOPS:.0f} TFLOP/s")
    c[2].metric(t("megatron.efficiency_512"), f"{story.SCALING_EFFICIENCY_512:.0%}")
    tables.show(story.SCALING_CONFIGS)
    st.caption(t("megatron.scaling_caption"))


page.render()
