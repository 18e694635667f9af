"""The hand-sized worked examples of lessons 3, 4 and 8 as small tables (numbers from core.worked)."""

from __future__ import annotations

import streamlit as st

from ui import lesson
from ui.i18n import t


def _num(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if abs(x - round(x)) > 5e-10 else f"{round(x):d}"


def _vec(v) -> str:
    return "(" + ", ".join(_num(x) for x in v) + ")"


def _mat(m) -> str:
    return "(" + "; ".join(", ".join(_num(x) for x in row) for row in m) + ")"


@st.cache_data(show_spinner=False)
def _example(name: str):
    from core.worked import example

    return example(name)


def _bahdanau() -> None:
    ex = _example("bahdanau")
    rows = [
        {
            t("worked.input"): ex.inputs[j],
            t("worked.sym_h"): _vec(ex.h[j]),
            t("worked.sym_hidden"): _vec(ex.hidden[j]),
            t("worked.sym_e"): _num(ex.e[j]),
            t("worked.sym_alpha"): _num(ex.alpha[j]),
        }
        for j in range(len(ex.inputs))
    ]
    rows.append(
        {
            t("worked.input"): t("worked.sym_c"),
            t("worked.sym_h"): _vec(ex.c),
            t("worked.sym_hidden"): "",
            t("worked.sym_e"): "",
            t("worked.sym_alpha"): _num(sum(ex.alpha)),
        }
    )
    lesson.table(rows, hide_index=True)
    st.caption(t("worked.bahdanau_caption", s=_vec(ex.s_prev), v=_vec(ex.v_a)))


def _attention() -> None:
    ex = _example("attention")
    rows = [
        {
            t("worked.token"): tok,
            t("worked.sym_q"): _vec(ex.Q[i]),
            t("worked.sym_k"): _vec(ex.K[i]),
            t("worked.sym_v"): _vec(ex.V[i]),
            t("worked.sym_dots"): _vec(ex.dots[i]),
            t("worked.sym_scaled"): _vec(ex.scaled[i]),
            t("worked.sym_weights"): _vec(ex.weights[i]),
            t("worked.sym_z"): _vec(ex.Z[i]),
        }
        for i, tok in enumerate(ex.tokens)
    ]
    lesson.table(rows, hide_index=True)
    st.caption(t("worked.attention_caption", d_k=ex.d_k))


def _megatron() -> None:
    ex = _example("megatron")
    rows = [
        {
            t("worked.rank"): str(i + 1),
            t("worked.sym_A"): _mat(ex.A_parts[i]),
            t("worked.sym_B"): _mat(ex.B_parts[i]),
            t("worked.sym_Y"): _vec(ex.Y_parts[i][0]),
            t("worked.sym_Z"): _vec(ex.Z_parts[i][0]),
        }
        for i in range(2)
    ]
    rows.append(
        {
            t("worked.rank"): t("worked.after_reduce"),
            t("worked.sym_A"): "",
            t("worked.sym_B"): "",
            t("worked.sym_Y"): "",
            t("worked.sym_Z"): _vec(ex.Z[0]),
        }
    )
    rows.append(
        {
            t("worked.rank"): t("worked.single"),
            t("worked.sym_A"): _mat(ex.A),
            t("worked.sym_B"): _mat(ex.B),
            t("worked.sym_Y"): _vec(ex.Y_full[0]),
            t("worked.sym_Z"): _vec(ex.Z_full[0]),
        }
    )
    lesson.table(rows, hide_index=True)
    st.caption(t("worked.megatron_caption", x=_vec(ex.X[0])))


RENDER = {"bahdanau": _bahdanau, "attention": _attention, "megatron": _megatron}


def worked_example(args: dict, key: str) -> None:
    """The ```widget worked-example``` block: ``example: bahdanau|attention|megatron``."""
    with st.container(border=True):
        st.markdown(f"**{t('worked.title')}**")
        RENDER[args["example"]]()
        st.caption(t("worked.caption"))
